import type { TaskStatusChanged } from '#shared/domain/tasks/responses.ts';
import { changeTaskStatus, type StatusAction } from '#shared/domain/tasks/reader.ts';
import { pauseSchema } from '#shared/domain/tasks/schemas.ts';
import { ID_SCHEMA } from '#shared/domain/validation.ts';
import { httpHandler } from '#shared/http/handler.ts';

const schema = {
  type: 'object',
  required: ['uid', 'task_id', 'action'],
  properties: {
    uid: ID_SCHEMA,
    task_id: ID_SCHEMA,
    action: { type: 'string', enum: ['stop', 'start', 'pause'] },
    time: pauseSchema.properties.time,
  },
};

/** PUT /alarmtask/status {uid, task_id, action: stop|start|pause, time}: as a user with rw permission. */
export const handler = httpHandler<
  { uid: number; task_id: number; action: StatusAction; time?: number },
  TaskStatusChanged
>({ auth: 'reader', grant: 'operate', input: 'json', schema }, (input) => changeTaskStatus(input));
