import type { AlarmMessage } from '../../contracts/messages.ts';
import type { Task } from '../tasks/model.ts';
import type { AlarmRecord } from '../alarms/model.ts';
import { type Outcome, outcomeOf } from './outcomes.ts';
import { type ReplayDirectory, World } from './world.ts';

/**
 * A replay's runs over the same alarms: `recorded` (the recorded decisions' effects, nothing decided
 * again), `current` (the saved configuration decides again) and `edited` (the configuration asked
 * about decides), each in a world of its own starting from nothing; the scenario's synthetic alarms
 * come after the window in a fork of `current` that decides with the edited configuration, as the
 * next alarms would once it is saved.
 */
export interface ScenarioAlarm {
  name: string;
  message: AlarmMessage;
  at: number;
}

export interface ReplayRuns {
  recorded: World;
  current: World;
  edited: World;
  scenario?: World;
  /** Per alarm uuid: what each replay decided. */
  current_outcomes: Map<string, Outcome>;
  edited_outcomes: Map<string, Outcome>;
  scenario_outcomes: Map<string, Outcome>;
}

/** The alarm message a stored record was made from (a monitor's recovery says so in its reasons). */
export function messageOf(record: AlarmRecord): AlarmMessage {
  return {
    kind: 'alarm',
    uuid: record.uuid,
    task_id: record.task_id,
    level: record.reported_level,
    ctn: record.history.ctn,
    notice_time: record.history.notice_time,
    reported_at: record.reported_at,
    ...(record.receiver ? { receiver: record.receiver } : {}),
    ...(record.why?.recovery?.mode === 'monitor' ? { recovery: true as const } : {}),
  };
}

/**
 * The recorded processing order: by time, and each metric's compressed alarms within a second in the
 * order the metric took them. With upgrade on, each record keeps the metric's trailing counts after
 * it, which grow by one with each alarm: they give that order exactly. Without, the windows do: a
 * metric's windows follow one another (one opens when the one before has ended or closed), so its
 * alarms are its windows in order, each by position; of two windows that opened in the same second (a
 * count closed the first) the full one goes first (when both are full, either order decides the same).
 */
export function inRecordedOrder(records: AlarmRecord[]): AlarmRecord[] {
  const byTime = [...records].sort(
    (a, b) =>
      a.processed_at - b.processed_at ||
      a.history.id - b.history.id ||
      (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0),
  );
  const slots = new Map<string, number[]>();
  byTime.forEach((r, i) => {
    if (r.outcome !== 'compressed') return;
    const list = slots.get(r.history.metric);
    if (list) list.push(i);
    else slots.set(r.history.metric, [i]);
  });
  const out = [...byTime];
  for (const positions of slots.values()) {
    const alarms = positions.map((i) => byTime[i]);
    const ordered = alarms.every((r) => r.upgrade_counts?.length) ? byCount(alarms) : byWindow(alarms);
    positions.forEach((p, j) => {
      out[p] = ordered[j];
    });
  }
  return out;
}

/** A metric's alarms by time, then by the trailing count each left (upgrade on). */
const byCount = (alarms: AlarmRecord[]) =>
  [...alarms].sort(
    (a, b) =>
      a.processed_at - b.processed_at ||
      (a.upgrade_counts?.[0] ?? 0) - (b.upgrade_counts?.[0] ?? 0) ||
      a.history.id - b.history.id,
  );

/** A metric's alarms window after window, each by position. */
function byWindow(alarms: AlarmRecord[]): AlarmRecord[] {
  const windows = new Map<number, AlarmRecord[]>();
  for (const r of alarms) {
    const w = windows.get(r.history.batch);
    if (w) w.push(r);
    else windows.set(r.history.batch, [r]);
  }
  return [...windows.entries()]
    .map(([batch, list]) => ({
      batch,
      start: Math.min(...list.map((a) => a.window?.start ?? a.processed_at)),
      full: Math.max(...list.map((a) => a.k ?? 0)),
      list: list.sort((a, b) => (a.k ?? 0) - (b.k ?? 0) || a.history.id - b.history.id),
    }))
    .sort((a, b) => a.start - b.start || b.full - a.full || a.batch - b.batch)
    .flatMap((w) => w.list);
}

function outcomesOf(world: World, uuids: Iterable<string>): Map<string, Outcome> {
  const out = new Map<string, Outcome>();
  for (const uuid of uuids) {
    const entry = world.store.logged.get(uuid);
    if (entry) out.set(uuid, outcomeOf(entry, world.store.records.get(uuid)));
  }
  return out;
}

/** The history id a scenario alarm gets (above any the service hands out). */
const SCENARIO_IDS = 9_000_000_000_000;

export async function runReplay(input: {
  current: Task;
  edited: Task;
  /** The window's stored alarms, in recorded order. */
  records: AlarmRecord[];
  /** When the window ends (reminders fire up to it; delayed flushes and recoveries after it too). */
  horizon: number;
  directory: ReplayDirectory;
  scenario?: ScenarioAlarm[];
}): Promise<ReplayRuns> {
  const start = input.records[0]?.processed_at ?? input.horizon;
  const recorded = new World(input.current, input.directory, start);
  const current = new World(input.current, input.directory, start);
  const edited = new World(input.edited, input.directory, start);
  for (const r of input.records) {
    await recorded.recorded(r);
    const message = messageOf(r);
    await current.process(message, r.history.id, r.processed_at);
    await edited.process(message, r.history.id, r.processed_at);
  }
  let scenario: World | undefined;
  if (input.scenario?.length) {
    // The next alarms after the window, as they would go once the edited configuration is saved:
    // with the state (windows, counts, workflows) the saved configuration left.
    await current.runDueUntil(input.horizon);
    scenario = current.fork(input.edited);
    let id = SCENARIO_IDS;
    for (const s of input.scenario) await scenario.process(s.message, ++id, s.at);
    await scenario.finish(Math.max(input.horizon, ...input.scenario.map((s) => s.at)));
  }
  for (const world of [recorded, current, edited]) await world.finish(input.horizon);
  const uuids = input.records.map((r) => r.uuid);
  return {
    recorded,
    current,
    edited,
    scenario,
    current_outcomes: outcomesOf(current, uuids),
    edited_outcomes: outcomesOf(edited, uuids),
    scenario_outcomes: scenario
      ? outcomesOf(
          scenario,
          (input.scenario ?? []).map((s) => s.message.uuid),
        )
      : new Map(),
  };
}
