/**
 * Response shapes of the alarm task API (API guide §5.3-§5.5, §5.8). Pure: the service loads the
 * directory records once (batched) and passes them in.
 */
import {
  type AlarmGroup,
  type Department,
  type Person,
  person,
  type SummaryPerson,
  summaryPerson,
  type Tag,
  type Template,
  type User,
} from '../directory/model.ts';
import { effectiveTemplate } from './templates.ts';
import { effectiveStatus, type Task } from './model.ts';
import type { Channels, ReceiverConfig } from '../../contracts/receivers.ts';
import type {
  AlarmGroupView,
  ChannelsView,
  NamedRef,
  ReceiverView,
  RobotView,
  TagView,
  TaskDetail,
  TaskStored,
  TemplateView,
  UpgradeModuleView,
  WorkflowModuleView,
} from './responses.ts';

export interface DirectoryData {
  users: Map<number, User>;
  groups: Map<number, AlarmGroup>;
  tags: Map<number, Tag>;
  template?: Template;
  department?: Department;
}

/** User channels always present in the response; `wechat` is added only when configured. */
const VIEW_USER_CHANNELS = ['sms', 'email', 'phone', 'dingworker', 'yachworker'] as const;

const unknownPerson = (uid: number): Person => ({ uid, username: '', user: '', email: '', department: '' });

function summaryOf(uid: number, users: Map<number, User>): SummaryPerson {
  const u = users.get(uid);
  return u ? summaryPerson(u) : { uid, username: '', email: '', department: '' };
}

function personOf(uid: number, users: Map<number, User>): Person {
  const u = users.get(uid);
  return u ? person(u) : unknownPerson(uid);
}

/** Summary persons of the known uids (unknown uids are dropped). */
function summaries(uids: number[] | undefined, users: Map<number, User>): SummaryPerson[] {
  return (uids ?? []).flatMap((uid) => {
    const u = users.get(uid);
    return u ? [summaryPerson(u)] : [];
  });
}

export function departmentRef(id: number, dept: Department | undefined): NamedRef {
  return { id, name: dept?.name ?? '' };
}

function channelsView(c: Channels | undefined, users: Map<number, User>): ChannelsView {
  const robots = (list: Channels['dinggroup']): RobotView[] =>
    (list ?? []).map((r) => ({ webhook: r.webhook, secret: r.secret ?? '' }));
  const [sms, email, phone, dingworker, yachworker] = VIEW_USER_CHANNELS.map((ch) =>
    summaries(c?.[ch], users),
  );
  return {
    sms,
    email,
    phone,
    dingworker,
    yachworker,
    ...(c?.wechat ? { wechat: summaries(c.wechat, users) } : {}),
    dinggroup: robots(c?.dinggroup),
    yachgroup: robots(c?.yachgroup),
    webhook: { url: c?.webhook ?? '' },
  };
}

function groupsView(ids: number[] | undefined, groups: Map<number, AlarmGroup>): AlarmGroupView[] {
  return (ids ?? []).flatMap((id) => {
    const g = groups.get(id);
    return g ? [{ id: g.id, name: g.name, remark: g.remark, receiver: g.receiver }] : [];
  });
}

function receiverView(r: ReceiverConfig, dir: DirectoryData): ReceiverView {
  return {
    alarmgroup: groupsView(r.alarmgroup, dir.groups),
    channels: channelsView(r.channels, dir.users),
    ...(r.oncall?.length ? { oncall: r.oncall } : {}),
    dispatch: (r.dispatch ?? []).map((d) => ({
      conditions: d.conditions,
      receiver: {
        alarmgroup: groupsView(d.receiver.alarmgroup, dir.groups),
        channels: channelsView(d.receiver.channels, dir.users),
        ...(d.receiver.oncall?.length ? { oncall: d.receiver.oncall } : {}),
      },
    })),
    mode: r.mode ?? 1,
  };
}

/** A reminder or upgrade strategy with its own receiver (if any) in the response form (API guide §5.8). */
function withReceiverView<T extends { receiver?: ReceiverConfig }>(
  item: T,
  dir: DirectoryData,
): Omit<T, 'receiver'> & { receiver?: ReceiverView } {
  const { receiver, ...rest } = item;
  return receiver ? { ...rest, receiver: receiverView(receiver, dir) } : rest;
}

/** 0 system default, 1 predefined, 2 custom (udf present) (API guide §5.8). */
export function templateType(t: Task['template']): 0 | 1 | 2 {
  if (t.udf && Object.keys(t.udf).length > 0) return 2;
  return (t.template_id ?? 0) > 0 ? 1 : 0;
}

/**
 * API guide §5.8: `template.template` describes the template in effect: the predefined template's
 * record when the task names one (else the system default's, id 0), whose own `template` is the
 * effective template of every scene and channel.
 */
