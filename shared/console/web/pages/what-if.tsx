/**
 * "What would this change do?": a configuration change replayed over the task's recorded alarms
 * before it is saved (POST /alarmtask/replay, read back with GET /alarmtask/replay while a large
 * window runs on its queue): the outcomes before and after, who would get how many messages, the
 * alarms the change decides otherwise and why, and the replay's id to save the change with.
 */
import { useState } from 'preact/hooks';
import { get, post } from '../api.ts';
import { plural } from '../format.ts';
import { href } from '../router.ts';
import type { ReplayAnswer, ReplayDone, ReplaySummary, TaskDetail } from '../types.ts';
import { ErrorBox, Loading, OutcomeBadge, Time } from '../ui.tsx';

/** The change first offered: the task's compression, as a partial update. */
const starter = (task: TaskDetail) =>
  JSON.stringify({ filter_fields: ['compress'], compress: task.compress }, null, 2);

const COUNTS: [keyof ReplaySummary, string][] = [
  ['notified', 'Notified'],
  ['deferred', 'Deferred (notified at the window’s end)'],
  ['compressed', 'Compressed away'],
  ['filtered', 'Filtered'],
  ['recovered', 'Recoveries'],
  ['stored', 'Stored only'],
  ['workflows_opened', 'Workflows opened'],
  ['upgrades', 'Upgrades'],
  ['delay_recoveries', 'Delay recoveries'],
  ['reminders', 'Reminders'],
  ['webhook_events', 'Webhook events'],
];

const perChannel = (m: Record<string, number>) =>
  Object.entries(m)
    .map(([ch, n]) => `${ch} ${n}`)
    .join(', ') || '—';

