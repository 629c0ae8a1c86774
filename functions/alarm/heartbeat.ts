import { heartbeatHandler } from '#shared/http/intake.ts';

/** GET|POST /alarm/heartbeat: a task's ping (its dead man's switch, API guide §8.5). */
export const handler = heartbeatHandler;
