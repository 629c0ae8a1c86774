/**
 * What the alarm task routes answer with (the envelope's `data`): the types the use cases return and
 * the OpenAPI document describes (npm run gen:openapi).
 */
import type { AlarmGroup, Person, SummaryPerson } from '../directory/model.ts';
import type { Gap, OncallChannel, OncallReceiver, Source } from '../schedules/model.ts';
import type {
  CompressConfig,
  FilterConfig,
  RecoveryConfig,
  Reminder,
  TaskStatus,
  TemplateScene,
  TemplateScenes,
  UpgradeStrategy,
} from './model.ts';
import type { Condition } from '../../contracts/receivers.ts';

/** GET /alarmtask/oncall: who the task pages over the coming days, per receiver naming a schedule. */
export interface TaskOncall {
  task_id: number;
  from: number;
  to: number;
  receivers: {
    /** Where the receiver sits in the configuration (`receiver`, `receiver.dispatch.0.receiver`, ...). */
    path: string;
    schedule: NamedRef;
    channels: OncallChannel[];
    /** Who the schedule has on call now (the first shift's people). */
    on_call_now: SummaryPerson[];
    /** The schedule's final shifts over the window (adjacent equal ones merged). */
    shifts: { start: number; end: number; uids: number[]; source: Source }[];
    gaps: Gap[];
    coverage_pct: number;
  }[];
}

/** An id and a name (a department, a tag, a task). */
export interface NamedRef {
  id: number;
  name: string;
}

/** POST /alarmtask/store, PUT /alarmtask/update and /alarmtask/updatefields: the task as saved. */
export interface TaskStored {
  task: {
    id: number;
    name: string;
    /** Signs the task's alarm reports. */
    token: string;
    /** Signs the task's management requests. */
    secret: string;
    department_id: number;
    status: TaskStatus;
    created_by: number;
    created_at: number;
    department: NamedRef;
    creator: SummaryPerson;
  };
  /** Receivers without a phone number (they get no SMS or call). */
  nullPhoneUsers: Person[];
}

/** A robot of a robot channel. */
export interface RobotView {
  webhook: string;
  secret: string;
}

/** The channels of a receiver, each user channel as the people it names. */
export interface ChannelsView {
  sms: SummaryPerson[];
  email: SummaryPerson[];
  phone: SummaryPerson[];
  dingworker: SummaryPerson[];
  yachworker: SummaryPerson[];
  /** Present only when configured. */
  wechat?: SummaryPerson[];
  dinggroup: RobotView[];
  yachgroup: RobotView[];
  webhook: { url: string };
}

/** An alarm group a receiver names. */
export interface AlarmGroupView {
  id: number;
  name: string;
  remark: string;
  receiver: AlarmGroup['receiver'];
}

/** A receiver with its groups and people expanded. */
export interface ReceiverView {
  alarmgroup: AlarmGroupView[];
  channels: ChannelsView;
  /** Schedules whose on-call people are paged, each on its channels (present when there are any). */
  oncall?: OncallReceiver[];
  dispatch: {
    conditions: Condition[];
    receiver: { alarmgroup: AlarmGroupView[]; channels: ChannelsView; oncall?: OncallReceiver[] };
  }[];
  /** 1 lazy, 2 non-lazy. */
  mode: 1 | 2;
}

/** A module turned off: `enable: false` and whatever else was sent with it, kept as sent. */
export interface DisabledModule {
  enable: false;
  [field: string]: unknown;
}

export type ReminderView = Omit<Reminder, 'receiver'> & { receiver?: ReceiverView };
export type UpgradeStrategyView = Omit<UpgradeStrategy, 'receiver'> & { receiver?: ReceiverView };

/** The workflow module, its reminders' receivers expanded. */
export interface WorkflowModuleView {
  enable: boolean;
  reminds?: ReminderView[];
}

/** The upgrade module, its strategies' receivers expanded. */
export interface UpgradeModuleView {
  enable: boolean;
  strategies?: UpgradeStrategyView[];
}

/** One entry of the effective template: where it comes from (0 system default, 1 predefined, 2 udf). */
export interface EffectiveTemplateEntry {
  type: 0 | 1 | 2;
  format: 1 | 2 | 3 | 4;
  template: string;
}

