import type { AlarmGroup, Template, User } from '../directory/model.ts';
import type { Task, TaskConfig } from '../tasks/model.ts';
import { configOf } from '../tasks/normalize.ts';
import { referencedGroupIds } from '../tasks/references.ts';
import { recoveryDelaySeconds } from '../alarms/recovery.ts';
import { changesOf, fidelityOf, iso } from './compare.ts';
import { replayTask } from './config.ts';
import { inRecordedOrder, runReplay } from './engine.ts';
import { outcomeOfRecord } from './outcomes.ts';
import type { ReplayItem } from './repository.ts';
import type { ReplayDone } from './responses.ts';
import { samplesOf } from './samples.ts';
import {
  checkExpectations,
  type ExpectInput,
  type ScenarioInput,
  scenarioAlarms,
  scenarioResults,
} from './scenario.ts';
import type { LoadedWindow, Window } from './source.ts';
import { peopleOf, summarize, uidsOf } from './summary.ts';
import { MAX_DUE_RUNS, type World } from './world.ts';

/** What a replay keeps of its request while it waits for its queue (the configuration sealed). */
export interface StoredRequest {
  spec: Window['spec'];
  /** The service's time of the request (a `last` window counts back from it). */
  now: number;
  /** The configuration asked about, derived and with its robots sealed; absent: the saved one. */
  edited?: TaskConfig;
  fingerprint: string;
  task_version: number;
  scenario?: ScenarioInput[];
  expect?: ExpectInput[];
}

/**
 * A replay's answer from its window's alarms: the three runs (recorded, saved configuration, edited
 * configuration) and the scenario, compared and summed up, with notes on what it could not know.
 */
export interface ComputeDeps {
  getAlarmGroups: (ids: number[]) => Promise<AlarmGroup[]>;
  getUsers: (uids: number[]) => Promise<User[]>;
  getTemplate: (id: number) => Promise<Template | undefined>;
  env: () => { env: string; timeZone: string };
}

function notesOf(input: {
  task: Task;
  current: Task;
  edited: Task;
  loaded: LoadedWindow;
  groups: AlarmGroup[];
  worlds: World[];
  scenario: boolean;
}): string[] {
  const { task, loaded, groups } = input;
  const notes: string[] = [];
  const { from } = loaded.window;
  const { not_stored, expired } = loaded.skipped;
  if (not_stored + expired > 0)
    notes.push(
      `${not_stored + expired} alarm(s) of the window could not be replayed: ${not_stored} whose content was not stored (the task stored nothing, or the filter dropped them), ${expired} whose record has expired`,
    );
  const changedGroups = groups.filter((g) => g.updated_at > from).map((g) => g.id);
  notes.push(
    `receivers resolve with today's directory (it keeps no history)${
      changedGroups.length
        ? `: alarm group(s) ${changedGroups.join(', ')} changed since the window began, and their members today were used`
        : ''
    }`,
  );
  const savedAt = task.config_saved_at ?? task.updated_at;
  if (savedAt > from)
    notes.push(
      `the ${task.config_version !== undefined ? 'configuration was saved' : 'task changed'} at ${iso(savedAt)}, within the window: alarms before it were decided under an earlier configuration (fidelity says which), and the recorded run resolves their receivers with today's`,
    );
  if (recoveryDelaySeconds(input.current) !== undefined)
    notes.push(
      'alarm records do not keep delay recoveries: the recorded run has none (delay_recoveries null)',
    );
  if (input.current.workflow.enable || input.edited.workflow.enable)
    notes.push(
      'nobody acts on a workflow in a replay: it stays pending until a recovery finishes it, and its reminders fire until the end of the window',
    );
  if (input.worlds.some((w) => w.dueRuns.ran >= MAX_DUE_RUNS))
    notes.push(`due work was cut after ${MAX_DUE_RUNS} runs in a run (reminders that cycle)`);
  const failed = input.worlds.flatMap((w) => w.dueRuns.failed);
  if (failed.length) notes.push(`${failed.length} due-work run(s) failed in the replay: ${failed[0].error}`);
  if (input.scenario)
    notes.push(
      "the scenario's alarms come after the window, decided by the edited configuration with the state (windows, counts, workflows) the saved configuration left",
    );
  return notes;
}

