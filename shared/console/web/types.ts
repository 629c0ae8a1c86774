/** The shapes the console reads (the API's `data`; see each route's handler and GET /openapi.json). */

export interface Named {
  id: number;
  name: string;
}

export interface Profile {
  user: { uid: number; username: string; role: number; department?: string; email?: string };
  permission: { role: number; read: number[]; write: number[] };
}

export interface TaskSummary {
  id: number;
  name: string;
  pinyin: string;
  status: number;
  paused_until?: number;
  department: Named;
  tags: Named[];
  created_by: number;
  created_at: number;
  updated_at: number;
  access: 'admin' | 'rw' | 'ro';
}

export interface TaskList {
  tasks: TaskSummary[];
  next_cursor: string;
}

export interface Counts {
  task_id: number;
  pending: number;
  processing: number;
  done: number;
  closed: number;
  total: number;
}

// biome-ignore lint/suspicious/noExplicitAny: the task detail is rendered generically, section by section
export type TaskDetail = Record<string, any> & {
  id: number;
  name: string;
  status: number;
  paused_until?: number;
  flag_save_db: number;
  department?: Named;
};

export interface AlarmView {
  uuid: string;
  history_id: number;
  created_at: number;
  level: number;
  level_name: string;
  reported_level: number;
  outcome: string;
  decision: string;
  metric?: string;
  batch?: number;
  k?: number;
  upgrades: number;
  stored: boolean;
  notice_time?: number;
  ctn?: Record<string, unknown>;
}

export interface AlarmList {
  alarms: AlarmView[];
  next_cursor: string;
  window: { from: number; to: number };
}

export interface Stage {
  stage: string;
  result: string;
  text: string;
  [key: string]: unknown;
}

export interface Attempt {
  attempt: number;
  outcome: string;
  at: number;
  at_ms: number;
  duration_ms: number;
  target?: string;
  status?: number;
  code?: string;
  error?: string;
  detail?: string;
}

export interface Trace {
  alarm: AlarmView & {
    task: Named;
    reported_at?: number;
    processed_at?: number;
    expires_at?: number;
  };
  summary: string;
  /** What the deliveries came to, per channel. */
  delivery: {
    result: string;
    text: string;
    channels: {
      channel: string;
      result: string;
      delivered: number;
      failed: number;
      skipped: number;
      pending: number;
    }[];
  };
  configuration: { version_then: number | null; version_now: number; changed: boolean; note: string };
  stages: Stage[];
  receivers?: {
    text: string;
    sets: { set: string; text: string }[];
    alarm_groups?: Named[];
    people?: Record<string, unknown>;
    robots?: { set: string; channel: string; robots: string[] }[];
    override?: Record<string, unknown>;
  };
  notifications: {
    job_id: string;
    scene: string;
    channel: string;
    status: string;
    targets: string[];
    message?: { format?: number; title?: string; text: string; truncated?: boolean };
    attempts: Attempt[];
  }[];
  webhooks: { event_id: string; event: string; type: string; attempts: Attempt[] }[];
  workflow: Workflow | null;
}

export interface Person {
  uid: number;
  username: string;
}

export interface Pipeline {
  status: number;
  remark: string;
  props: { assignto?: Person[]; remind?: { interval: number; status: number } } & Record<string, unknown>;
  created_by: number;
  created_at: number;
  creator: Person | null;
}

export interface Workflow {
  id: number;
  task_id: number;
  metric: string;
  history_id: number;
  status: number;
  created_at: number;
  updated_at: number;
  claimer?: Person | null;
  assignees?: Person[];
  pipelines?: Pipeline[];
  task: Named;
  history?: {
    id: number;
    uuid: string;
    batch?: number;
    metric?: string;
    notice_time: number;
    level: number;
    ctn: string;
    created_at: number;
  };
}

export interface WorkflowList {
  workflows: Workflow[];
  next_cursor: string;
}

export interface Delivery {
  kind: 'webhook' | 'notify';
  id: string;
  event?: string;
  type?: string;
  scene?: string;
  channel: string;
  target?: string;
  attempt: number;
  outcome: string;
  status?: number;
  code?: string;
  error?: string;
  duration_ms: number;
  at: number;
  at_ms: number;
}

export interface DeliveryList {
  deliveries: Delivery[];
  next_cursor: string;
}

export interface DeadLetter {
  message_id: string;
  queue: string;
  kind: string;
  task_id?: number;
  event_id?: string;
  event?: string;
  type?: string;
  events?: { event_id: string; event?: string; type?: string }[];
  job_id?: string;
  scene?: string;
  channel?: string;
  uuid?: string;
  ref?: string;
  due_at?: number;
  receive_count?: number;
  sent_at?: number;
  attempts: number;
  first_failure_at?: number;
  last_failure_at?: number;
  reason?: {
    outcome: string;
    attempt: number;
    status?: number;
    code?: string;
    error?: string;
    target?: string;
  };
}

export interface DeadLetterList {
  queue: string;
  dead_letters: DeadLetter[];
  more: boolean;
  scanned: number;
  note?: string;
}

export interface Stats {
  window: { from: number; to: number };
  minutes: { minute: number; levels: number[]; outcomes: Record<string, number> }[];
  complete: boolean;
}
