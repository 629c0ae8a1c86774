import type { AlarmMessage } from '../../contracts/messages.ts';
import { ValidationError } from '../errors.ts';
import type { Level } from '../../contracts/levels.ts';
import type { ReceiverConfig, UserChannel } from '../../contracts/receivers.ts';
import type { AlarmResult } from '../alarms/log.ts';
import type { ScenarioAlarm } from './engine.ts';
import type { Outcome } from './outcomes.ts';
import type { World } from './world.ts';

/**
 * A replay's synthetic alarms and the expectations about them: the alarms come after the window, as
 * the next alarms would once the edited configuration is saved, and each `expect` item is a check of
 * one of them (its outcome, people it must or must not reach), answered pass or fail: a regression
 * suite a team can keep and run in CI.
 */
export interface ScenarioInput {
  name: string;
  ctn: Record<string, unknown>;
  level?: Level;
  /** Unix seconds; default: a second after the previous scenario alarm (the first: after the window). */
  at?: number;
  receiver?: ReceiverConfig;
  /** A monitor's recovery (a resolved alert). */
  recovery?: boolean;
}

export interface ExpectInput {
  /** The scenario alarm's name. */
  alarm: string;
  outcome?: AlarmResult;
  receivers?: { include?: number[]; exclude?: number[] };
  /** Receivers on this channel only (default: any person's channel). */
  channel?: UserChannel;
}

export interface ScenarioResult {
  name: string;
  uuid: string;
  at: number;
  outcome: Outcome;
  /** People notified of it (any channel, deferred and upgrade messages included). */
  people: number[];
}

export interface AssertionResult {
  alarm: string;
  pass: boolean;
  /** What failed, in words (empty when it passed). */
  failures: string[];
}

/** The scenario's alarms as messages, each at its time (never before the end of the window). */
export function scenarioAlarms(items: ScenarioInput[], taskId: number, windowEnd: number): ScenarioAlarm[] {
  const names = new Set<string>();
  let last = windowEnd;
  return items.map((s, i) => {
    if (names.has(s.name)) throw ValidationError.of(`scenario.${i}.name`, `repeats [${s.name}]`);
    names.add(s.name);
    const at = s.at ?? last + 1;
    if (at < windowEnd)
      throw ValidationError.of(`scenario.${i}.at`, `must not be before the end of the window (${windowEnd})`);
    last = at;
    const message: AlarmMessage = {
      kind: 'alarm',
      uuid: `scenario-${i + 1}`,
      task_id: taskId,
      level: s.level ?? 0,
      ctn: s.ctn,
      notice_time: at,
      reported_at: at,
      ...(s.receiver ? { receiver: s.receiver } : {}),
      ...(s.recovery ? { recovery: true as const } : {}),
    };
    return { name: s.name, message, at };
  });
}

function peopleOf(world: World, uuid: string, channel?: UserChannel): number[] {
  const uids = world.collector.jobs
    .filter((j) => j.uuid === uuid && (!channel || j.job.channel === channel))
    .flatMap((j) => j.job.users ?? []);
  return [...new Set(uids)].sort((a, b) => a - b);
}

export function scenarioResults(
  alarms: ScenarioAlarm[],
  world: World | undefined,
  outcomes: Map<string, Outcome>,
): ScenarioResult[] {
  if (!world) return [];
  return alarms.flatMap((a) => {
    const outcome = outcomes.get(a.message.uuid);
    return outcome
      ? [{ name: a.name, uuid: a.message.uuid, at: a.at, outcome, people: peopleOf(world, a.message.uuid) }]
      : [];
  });
}

export function checkExpectations(
  items: ExpectInput[],
  alarms: ScenarioAlarm[],
  world: World | undefined,
  outcomes: Map<string, Outcome>,
): AssertionResult[] {
  return items.map((e, i) => {
    const alarm = alarms.find((a) => a.name === e.alarm);
    if (!alarm) throw ValidationError.of(`expect.${i}.alarm`, `names no scenario alarm [${e.alarm}]`);
    const outcome = outcomes.get(alarm.message.uuid);
    const failures: string[] = [];
    if (!world || !outcome) failures.push('the alarm was not processed');
    else {
      if (e.outcome && outcome.result !== e.outcome)
        failures.push(`outcome: expected ${e.outcome}, got ${outcome.result}`);
      const people = new Set(peopleOf(world, alarm.message.uuid, e.channel));
      const on = e.channel ? ` on ${e.channel}` : '';
      const missing = (e.receivers?.include ?? []).filter((uid) => !people.has(uid));
      const unwanted = (e.receivers?.exclude ?? []).filter((uid) => people.has(uid));
      if (missing.length) failures.push(`not notified${on}: ${missing.join(', ')}`);
      if (unwanted.length) failures.push(`notified${on}, expected not to be: ${unwanted.join(', ')}`);
    }
    return { alarm: e.alarm, pass: failures.length === 0, failures };
  });
}