export async function computeReplay(
  item: Pick<ReplayItem, 'replay_id' | 'task_id' | 'created_at'>,
  request: StoredRequest,
  task: Task,
  loaded: LoadedWindow,
  deps: ComputeDeps,
): Promise<ReplayDone> {
  const current = replayTask(task);
  const edited = replayTask(task, request.edited ?? configOf(task));
  const records = inRecordedOrder(loaded.records);
  const overrides = records.flatMap((r) => r.receiver?.alarmgroup ?? []);
  const scenario = scenarioAlarms(request.scenario ?? [], task.id, loaded.window.to);
  const groupIds = [
    ...new Set([
      ...referencedGroupIds(current),
      ...referencedGroupIds(edited),
      ...overrides,
      ...scenario.flatMap((s) => s.message.receiver?.alarmgroup ?? []),
    ]),
  ];
  const groups = groupIds.length ? await deps.getAlarmGroups(groupIds) : [];
  const runs = await runReplay({
    current,
    edited,
    records,
    horizon: loaded.window.to,
    directory: { groups: new Map(groups.map((g) => [g.id, g])), users: new Map() },
    scenario,
  });
  const { changes, total } = changesOf(records, current, {
    task: edited,
    outcomes: runs.edited_outcomes,
    entry: (uuid) => runs.edited.store.logged.get(uuid),
    record: (uuid) => runs.edited.store.records.get(uuid),
  });
  const uids = uidsOf(runs.recorded, runs.edited);
  const [users, predefined] = await Promise.all([
    uids.length ? deps.getUsers(uids) : Promise.resolve([]),
    edited.template?.template_id ? deps.getTemplate(edited.template.template_id) : Promise.resolve(undefined),
  ]);
  const assertions = checkExpectations(request.expect ?? [], scenario, runs.scenario, runs.scenario_outcomes);
  const spec = request.spec;
  return {
    replay_id: item.replay_id,
    status: 'done',
    task_id: item.task_id,
    created_at: item.created_at,
    task_version: request.task_version,
    edited: request.edited !== undefined,
    window: {
      from: loaded.window.from,
      to: loaded.window.to,
      ...('last' in spec ? { last: spec.last } : {}),
    },
    alarms: {
      in_window: loaded.entries.length,
      replayable: records.length,
      skipped: loaded.skipped.not_stored + loaded.skipped.expired,
      skipped_not_stored: loaded.skipped.not_stored,
      skipped_expired: loaded.skipped.expired,
    },
    fidelity: fidelityOf(task, records, runs.current_outcomes),
    summary: {
      recorded: summarize(runs.recorded, records.map(outcomeOfRecord), { delayRecoveries: false }),
      current: summarize(runs.current, runs.current_outcomes.values(), { delayRecoveries: true }),
      edited: summarize(runs.edited, runs.edited_outcomes.values(), { delayRecoveries: true }),
    },
    people: peopleOf(runs.recorded, runs.edited, new Map(users.map((u) => [u.uid, u]))),
    changes,
    changes_total: total,
    samples: samplesOf(new Set(changes.map((c) => c.uuid)), runs.edited, predefined, deps.env()),
    scenario: scenarioResults(scenario, runs.scenario, runs.scenario_outcomes),
    assertions,
    passed: assertions.length ? assertions.every((a) => a.pass) : null,
    notes: notesOf({
      task,
      current,
      edited,
      loaded,
      groups,
      worlds: [runs.recorded, runs.current, runs.edited, ...(runs.scenario ? [runs.scenario] : [])],
      scenario: scenario.length > 0,
    }),
  };
}
