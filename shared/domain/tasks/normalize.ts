/**
 * Normalization of a validated request into the stored configuration (unknown fields dropped,
 * defaults applied). No I/O.
 */
import { createHash } from 'node:crypto';
import { isObject, stableStringify } from '../../json.ts';
import { sealTaskRobots } from '../channels/robots.ts';
import { normPermission } from '../directory/readers.ts';
import type {
  CompressConfig,
  FilterConfig,
  RecoveryConfig,
  Reminder,
  Task,
  TaskConfig,
  TemplateConfig,
  TemplateScenes,
  UpgradeConfig,
  UpgradeStrategy,
  WorkflowConfig,
} from './model.ts';
import type { Channels, Condition, ReceiverConfig, Robot, Rule } from '../../contracts/receivers.ts';
import { TEMPLATE_SCENES } from './model.ts';
import { ROBOT_CHANNELS, NOTIFY_CHANNELS, USER_CHANNELS } from '../../contracts/receivers.ts';
import type { OncallChannel, OncallReceiver } from '../../contracts/oncall.ts';

// biome-ignore lint/suspicious/noExplicitAny: request bodies are checked by the schema before use
export type Raw = Record<string, any>;

export const uniq = <T>(xs: T[]): T[] => [...new Set(xs)];

/** A webhook given as a URL string or as `{url}`; undefined when empty. */
export function webhookUrl(v: unknown): string | undefined {
  if (typeof v === 'string' && v !== '') return v;
  if (isObject(v) && typeof v.url === 'string' && v.url !== '') return v.url;
  return undefined;
}

/** A module switched on (`enable: true`). */
export const enabled = (m: unknown): m is Raw => isObject(m) && m.enable === true;

function normRule(r: Raw): Rule {
  return {
    field: r.field,
    operator: r.operator,
    ...(r.threshold !== undefined ? { threshold: r.threshold } : {}),
  };
}

function normConditions(cs: Raw[]): Condition[] {
  return cs.map((c) => ({ rule: (c.rule as Raw[]).map(normRule) }));
}

function normChannels(c: Raw | undefined): Channels | undefined {
  if (!c) return undefined;
  const out: Channels = {};
  for (const ch of USER_CHANNELS) if (Array.isArray(c[ch]) && c[ch].length) out[ch] = uniq(c[ch] as number[]);
  for (const ch of ROBOT_CHANNELS) {
    if (Array.isArray(c[ch]) && c[ch].length) {
      out[ch] = (c[ch] as Raw[]).map(
        (r): Robot => ({ webhook: r.webhook, ...(r.secret !== undefined ? { secret: r.secret } : {}) }),
      );
    }
  }
  const url = webhookUrl(c.webhook);
  if (url) out.webhook = url;
  return Object.keys(out).length ? out : undefined;
}

/** On-call receivers: one per schedule (channels of repeats joined), empties dropped. */
export function normOncall(list: unknown): OncallReceiver[] | undefined {
  if (!Array.isArray(list) || list.length === 0) return undefined;
  const bySchedule = new Map<number, Set<OncallChannel>>();
  for (const o of list as Raw[]) {
    const chs = bySchedule.get(o.schedule_id) ?? new Set<OncallChannel>();
    for (const c of o.channels as OncallChannel[]) chs.add(c);
    bySchedule.set(o.schedule_id, chs);
  }
  return [...bySchedule].map(([schedule_id, chs]) => ({ schedule_id, channels: [...chs] }));
}

export function normReceiver(r: Raw, level: 'task' | 'sub'): ReceiverConfig {
  const out: ReceiverConfig = {};
  if (Array.isArray(r.alarmgroup) && r.alarmgroup.length) out.alarmgroup = uniq(r.alarmgroup as number[]);
  const channels = normChannels(r.channels);
  if (channels) out.channels = channels;
  const oncall = normOncall(r.oncall);
  if (oncall) out.oncall = oncall;
  if (level === 'task') {
    if (Array.isArray(r.dispatch) && r.dispatch.length) {
      out.dispatch = (r.dispatch as Raw[]).map((d) => ({
        conditions: normConditions(d.conditions),
        receiver: normReceiver(d.receiver, 'sub'),
      }));
    }
    out.mode = r.mode ?? 1;
  }
  return out;
}

/** A disabled module is kept as sent, with `enable: false` (API guide §5.4). */
function disabled<T>(m: unknown): T {
  return { ...(isObject(m) ? m : {}), enable: false } as T;
}

