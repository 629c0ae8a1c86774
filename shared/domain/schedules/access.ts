import { type Permission, loadReader, type Reader } from '../directory/readers.ts';
import { ForbiddenError, NotFoundError } from '../errors.ts';
import type { Schedule } from './model.ts';
import { getSchedule } from './repository.ts';

/**
 * Who may see and change a schedule, as for tasks: a super administrator (role 9) everything; anyone
 * else the schedules whose `ro` or `rw` list names them, and changes those whose `rw` list does.
 */
export function accessOf(reader: Reader, permission: Permission): 'rw' | 'ro' | undefined {
  if (reader.admin || permission.rw.includes(reader.user.uid)) return 'rw';
  return permission.ro.includes(reader.user.uid) ? 'ro' : undefined;
}

/**
 * The schedule, when `uid` may read it (or change it, `write`): 404 for an unknown user or schedule,
 * 403 otherwise.
 */
export async function scheduleFor(
  uid: number,
  id: number,
  access: 'read' | 'write',
  deps = { loadReader, getSchedule },
): Promise<Schedule> {
  const [reader, schedule] = await Promise.all([deps.loadReader(uid), deps.getSchedule(id, true)]);
  if (!schedule) throw new NotFoundError(`schedule [${id}] not found`);
  const held = accessOf(reader, schedule.permission);
  if (!held) throw new ForbiddenError(`user [${uid}] has no permission on schedule [${id}]`);
  if (access === 'write' && held !== 'rw')
    throw new ForbiddenError(`user [${uid}] has read-only permission on schedule [${id}]`);
  return schedule;
}
