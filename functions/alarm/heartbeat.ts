import { heartbeatHandler } from '#shared/http/intake.ts';

/** GET|POST /alarm/heartbeat: a task's ping (its dead man's switch, README "Heartbeat"). */
export const handler = heartbeatHandler;