const withReceiver = (x: Raw) =>
  x.reuse_receiver === 0
    ? { receiver: normReceiver(x.receiver, 'sub') }
    : ({} as { receiver?: ReceiverConfig });

function normWorkflow(w: unknown): WorkflowConfig {
  if (!enabled(w)) return disabled(w);
  const reminds = ((w.reminds ?? []) as Raw[]).map(
    (r): Reminder => ({
      mode: r.mode,
      status: r.status,
      interval: r.interval,
      reuse_receiver: r.reuse_receiver,
      ...withReceiver(r),
    }),
  );
  return { enable: true, reminds };
}

function normFilter(f: unknown): FilterConfig {
  if (!enabled(f)) return disabled(f);
  return {
    enable: true,
    mode: f.mode,
    conditions: (f.conditions as Raw[]).map((c) => ({
      rule: (c.rule as Raw[]).map(normRule),
      level: c.level,
    })),
    not_match: f.not_match ?? 0,
  };
}

function normUpgrade(u: unknown): UpgradeConfig {
  if (!enabled(u)) return disabled(u);
  const strategies = (u.strategies as Raw[]).map(
    (s): UpgradeStrategy => ({
      interval: s.interval,
      count: s.count,
      level: s.level,
      reuse_receiver: s.reuse_receiver,
      ...withReceiver(s),
    }),
  );
  return { enable: true, strategies };
}

function normCompress(c: unknown): CompressConfig {
  if (!enabled(c)) return disabled(c);
  return {
    enable: true,
    method: c.method,
    ...(c.method === 1 ? { conditions: normConditions(c.conditions) } : {}),
    strategy: c.strategy,
    strategy_cycle: c.strategy_cycle,
    ...([3, 4, 5].includes(c.strategy) ? { strategy_count: c.strategy_count } : {}),
    not_match: c.not_match ?? 1,
  };
}

function normRecovery(r: unknown): RecoveryConfig {
  if (!enabled(r)) return disabled(r);
  return r.mode === 1
    ? { enable: true, mode: 1, conditions: normConditions(r.conditions) }
    : { enable: true, mode: 2, delay_interval: r.delay_interval };
}

function normTemplate(t: unknown): TemplateConfig {
  if (!isObject(t)) return { template_id: 0 };
  const udf: TemplateScenes = {};
  if (isObject(t.udf)) {
    for (const scene of TEMPLATE_SCENES) {
      const s = t.udf[scene];
      if (!isObject(s)) continue;
      const entries: Raw = {};
      for (const ch of NOTIFY_CHANNELS) {
        if (!isObject(s[ch])) continue;
        const { format, template } = s[ch];
        entries[ch] = {
          ...(format !== undefined ? { format } : {}),
          ...(template !== undefined ? { template } : {}),
        };
      }
      if (Object.keys(entries).length) udf[scene] = entries;
    }
  }
  return {
    template_id: (t.template_id as number | undefined) ?? 0,
    ...(Object.keys(udf).length ? { udf } : {}),
  };
}

/** rw always holds the creator; a uid in both lists is rw (API guide §5.2). */
export { normPermission } from '../directory/readers.ts';

/** The stored configuration of a validated request. */
export function normalizeConfig(body: Raw, creator: number): TaskConfig {
  return {
    name: body.name,
    department_id: body.department_id,
    flag_save_db: body.flag_save_db,
    task_tags: body.task_tags ?? [],
    permission: normPermission(body.permission, creator),
    receiver: normReceiver(body.receiver, 'task'),
    workflow: normWorkflow(body.workflow),
    filter: normFilter(body.filter),
    upgrade: normUpgrade(body.upgrade),
    compress: normCompress(body.compress),
    recovery: normRecovery(body.recovery),
    template: normTemplate(body.template),
  };
}

export function configOf(task: Task): TaskConfig {
  return {
    name: task.name,
    department_id: task.department_id,
    flag_save_db: task.flag_save_db,
    task_tags: task.task_tags,
    permission: task.permission,
    receiver: task.receiver,
    workflow: task.workflow,
    filter: task.filter,
    upgrade: task.upgrade,
    compress: task.compress,
    recovery: task.recovery,
    template: task.template,
  };
}

/**
 * A digest of a configuration, the same for the same configuration however its request was written
 * (object keys sorted at every depth, robots sealed as stored): what a what-if replay replayed, and
 * what a save after it must write (tasks/service.ts `SaveGuard`).
 */
export function configFingerprint(config: TaskConfig): string {
  return createHash('sha256')
    .update(stableStringify(sealTaskRobots(config)))
    .digest('hex');
}
