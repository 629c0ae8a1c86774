import type { AlarmMessage } from '../../contracts/messages.ts';
import { type AlarmFacts, asText, evaluateRule, lookup } from '../conditions/evaluate.ts';
import type { Task } from '../tasks/model.ts';
import type { Level } from '../../contracts/levels.ts';
import type { Rule } from '../../contracts/receivers.ts';
import { METHOD_CONDITION, METHOD_CONTENT, strategyOf } from './compress.ts';
import { FILTER_BLACKLIST } from './filter.ts';
import { factsOf, type Plan } from './model.ts';
import { DISPATCH_NON_LAZY } from './notify.ts';
import { RECOVERY_CONDITION } from './recovery.ts';

/**
 * The reasons behind one alarm's decisions (the decision trace, API guide §13.3), captured when the
 * pipeline decides: which recovery, filter, compression and dispatch condition matched and the
 * values each rule saw; for conditions that did not match, the first rule that failed. Pure. Stages
 * that are off leave no entry, so an alarm of a plain task costs a few bytes.
 */
export interface RuleTrace {
  field: string;
  operator: string;
  threshold?: string;
  /** The value the rule saw, as compared (text), cut to VALUE_MAX characters; absent when missing. */
  value?: string;
  ok: boolean;
}

/** A condition's rules as evaluated: all of them for a match, the first failing one for a miss. */
export interface ConditionTrace {
  index: number;
  rules: RuleTrace[];
}

export interface MatchTrace {
  /** The first matching condition, or none. */
  match?: ConditionTrace;
  /** Conditions tried before it (or all when none matched), each with its failing rule (at most MAX_MISSES). */
  misses: ConditionTrace[];
  /** Number of conditions configured. */
  conditions: number;
}

export interface Why {
  /** The task's version when the alarm was decided (the configuration the reasons refer to). */
  task_version: number;
  /** The report carried its own receiver (no dispatch). */
  override?: true;
  /** Cut to WHY_MAX: the misses, and all but each match's first rule, are left out. */
  trimmed?: true;
  recovery?: ({ mode: 'condition' } & MatchTrace) | { mode: 'monitor' } | { mode: 'delay'; minutes: number };
  filter?: {
    mode: 'whitelist' | 'blacklist';
    kept: boolean;
    level_from: Level;
    level_to: Level;
  } & MatchTrace;
  compress?: {
    method: 'condition' | 'content' | 'full';
    strategy: 'cycle' | 'delay' | 'cycle-count' | 'count-cycle' | 'count';
    cycle_minutes: number;
    count: number;
  } & Partial<MatchTrace>;
  dispatch?: {
    mode: 'lazy' | 'non-lazy';
    items: number;
    matched: ConditionTrace[];
    misses: ConditionTrace[];
  };
}

const VALUE_MAX = 120;
const MAX_MISSES = 5;
const STRATEGIES = ['', 'cycle', 'delay', 'cycle-count', 'count-cycle', 'count'] as const;

const cut = (s: string) => (s.length > VALUE_MAX ? `${s.slice(0, VALUE_MAX - 1)}…` : s);

function ruleTrace(rule: Rule, facts: AlarmFacts): RuleTrace {
  const hit = lookup(facts, rule.field);
  return {
    field: rule.field,
    operator: rule.operator,
    ...(rule.threshold !== undefined && rule.threshold !== '' ? { threshold: cut(rule.threshold) } : {}),
    ...(hit.found ? { value: cut(asText(hit.value)) } : {}),
    ok: evaluateRule(rule, facts),
  };
}

/** One condition against the facts: its rules when it matches, else its first failing rule. */
function conditionTrace(
  rules: Rule[],
  index: number,
  facts: AlarmFacts,
): { ok: boolean; trace: ConditionTrace } {
  const traces: RuleTrace[] = [];
  for (const rule of rules) {
    const t = ruleTrace(rule, facts);
    if (!t.ok) return { ok: false, trace: { index, rules: [t] } };
    traces.push(t);
  }
  return { ok: true, trace: { index, rules: traces } };
}