function Summary({ r }: { r: ReplayDone }) {
  const { recorded, current, edited } = r.summary;
  const channels = [...new Set([recorded, current, edited].flatMap((s) => Object.keys(s.messages)))].sort();
  const cell = (v: number | null | undefined) => (v === null || v === undefined ? '—' : v);
  return (
    <table class="grid small what-if-summary">
      <caption>Outcomes and messages</caption>
      <thead>
        <tr>
          <th scope="col" />
          <th scope="col">Recorded</th>
          <th scope="col">Saved configuration</th>
          <th scope="col">This change</th>
        </tr>
      </thead>
      <tbody>
        {COUNTS.map(([key, label]) => (
          <tr key={key}>
            <th scope="row">{label}</th>
            <td>{cell(recorded[key] as number | null)}</td>
            <td>{cell(current[key] as number | null)}</td>
            <td>{cell(edited[key] as number | null)}</td>
          </tr>
        ))}
        {channels.map((ch) => (
          <tr key={ch}>
            <th scope="row">Messages: {ch}</th>
            <td>{recorded.messages[ch] ?? 0}</td>
            <td>{current.messages[ch] ?? 0}</td>
            <td>{edited.messages[ch] ?? 0}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function People({ r }: { r: ReplayDone }) {
  if (r.people.length === 0) return <p class="muted">Nobody is messaged either way.</p>;
  return (
    <table class="grid small what-if-people">
      <caption>Messages per person</caption>
      <thead>
        <tr>
          <th scope="col">Person</th>
          <th scope="col">Before</th>
          <th scope="col">After</th>
        </tr>
      </thead>
      <tbody>
        {r.people.map((p) => (
          <tr key={p.uid}>
            <th scope="row">{p.username || `#${p.uid}`}</th>
            <td>{perChannel(p.before)}</td>
            <td>{perChannel(p.after)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Changes({ r, taskId }: { r: ReplayDone; taskId: number }) {
  if (r.changes_total === 0) return <p class="muted">The change decides every alarm as it was decided.</p>;
  return (
    <table class="grid small what-if-changes">
      <caption>
        {plural(r.changes_total, 'alarm')} decided otherwise
        {r.changes.length < r.changes_total ? ` (the first ${r.changes.length})` : ''}
      </caption>
      <thead>
        <tr>
          <th scope="col">Processed</th>
          <th scope="col">Was</th>
          <th scope="col">Would be</th>
          <th scope="col">Stage</th>
          <th scope="col">Why</th>
        </tr>
      </thead>
      <tbody>
        {r.changes.map((c) => (
          <tr key={c.uuid} data-uuid={c.uuid}>
            <td>
              <a href={href('tasks', taskId, 'alarms', c.uuid)}>
                <Time s={c.processed_at} relative={false} />
              </a>
            </td>
            <td>
              <OutcomeBadge outcome={c.recorded.result} />
            </td>
            <td>
              <OutcomeBadge outcome={c.edited.result} />
            </td>
            <td>{c.stage}</td>
            <td>
              {c.text}
              <span class="muted"> (was: {c.recorded_text})</span>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Result({ r, taskId }: { r: ReplayDone; taskId: number }) {
  const a = r.alarms;
  return (
    <div class="what-if-result">
      <p>
        Replayed {plural(a.replayable, 'alarm')} of {a.in_window} in the window
        {a.skipped > 0 ? ` (${a.skipped} could not be: their content was not stored, or has expired)` : ''}.
        The saved configuration reproduces {Math.round(r.fidelity.share * 1000) / 10}% of their recorded
        decisions
        {r.fidelity.mismatches_total > 0
          ? ` (${plural(r.fidelity.mismatches_total, 'mismatch', 'mismatches')})`
          : ''}
        .
      </p>
      <Summary r={r} />
      <People r={r} />
      <Changes r={r} taskId={taskId} />
      {r.samples.map((s) => (
        <figure key={s.scene} class="what-if-sample">
          <figcaption>
            A {s.scene} message on {s.channel}, as this change would send it
          </figcaption>
          <pre class="message">
            {s.message.title ? `${s.message.title}\n\n` : ''}
            {s.message.text}
          </pre>
        </figure>
      ))}
      {r.notes.length > 0 && (
        <ul class="muted notes">
          {r.notes.map((n) => (
            <li key={n}>{n}</li>
          ))}
        </ul>
      )}
      <p class="save-hint">
        To save this change, send it with <code>replay_id</code> <code>{r.replay_id}</code> to{' '}
        <code>PUT /alarmtask/updatefields</code> (or <code>/alarmtask/update</code>): the save is refused
        (409) if the change or the task differs from what was replayed.
      </p>
    </div>
  );
}

export function WhatIf({ task }: { task: TaskDetail }) {
  const [open, setOpen] = useState(false);
  const [text, setText] = useState(() => starter(task));
  const [last, setLast] = useState(500);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [result, setResult] = useState<ReplayDone>();

  const run = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    setResult(undefined);
    let config: Record<string, unknown>;
    try {
      config = JSON.parse(text) as Record<string, unknown>;
    } catch (err) {
      setError(new Error(`The change is not valid JSON: ${(err as Error).message}`));
      return;
    }
    setBusy(true);
    try {
      let answer = await post<ReplayAnswer>('/alarmtask/replay', { task_id: task.id, config, last });
      // A large window runs on the replay queue: read it back until it is done.
      while (answer.status === 'running') {
        await new Promise((r) => setTimeout(r, 1000));
        answer = await get<ReplayAnswer>('/alarmtask/replay', { replay_id: answer.replay_id });
      }
      if (answer.status === 'failed') throw new Error(`The replay failed: ${answer.error.msg}`);
      setResult(answer);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  if (!open)
    return (
      <div class="what-if">
        <button type="button" onClick={() => setOpen(true)}>
          What would this change do?
        </button>
      </div>
    );
  return (
    <section class="card what-if">
      <h3>What would this change do?</h3>
      <p class="muted">
        The task's recorded alarms replayed through the pipeline with the change, nothing sent and nothing
        saved. A partial change names its paths in <code>filter_fields</code> (as{' '}
        <code>PUT /alarmtask/updatefields</code>); a whole configuration replaces the task's (as{' '}
        <code>PUT /alarmtask/update</code>).
      </p>
      <form onSubmit={run}>
        <label class="block">
          Change
          <textarea
            name="change"
            rows={10}
            spellcheck={false}
            value={text}
            onInput={(e) => setText(e.currentTarget.value)}
          />
        </label>
        <label>
          Replay the last
          <input
            name="last"
            type="number"
            min={1}
            max={5000}
            class="narrow"
            value={last}
            onInput={(e) => setLast(Number(e.currentTarget.value))}
          />
          alarms
        </label>
        <div class="row">
          <button type="submit" class="primary" disabled={busy}>
            Replay
          </button>
          <button type="button" onClick={() => setOpen(false)}>
            Close
          </button>
        </div>
      </form>
      {busy && <Loading what="Replaying" />}
      {error !== undefined && <ErrorBox error={error} />}
      {result && <Result r={result} taskId={task.id} />}
    </section>
  );
}
