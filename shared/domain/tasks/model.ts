/**
 * Alarm task types (API guide §5.2-§5.5, §6, request form as stored) and pure rules. No I/O here (the web
 * console imports its lists too). The nouns a task shares with the queues' messages (levels, receivers,
 * conditions) are on the contracts floor (shared/contracts).
 */
import type { NotifyScene } from '../../contracts/messages.ts';
import type { Level } from '../../contracts/levels.ts';
import type { Condition, ReceiverConfig, Rule } from '../../contracts/receivers.ts';

export interface Reminder {
  mode: 'once' | 'cycle';
  status: 0 | 1;
  interval: number;
  reuse_receiver: 0 | 1;
  receiver?: ReceiverConfig;
}

export interface WorkflowConfig {
  enable: boolean;
  reminds?: Reminder[];
}

export interface FilterConfig {
  enable: boolean;
  mode?: 1 | 2;
  conditions?: { rule: Rule[]; level: number }[];
  not_match?: 0 | 1;
}

export interface UpgradeStrategy {
  interval: number;
  count: number;
  level: Level;
  reuse_receiver: 0 | 1;
  receiver?: ReceiverConfig;
}

export interface UpgradeConfig {
  enable: boolean;
  strategies?: UpgradeStrategy[];
}

export interface CompressConfig {
  enable: boolean;
  /** 1 condition, 3 content, 4 full. */
  method?: 1 | 3 | 4;
  conditions?: Condition[];
  /** 1 cycle, 2 delay, 3 cycle-count, 4 count-cycle, 5 count. */
  strategy?: 1 | 2 | 3 | 4 | 5;
  strategy_cycle?: number;
  strategy_count?: number;
  /** 1 notify as uncompressed, 0 store only. */
  not_match?: 0 | 1;
}

export interface RecoveryConfig {
  enable: boolean;
  /** 1 condition, 2 delay. */
  mode?: 1 | 2;
  conditions?: Condition[];
  delay_interval?: number;
}

export const TEMPLATE_SCENES = ['compressed', 'not_compress', 'upgrade', 'recovery'] as const;
/** Every scene a notification is sent in: the templates' four, then the workflow's. */
export const NOTIFY_SCENES: readonly NotifyScene[] = [
  ...TEMPLATE_SCENES,
  'generated',
  'claim',
  'assign',
  'processed',
  'reactive',
  'close',
  'remind_pending',
  'remind_processing',
];
export type TemplateScene = (typeof TEMPLATE_SCENES)[number];
export interface TemplateEntry {
  format?: 1 | 2 | 3 | 4;
  template?: string;
}
export type TemplateScenes = Partial<Record<TemplateScene, Partial<Record<string, TemplateEntry>>>>;

export interface TemplateConfig {
  template_id?: number;
  udf?: TemplateScenes;
}

/** The configuration a client sends (create/update) and we store. */
export interface TaskConfig {
  name: string;
  department_id: number;
  flag_save_db: 0 | 1;
  task_tags: number[];
  permission: { rw: number[]; ro: number[] };
  receiver: ReceiverConfig;
  workflow: WorkflowConfig;
  filter: FilterConfig;
  upgrade: UpgradeConfig;
  compress: CompressConfig;
  recovery: RecoveryConfig;
  template: TemplateConfig;
}

export type TaskStatus = 0 | 1 | 2;
export const TASK_STOPPED = 0;
export const TASK_RUNNING = 1;
export const TASK_PAUSED = 2;

export interface Task extends TaskConfig {
  id: number;
  pinyin: string;
  token: string;
  secret: string;
  /**
   * The token and the secret before their last rotation (PUT /alarmtask/credentials), still accepted
   * until the stated Unix second (the overlap). Absent once none was rotated, or the overlap was 0.
   */
  token_previous?: string;
  token_previous_until?: number;
  secret_previous?: string;
  secret_previous_until?: number;
  status: TaskStatus;
  /** Unix seconds when a pause ends (status 2 only). */
  paused_until?: number;
  /** Alarms per second; the deployment default when absent. */
  rate_limit?: number;
  /**
   * SHA-256 (hex) of the task's intake token, a long-lived credential for monitors that cannot sign
   * requests (API guide §3.4); absent until one is issued.
   */
  intake_hash?: string;
  /**
   * Whether the monitor adapters take the original system's fixed signature (`timestamp` + `sign`
   * in the query, no time window). Off unless the task turns it on: such a signature never expires,
   * and any report signature ever sent would otherwise work on the adapters forever.
   */
  intake_fixed_sign?: boolean;
  /** Dead man's switch: an alarm of `level` when no alarm or ping came for `interval` minutes. */
  heartbeat?: { interval: number; level: Level; since: number };
  /** Days its processed alarms (records and log) are kept; the deployment default when absent. */
  alarm_retention_days?: number;
  created_by: number;
  created_at: number;
  updated_at: number;
  /** Optimistic-concurrency version, incremented by every write. */
  version: number;
  /**
   * The version the configuration (store, update, updatefields) was last saved at, and when: a status
   * change or a setting moves `version` and `updated_at`, not these. Absent on a task whose
   * configuration was last saved before they were kept.
   */
  config_version?: number;
  config_saved_at?: number;
}

/** A paused task whose time has passed is running (API guide §5.9). */
export function effectiveStatus(task: Pick<Task, 'status' | 'paused_until'>, now: number): TaskStatus {
  if (task.status === TASK_PAUSED && task.paused_until !== undefined && task.paused_until <= now) {
    return TASK_RUNNING;
  }
  return task.status;
}

/** Condition operators (API guide §6). `isset`, `not-isset` and `eq-self` take no threshold. */
export const OPERATORS = [
  'eq-self',
  'eq',
  'neq',
  'gt',
  'gte',
  'lt',
  'lte',
  'in',
  'not-in',
  'contain',
  'not-contain',
  'isset',
  'not-isset',
] as const;
export type Operator = (typeof OPERATORS)[number];
export const OPERATORS_WITHOUT_THRESHOLD: readonly Operator[] = ['eq-self', 'isset', 'not-isset'];