function templateView(task: Task, dir: DirectoryData): TemplateView {
  const t = dir.template;
  const record = t
    ? {
        id: t.id,
        name: t.name,
        pinyin: t.pinyin,
        remark: t.remark,
        created_by: t.created_by,
        created_at: t.created_at,
        updated_at: t.updated_at,
        permission: (t.permission ?? []).flatMap((uid) => {
          const u = dir.users.get(uid);
          return u ? [person(u)] : [];
        }),
        creator: personOf(t.created_by, dir.users),
      }
    : {
        id: 0,
        name: 'system default',
        pinyin: 'systemdefault',
        remark: '',
        created_by: 0,
        created_at: 0,
        updated_at: 0,
        permission: [],
        creator: null,
      };
  return {
    template_id: task.template.template_id ?? 0,
    type: templateType(task.template),
    template: { ...record, template: effectiveTemplate(task.template, t) },
    udf: task.template.udf ?? {},
  };
}

function tagsView(ids: number[], dir: DirectoryData): TagView[] {
  return ids.flatMap((id) => {
    const t = dir.tags.get(id);
    return t
      ? [
          {
            id: t.id,
            name: t.name,
            remark: t.remark,
            created_by: t.created_by,
            creator: personOf(t.created_by, dir.users),
          },
        ]
      : [];
  });
}

/**
 * Reminders and upgrade strategies of enabled modules: only those are expanded. A disabled module is
 * shown as it was sent (API guide §5.4), so its content is not trusted to have the stored shape.
 */
const shownReminds = (task: Task) => (task.workflow.enable ? (task.workflow.reminds ?? []) : []);
const shownStrategies = (task: Task) => (task.upgrade.enable ? (task.upgrade.strategies ?? []) : []);

/** Every receiver the detail view expands: the task's, its dispatch items', reminders' and strategies'. */
function shownReceivers(task: Task): ReceiverConfig[] {
  const out = [task.receiver];
  for (const r of [...shownReminds(task), ...shownStrategies(task)]) if (r.receiver) out.push(r.receiver);
  return out.flatMap((r) => [r, ...(r.dispatch ?? []).map((d) => d.receiver)]);
}

/** Every alarm group id the detail view expands. */
export function detailGroupIds(task: Task): number[] {
  return [...new Set(shownReceivers(task).flatMap((r) => r.alarmgroup ?? []))];
}

/** Every uid the detail view expands. */
export function detailUids(task: Task, tags: Tag[], template: Template | undefined): number[] {
  const uids = [task.created_by, ...task.permission.rw, ...task.permission.ro];
  for (const r of shownReceivers(task)) {
    for (const ch of [...VIEW_USER_CHANNELS, 'wechat'] as const) uids.push(...(r.channels?.[ch] ?? []));
  }
  uids.push(...tags.map((t) => t.created_by));
  if (template) uids.push(template.created_by, ...(template.permission ?? []));
  return [...new Set(uids)].filter((u) => u > 0);
}

/** GET /alarmtask/show: API guide §5.8. */
export function taskDetail(task: Task, dir: DirectoryData, now: number): TaskDetail {
  return {
    id: task.id,
    name: task.name,
    pinyin: task.pinyin,
    token: task.token,
    secret: task.secret,
    department_id: task.department_id,
    flag_save_db: task.flag_save_db,
    status: effectiveStatus(task, now),
    created_by: task.created_by,
    created_at: task.created_at,
    updated_at: task.updated_at,
    department: departmentRef(task.department_id, dir.department),
    creator: summaryOf(task.created_by, dir.users),
    permission: {
      rw: summaries(task.permission.rw, dir.users),
      ro: summaries(task.permission.ro, dir.users),
    },
    receiver: receiverView(task.receiver, dir),
    workflow:
      task.workflow.enable && task.workflow.reminds
        ? { ...task.workflow, reminds: task.workflow.reminds.map((r) => withReceiverView(r, dir)) }
        : // enabled without reminders, or turned off (then kept as sent)
          (task.workflow as WorkflowModuleView),
    filter: task.filter,
    upgrade:
      task.upgrade.enable && task.upgrade.strategies
        ? { ...task.upgrade, strategies: task.upgrade.strategies.map((s) => withReceiverView(s, dir)) }
        : (task.upgrade as UpgradeModuleView),
    compress: task.compress,
    recovery: task.recovery,
    template: templateView(task, dir),
    task_tags: tagsView(task.task_tags, dir),
  };
}

/** Output of store, update and updatefields (API guide §5.8). */
export function storeView(
  task: Task,
  dept: Department | undefined,
  creator: User | undefined,
  nullPhoneUsers: User[],
  now: number,
): TaskStored {
  const users = new Map(creator ? [[creator.uid, creator]] : []);
  return {
    task: {
      id: task.id,
      name: task.name,
      token: task.token,
      secret: task.secret,
      department_id: task.department_id,
      status: effectiveStatus(task, now),
      created_by: task.created_by,
      created_at: task.created_at,
      department: departmentRef(task.department_id, dept),
      creator: summaryOf(task.created_by, users),
    },
    nullPhoneUsers: nullPhoneUsers.map((u) => ({
      uid: u.uid,
      user: u.user,
      username: u.username,
      email: u.email,
      department: u.department,
    })),
  };
}
