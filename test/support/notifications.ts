import type { AttemptRecord } from '../../shared/domain/notifications/repository.ts';
import { listRecentAttemptsOfTask } from '../../shared/domain/notifications/jobs.ts';
import { serviceNow } from './client.ts';

/**
 * A task's most recent notification attempts, newest first, as the service sees them: the
 * notification log is read day by day back from the service's now, which other suites move ahead of
 * this process's clock.
 */
export async function recentNotificationAttempts(taskId: number, limit = 50): Promise<AttemptRecord[]> {
  return listRecentAttemptsOfTask(taskId, limit, (await serviceNow()) * 1000 + 60_000);
}
