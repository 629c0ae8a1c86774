import type { Level } from '../../contracts/levels.ts';

/**
 * A stored alarm (history record). `batch` and `metric` are set for compressed alarms (0 and '' for
 * others). Workflows keep a snapshot of the history they were generated from.
 */
export interface HistoryRecord {
  id: number;
  uuid: string;
  task_id: number;
  batch: number;
  metric: string;
  level: Level;
  ctn: Record<string, unknown>;
  notice_time: number;
  created_at: number;
}