/** The effective template of every scene, by channel. */
export type EffectiveTemplate = Record<TemplateScene, Record<string, EffectiveTemplateEntry>>;

/** A task's template: the predefined template in effect (id 0: the system default) and its udf. */
export interface TemplateView {
  template_id: number;
  /** 0 system default, 1 predefined, 2 custom (udf). */
  type: 0 | 1 | 2;
  template: {
    id: number;
    name: string;
    pinyin: string;
    remark: string;
    created_by: number;
    created_at: number;
    updated_at: number;
    permission: Person[];
    creator: Person | null;
    template: EffectiveTemplate;
  };
  udf: TemplateScenes;
}

/** A tag of a task. */
export interface TagView {
  id: number;
  name: string;
  remark: string;
  created_by: number;
  creator: Person;
}

/** A task's whole configuration, its people and groups expanded (GET /alarmtask/show). */
export interface TaskDetail {
  id: number;
  name: string;
  pinyin: string;
  token: string;
  secret: string;
  department_id: number;
  flag_save_db: 0 | 1;
  status: TaskStatus;
  created_by: number;
  created_at: number;
  updated_at: number;
  department: NamedRef;
  creator: SummaryPerson;
  permission: { rw: SummaryPerson[]; ro: SummaryPerson[] };
  receiver: ReceiverView;
  workflow: WorkflowModuleView | DisabledModule;
  filter: FilterConfig | DisabledModule;
  upgrade: UpgradeModuleView | DisabledModule;
  compress: CompressConfig | DisabledModule;
  recovery: RecoveryConfig | DisabledModule;
  template: TemplateView;
  task_tags: TagView[];
}

/** GET /alarmtask/show */
export interface TaskShown {
  task: TaskDetail;
}

/**
 * GET /alarmtask/view: the detail without its credentials: no token or secret, robot access tokens
 * masked and robot secrets `(set)` or empty, the webhook URL without its query string.
 */
export interface TaskViewed {
  task: Omit<TaskDetail, 'token' | 'secret'> & {
    /** Unix seconds when the pause ends (paused tasks only). */
    paused_until?: number;
  };
}

/** The task a change was made to (DELETE /alarmtask, PUT /alarmtask/stop, /alarmtask/start). */
export interface TaskChanged {
  id: number;
}

/** PUT /alarmtask/pause: the task and the minutes it is paused for. */
export interface TaskPaused {
  id: number;
  time: number;
}

/** PUT /alarmtask/status */
export type TaskStatusChanged = TaskChanged | TaskPaused;

/** PUT /alarmtask/ratelimit */
export interface RateLimitSet {
  id: number;
  /** Alarms per second now in force. */
  rate_limit: number;
  /** Whether that is the deployment default. */
  default: boolean;
}

/** PUT /alarmtask/credentials: the new credentials, shown this once. */
export interface CredentialsRotated {
  id: number;
  /** The new task token (when rotated): signs alarm reports and the fixed signature. */
  token?: string;
  /** The new task secret (when rotated): signs task requests and the task's webhook events. */
  secret?: string;
  /** Unix seconds until when the rotated ones are still accepted. */
  previous_valid_until: number;
}

/** PUT /alarmtask/retention */
export interface RetentionSet {
  id: number;
  /** Days now in force. */
  retention_days: number;
  /** Whether that is the deployment default. */
  default: boolean;
}

/** A task in a listing: never its token, secret or receivers. */
export interface TaskSummary {
  id: number;
  name: string;
  pinyin: string;
  status: TaskStatus;
  /** Unix seconds when the pause ends (paused tasks only). */
  paused_until?: number;
  department: NamedRef;
  tags: NamedRef[];
  created_by: number;
  created_at: number;
  updated_at: number;
  /** What the user may do: `admin` (role 9), `rw`, `ro`. */
  access: 'admin' | 'rw' | 'ro';
}

/** GET /alarmtask/list */
export interface TaskList {
  tasks: TaskSummary[];
  /** Empty when there is nothing more. */
  next_cursor: string;
}
