import { ValidationError } from '../errors.ts';
import { sealTaskRobots } from '../channels/robots.ts';
import { TASK_RUNNING, type Task, type TaskConfig } from '../tasks/model.ts';
import { configFingerprint, configOf } from '../tasks/normalize.ts';
import { updatedConfig, updatedFieldsConfig } from '../tasks/service.ts';

/**
 * The configurations a replay decides with: the saved one, and the one asked about, derived from the
 * request as the save would derive it (`PUT /alarmtask/update` for a whole configuration,
 * `updatefields` for one with `filter_fields`), validated the same way (errors name `config.<field>`).
 */

/**
 * The configuration `config` asks about (robots sealed, as stored), and its fingerprint: none asks
 * about the saved one.
 */
export function editedConfig(
  task: Task,
  config: Record<string, unknown> | undefined,
): { config: TaskConfig; fingerprint: string } {
  let edited: TaskConfig;
  try {
    edited = !config
      ? configOf(task)
      : Array.isArray(config.filter_fields)
        ? updatedFieldsConfig(task, config)
        : updatedConfig(task, config);
  } catch (err) {
    if (err instanceof ValidationError)
      throw new ValidationError(err.errors.map((e) => ({ ...e, field: `config.${e.field}` })));
    throw err;
  }
  return { config: sealTaskRobots(edited), fingerprint: configFingerprint(edited) };
}

/**
 * The task as a replay runs it: with `config`, running (alarms in the window were accepted, so they
 * are processed whatever the task's status is now, and their delayed work is not held).
 */
export function replayTask(task: Task, config: TaskConfig = configOf(task)): Task {
  const { paused_until: _paused, ...rest } = task;
  return { ...rest, ...config, status: TASK_RUNNING };
}
