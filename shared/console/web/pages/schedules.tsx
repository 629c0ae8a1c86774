import { useState } from 'preact/hooks';
import { del, get, post, serviceNow } from '../api.ts';
import { dateTime } from '../format.ts';
import { href } from '../router.ts';
import type { FinalShifts, OncallNow, ScheduleList, ScheduleShown } from '../types.ts';
import { ErrorBox, Loaded, Notice, PageHead, Time, useAsync } from '../ui.tsx';
import { type Span, Timeline } from './timeline.tsx';

type Schedule = ScheduleShown['schedule'];

const DAY = 86_400;
const pad = (n: number) => String(n).padStart(2, '0');

/** `<input type="datetime-local">` value of an instant, in this browser's time zone. */
function localInput(t: number): string {
  const d = new Date(t * 1000);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** GET /schedule/list: the schedules the person may read. */
export function SchedulesPage() {
  const state = useAsync(() => get<ScheduleList>('/schedule/list', { limit: 100 }), 'schedules');
  return (
    <main id="main">
      <PageHead title="On-call schedules" sub="Who is on call, now and for the next two weeks" />
      <Loaded state={state}>
        {(d) =>
          d.schedules.length === 0 ? (
            <p class="empty">No schedule you may read.</p>
          ) : (
            <table class="grid">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Your access</th>
                  <th>Tasks naming it</th>
                  <th>Changed</th>
                </tr>
              </thead>
              <tbody>
                {d.schedules.map((s) => (
                  <tr key={s.id}>
                    <td>
                      <a href={href('schedules', s.id)}>{s.name}</a>
                    </td>
                    <td>{s.access === 'rw' ? 'read and change' : 'read'}</td>
                    <td>{s.tasks}</td>
                    <td>
                      <Time s={s.updated_at} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loaded>
    </main>
  );
}

function Layers({ schedule }: { schedule: Schedule }) {
  return (
    <section class="card">
      <h2>Layers (top first)</h2>
      <table class="grid">
        <thead>
          <tr>
            <th>Layer</th>
            <th>Starts</th>
            <th>Turn</th>
            <th>People (in turn)</th>
            <th>On call only</th>
          </tr>
        </thead>
        <tbody>
          {[...schedule.layers].reverse().map((l) => (
            <tr key={l.name}>
              <td>{l.name}</td>
              <td>
                {l.start.replace('T', ' ')} <span class="muted">{l.time_zone ?? schedule.time_zone}</span>
              </td>
              <td>
                every {l.turn.every} {l.turn.unit}
                {l.turn.every > 1 ? 's' : ''}
              </td>
              <td>{l.users.map((u) => `uid ${u}`).join(', ')}</td>
              <td>
                {l.restrictions?.length
                  ? l.restrictions.map((r) => `days ${r.days.join(',')} ${r.from}–${r.to}`).join('; ')
                  : 'all the time'}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="muted">
        Fallback: {schedule.fallback.length ? schedule.fallback.map((u) => `uid ${u}`).join(', ') : 'none'} ·
        version {schedule.version} in force since <Time s={schedule.effective_from} relative={false} />
      </p>
    </section>
  );
}

/** An override for a span: chosen on the timeline (or typed), a person, saved. */
function OverrideForm({
  schedule,
  span,
  people,
  onSaved,
}: {
  schedule: Schedule;
  span?: Span;
  people: { uid: number; name: string }[];
  onSaved: () => void;
}) {
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const seconds = (name: string) => Math.floor(new Date(String(form.get(name))).getTime() / 1000);
    setBusy(true);
    setError(undefined);
    setDone('');
    try {
      await post('/schedule/override', {
        id: schedule.id,
        start: seconds('start'),
        end: seconds('end'),
        user: Number(form.get('user')),
      });
      setDone('Override added.');
      onSaved();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const key = span ? `${span.start}-${span.end}` : 'none';
  return (
    <form class="override" onSubmit={submit} key={key}>
      <h3>Add an override</h3>
      <p class="muted">Drag across the timeline to choose the span, or type it.</p>
      <label>
        From
        <input
          name="start"
          type="datetime-local"
          required
          defaultValue={span ? localInput(span.start) : ''}
        />
      </label>
      <label>
        To
        <input name="end" type="datetime-local" required defaultValue={span ? localInput(span.end) : ''} />
      </label>
      <label>
        On call
        <select name="user" required aria-label="Person on call">
          {people.map((p) => (
            <option key={p.uid} value={p.uid}>
              {p.name} (uid {p.uid})
            </option>
          ))}
        </select>
      </label>
      <button type="submit" class="primary" disabled={busy}>
        Add override
      </button>
      {done && <Notice>{done}</Notice>}
      {error !== undefined && <ErrorBox error={error} />}
    </form>
  );
}

function Overrides({ schedule, onChanged }: { schedule: Schedule; onChanged: () => void }) {
  const [error, setError] = useState<unknown>();
  const remove = async (id: number) => {
    setError(undefined);
    try {
      await del('/schedule/override', { id: schedule.id, override_id: id });
      onChanged();
    } catch (err) {
      setError(err);
    }
  };
  return (
    <section class="card">
      <h2>Overrides not yet ended</h2>
      {schedule.overrides.length === 0 ? (
        <p class="empty">No override.</p>
      ) : (
        <ul class="list">
          {schedule.overrides.map((o) => (
            <li key={o.id}>
              uid {o.user}: {dateTime(o.start)} to {dateTime(o.end)}{' '}
              <button type="button" onClick={() => void remove(o.id)}>
                Remove override {o.id}
              </button>
            </li>
          ))}
        </ul>
      )}
      {error !== undefined && <ErrorBox error={error} />}
    </section>
  );
}

/** A schedule: who is on call now, its layers, the final rotation of the next 14 days, overrides. */
export function SchedulePage({ id }: { id: number }) {
  const [round, setRound] = useState(0);
  const [span, setSpan] = useState<Span>();
  const from = Math.floor(serviceNow() / 900) * 900;
  const state = useAsync(
    () =>
      Promise.all([
        get<ScheduleShown>('/schedule/show', { id }),
        get<FinalShifts>('/schedule/final', { id, from, to: from + 14 * DAY }),
        get<OncallNow>('/schedule/oncall', { id }),
      ]),
    `schedule ${id} ${round}`,
  );
  const reload = () => {
    setSpan(undefined);
    setRound((r) => r + 1);
  };
  return (
    <main id="main">
      <Loaded state={state}>
        {([{ schedule }, final, now]) => {
          const names = new Map(final.people.map((p) => [p.uid, p.username]));
          for (const u of now.users) names.set(u.uid, u.username);
          const name = (uid: number) => names.get(uid) ?? `uid ${uid}`;
          const people = [...new Set([...schedule.layers.flatMap((l) => l.users), ...schedule.fallback])].map(
            (uid) => ({ uid, name: name(uid) }),
          );
          return (
            <>
              <PageHead
                title={schedule.name}
                sub={
                  <>
                    Schedule #{schedule.id} · {schedule.time_zone} · named by {schedule.tasks} task
                    {schedule.tasks === 1 ? '' : 's'}
                  </>
                }
              />
              <section class="card oncall-now" aria-label="On call now">
                <h2>On call now</h2>
                <p>
                  {now.users.length ? now.users.map((u) => u.username).join(', ') : 'Nobody (a gap)'}{' '}
                  <span class="muted">
                    {now.source.kind === 'layer' ? `layer ${now.source.name}` : now.source.kind}, until{' '}
                    {dateTime(now.shift.end)}
                  </span>
                </p>
              </section>
              <section class="card">
                <h2>The next 14 days</h2>
                <Timeline final={final} names={name} selection={span} onSelect={setSpan} />
                <OverrideForm schedule={schedule} span={span} people={people} onSaved={reload} />
              </section>
              <Layers schedule={schedule} />
              <Overrides schedule={schedule} onChanged={reload} />
            </>
          );
        }}
      </Loaded>
    </main>
  );
}