function matchTrace(conditions: { rule: Rule[] }[] | undefined, facts: AlarmFacts): MatchTrace {
  const list = conditions ?? [];
  const misses: ConditionTrace[] = [];
  for (let i = 0; i < list.length; i++) {
    const c = conditionTrace(list[i].rule, i, facts);
    if (c.ok) return { match: c.trace, misses, conditions: list.length };
    if (misses.length < MAX_MISSES) misses.push(c.trace);
  }
  return { misses, conditions: list.length };
}

/** The reasons for `plan`, the decision planAlarm took for `alarm` under `task`. */
export function explainAlarm(task: Task, alarm: AlarmMessage, plan: Plan): Why {
  const why: Why = { task_version: task.version };
  const original = factsOf(alarm, alarm.level);
  const r = task.recovery;
  if (alarm.recovery) why.recovery = { mode: 'monitor' };
  else if (r?.enable && r.mode === RECOVERY_CONDITION)
    why.recovery = { mode: 'condition', ...matchTrace(r.conditions, original) };
  else if (r?.enable && r.delay_interval) why.recovery = { mode: 'delay', minutes: r.delay_interval };
  if (plan.kind === 'recovery' && !alarm.recovery) return trimmed(why);

  const f = task.filter;
  if (f?.enable) {
    const m = matchTrace(f.conditions, original);
    why.filter = {
      mode: f.mode === FILTER_BLACKLIST ? 'blacklist' : 'whitelist',
      kept: plan.kind !== 'drop' && plan.kind !== 'rejected',
      level_from: alarm.level,
      level_to: plan.level,
      ...m,
    };
  }
  if (plan.kind === 'drop' || plan.kind === 'rejected') return trimmed(why);

  const facts = factsOf(alarm, plan.level);
  const c = task.compress;
  if (c?.enable && task.flag_save_db === 1) {
    const s = strategyOf(c);
    const method =
      c.method === METHOD_CONDITION ? 'condition' : c.method === METHOD_CONTENT ? 'content' : 'full';
    why.compress = {
      method,
      strategy: STRATEGIES[s.strategy] || 'cycle',
      cycle_minutes: s.cycleSeconds / 60,
      count: s.count,
      ...(c.method === METHOD_CONDITION ? matchTrace(c.conditions, facts) : {}),
    };
  }
  const items = task.receiver?.dispatch ?? [];
  if (alarm.receiver) why.override = true;
  else if (items.length > 0) {
    const lazy = task.receiver?.mode !== DISPATCH_NON_LAZY;
    const matched: ConditionTrace[] = [];
    const misses: ConditionTrace[] = [];
    for (let i = 0; i < items.length; i++) {
      const m = matchTrace(items[i].conditions, facts);
      if (m.match) {
        matched.push({ index: i, rules: m.match.rules });
        if (lazy) break;
      } else if (misses.length < MAX_MISSES) misses.push({ index: i, rules: m.misses[0]?.rules ?? [] });
    }
    why.dispatch = { mode: lazy ? 'lazy' : 'non-lazy', items: items.length, matched, misses };
  }
  return trimmed(why);
}

/** Most a `why` takes (JSON characters): it travels in the alarm record and in the alarm log. */
export const WHY_MAX = 8_192;

/**
 * A `why` within WHY_MAX: without the conditions that did not match, then with only the first rule
 * of each matching condition (`trimmed` says so). Huge configurations (many dispatch items of many
 * rules) would otherwise make records and log items heavy, up to DynamoDB's 400 KB item limit.
 */
function trimmed(why: Why): Why {
  if (JSON.stringify(why).length <= WHY_MAX) return why;
  const noMisses = JSON.parse(JSON.stringify(why), (k, v) => (k === 'misses' ? [] : v)) as Why;
  noMisses.trimmed = true;
  if (JSON.stringify(noMisses).length <= WHY_MAX) return noMisses;
  const firstRules = JSON.parse(JSON.stringify(noMisses), (k, v) =>
    k === 'rules' && Array.isArray(v) ? v.slice(0, 1) : v,
  ) as Why;
  if (firstRules.dispatch) firstRules.dispatch.matched = firstRules.dispatch.matched.slice(0, 20);
  return firstRules;
}
