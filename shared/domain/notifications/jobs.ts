import { nowMs } from '../../clock.ts';
import { findLoggedRuns, type LoggedRun, pageNotifyLogOfTask } from './log.ts';
import {
  type AttemptRecord,
  getJobsWithAttempts,
  type JobRecord,
  listRecentJobAttemptsOfTask,
} from './repository.ts';

/**
 * A job's record wherever its runs were recorded: its item (AP-N8: runs that were retried, replayed
 * or left pending) and its first run in the task's notification log (AP-N10: a first run that settled
 * it). A job has one or the other; both only when its logged first run was followed by a copy that
 * ran again. The record is the item's state with every attempt of both, oldest first.
 */
export async function findJobs(
  taskId: number,
  jobIds: string[],
  window: { fromMs: number; toMs: number },
): Promise<JobRecord[]> {
  if (jobIds.length === 0) return [];
  const [items, logged] = await Promise.all([
    getJobsWithAttempts(jobIds),
    findLoggedRuns(taskId, window.fromMs, window.toMs, jobIds),
  ]);
  const byId = new Map(items.map((j) => [j.job_id, j]));
  return jobIds
    .filter((id) => byId.has(id) || logged.has(id))
    .map((id) => recordOf(byId.get(id), logged.get(id)));
}

function recordOf(item: JobRecord | undefined, run: LoggedRun | undefined): JobRecord {
  const attempts = [...(run?.attempts ?? []), ...(item?.attempts ?? [])].sort(
    (a, b) => a.at_ms - b.at_ms || a.seq - b.seq,
  );
  if (item)
    return {
      ...item,
      ...(run?.message ? { message: run.message } : {}),
      ...(run?.oncall && !item.oncall ? { oncall: run.oncall } : {}),
      attempts,
    };
  const logged = run as LoggedRun;
  const last = Math.max(0, ...attempts.map((a) => a.at));
  return {
    job_id: logged.job_id,
    task_id: logged.task_id,
    status: logged.status,
    done: [],
    runs: 1,
    updated_at: last,
    channel: logged.channel,
    scene: logged.scene,
    ...(logged.message ? { message: logged.message } : {}),
    ...(logged.oncall ? { oncall: logged.oncall } : {}),
    attempts,
  };
}

/**
 * AP-N4: a task's most recent attempts, newest first: those of its job items (gsi1, one Query per
 * shard) and those of its notification log (day by day back from `atMs` until `limit`, at most the
 * 30 days it keeps), merged.
 */
export async function listRecentAttemptsOfTask(
  taskId: number,
  limit = 50,
  atMs = nowMs(),
): Promise<AttemptRecord[]> {
  const [items, logged] = await Promise.all([
    listRecentJobAttemptsOfTask(taskId, limit),
    pageNotifyLogOfTask(taskId, limit, atMs),
  ]);
  return [...items, ...logged.rows.map((r) => r.attempt)]
    .sort((a, b) => b.at_ms - a.at_ms || b.seq - a.seq)
    .slice(0, limit);
}
