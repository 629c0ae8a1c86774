import { icalFeed } from '#shared/domain/schedules/answers.ts';
import { icalFeedSchema } from '#shared/domain/schedules/schemas.ts';
import { textResponse } from '#shared/http/envelope.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { anyone } from '#shared/http/auth/public.ts';
import { queryInput } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/schedule/ical-feed.ts';

/**
 * GET /schedule/ical.ics?id=&key=: the schedule's final shifts for 90 days as an iCalendar feed,
 * authenticated by the feed key alone (calendar clients cannot sign requests).
 */
export const handler = httpHandler<{ id: number; key: string }, unknown>(
  { auth: anyone, input: queryInput, schema: icalFeedSchema, validate, rawResponse: true },
  async (input) =>
    textResponse((await icalFeed(input)).calendar, 'text/calendar; charset=utf-8', {
      'cache-control': 'private, max-age=300',
      'content-disposition': `inline; filename="schedule-${input.id}.ics"`,
    }),
);
