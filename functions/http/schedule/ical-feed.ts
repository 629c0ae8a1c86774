import { icalFeed } from '#shared/domain/schedules/answers.ts';
import { icalFeedSchema } from '#shared/domain/schedules/schemas.ts';
import { textResponse } from '#shared/http/envelope.ts';
import { httpHandler } from '#shared/http/handler.ts';

/**
 * GET /schedule/ical.ics?id=&key=: the schedule's final shifts for 90 days as an iCalendar feed,
 * authenticated by the feed key alone (calendar clients cannot sign requests).
 */
export const handler = httpHandler<{ id: number; key: string }, unknown>(
  { auth: 'none', input: 'query', schema: icalFeedSchema, rawResponse: true },
  async (input) =>
    textResponse((await icalFeed(input)).calendar, 'text/calendar; charset=utf-8', {
      'cache-control': 'private, max-age=300',
      'content-disposition': `inline; filename="schedule-${input.id}.ics"`,
    }),
);
