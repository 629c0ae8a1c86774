import type { OverrideSaved } from '#shared/domain/schedules/responses.ts';
import { addOverrideSchema } from '#shared/domain/schedules/schemas.ts';
import { addOverride } from '#shared/domain/schedules/service.ts';
import { httpHandler } from '#shared/http/handler.ts';

/** POST /schedule/override {uid, id, start, end, user}: `user` on call over [start, end), above every layer. */
export const handler = httpHandler<
  { uid: number; id: number; start: number; end: number; user: number },
  OverrideSaved
>({ auth: 'reader', grant: 'operate', input: 'json', schema: addOverrideSchema }, (input) =>
  addOverride(input),
);
