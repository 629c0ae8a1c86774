import { useEffect, useRef, useState } from 'preact/hooks';
import { get, getFilled } from '../api.ts';
import { clock, compact, LEVELS, OUTCOMES, outcomeLabel, plural } from '../format.ts';
import { href, navigate, type Route } from '../router.ts';
import type { AlarmList, AlarmView } from '../types.ts';
import { ErrorBox, LevelBadge, Loading, More, OutcomeBadge, Time, useInterval } from '../ui.tsx';
import { TaskHead } from './task.tsx';

/** How often the live list asks for new alarms. */
export const POLL_MS = 3000;
const PAGE = 50;
/** Pages one poll reads at most to catch up with a burst. */
const MAX_CATCH_UP = 4;

/**
 * A task's alarms, newest first, live: the first page is read again every few seconds and new alarms
 * are put on top (highlighted, and announced to screen readers); older pages load on demand.
 */
export function AlarmsPage({ taskId, route }: { taskId: number; route: Route }) {
  const level = route.query.get('level') ?? '';
  const outcome = route.query.get('outcome') ?? '';
  const filter = { task_id: taskId, level: level || undefined, outcome: outcome || undefined };
  const key = JSON.stringify(filter);
  const [alarms, setAlarms] = useState<AlarmView[]>([]);
  const [fresh, setFresh] = useState<Set<string>>(new Set());
  const [cursor, setCursor] = useState('');
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<unknown>();
  const [live, setLive] = useState(true);
  const [checked, setChecked] = useState(0);
  const [announce, setAnnounce] = useState('');
  const known = useRef(new Set<string>());
  const generation = useRef(0);

  useEffect(() => {
    const gen = ++generation.current;
    known.current = new Set();
    setAlarms([]);
    setFresh(new Set());
    setCursor('');
    setLoading(true);
    setError(undefined);
    getFilled<AlarmList>('/alarmtask/alarms', filter, 'alarms', PAGE)
      .then((page) => {
        if (gen !== generation.current) return;
        for (const a of page.alarms) known.current.add(a.uuid);
        setAlarms(page.alarms);
        setCursor(page.next_cursor);
        setChecked(Date.now());
      })
      .catch((err: unknown) => gen === generation.current && setError(err))
      .finally(() => gen === generation.current && setLoading(false));
  }, [key]);

  /**
   * The newest alarms: the first page, and the next ones while every alarm on them is new (a burst),
   * up to MAX_CATCH_UP pages. When even those do not reach a known alarm, the list restarts from
   * what was read (older pages load from there), so it never has a hole.
   */
  const poll = async () => {
    const gen = generation.current;
    try {
      let page = await get<AlarmList>('/alarmtask/alarms', { ...filter, limit: PAGE });
      const read = [...page.alarms];
      for (
        let n = 1;
        n < MAX_CATCH_UP && page.next_cursor && page.alarms.every((a) => !known.current.has(a.uuid));
        n++
      ) {
        page = await get<AlarmList>('/alarmtask/alarms', {
          ...filter,
          limit: PAGE,
          cursor: page.next_cursor,
        });
        read.push(...page.alarms);
      }
      if (gen !== generation.current) return;
      const seen = new Set<string>();
      const added = read.filter((a) => !known.current.has(a.uuid) && !seen.has(a.uuid) && seen.add(a.uuid));
      setError(undefined);
      setChecked(Date.now());
      if (added.length === 0) return;
      const joined = read.some((a) => known.current.has(a.uuid)) || !page.next_cursor;
      if (joined) {
        // A log item written late can hold an alarm older than ones shown: keep the list in time order.
        setAlarms((old) => [...added, ...old].sort((a, b) => b.created_at - a.created_at));
      } else {
        known.current = new Set();
        setAlarms(read);
        setCursor(page.next_cursor);
      }
      for (const a of added) known.current.add(a.uuid);
      setFresh(new Set(added.map((a) => a.uuid)));
      setAnnounce(
        `${plural(added.length, 'new alarm')}${joined ? '' : ' (a burst: the list restarts from the newest)'}`,
      );
    } catch (err) {
      if (gen === generation.current) setError(err);
    }
  };
  useInterval(poll, POLL_MS, live && !loading);

  const older = async () => {
    const gen = generation.current;
    setLoading(true);
    try {
      const page = await getFilled<AlarmList>('/alarmtask/alarms', { ...filter, cursor }, 'alarms', PAGE);
      if (gen !== generation.current) return;
      const added = page.alarms.filter((a) => !known.current.has(a.uuid));
      for (const a of added) known.current.add(a.uuid);
      setAlarms((old) => [...old, ...added]);
      setCursor(page.next_cursor);
    } catch (err) {
      if (gen === generation.current) setError(err);
    } finally {
      if (gen === generation.current) setLoading(false);
    }
  };

  const setFilter = (name: string, value: string) =>
    navigate(href('tasks', taskId, 'alarms', { level, outcome, [name]: value }));

  return (
    <main id="main">
      <TaskHead taskId={taskId} current="alarms" title="Alarms" />
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Level
          <select value={level} onChange={(e) => setFilter('level', e.currentTarget.value)}>
            <option value="">any</option>
            {LEVELS.map((name, i) => (
              <option key={name} value={i}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Outcome
          <select value={outcome} onChange={(e) => setFilter('outcome', e.currentTarget.value)}>
            <option value="">any</option>
            {OUTCOMES.map((o) => (
              <option key={o} value={o}>
                {outcomeLabel(o)}
              </option>
            ))}
          </select>
        </label>
        <button type="button" aria-pressed={live} onClick={() => setLive(!live)}>
          {live ? 'Pause live updates' : 'Resume live updates'}
        </button>
        <span class={`live ${live ? 'on' : ''}`}>
          {live ? `Live · checked ${checked ? clock(Math.floor(checked / 1000)) : '…'}` : 'Paused'}
        </span>
      </form>
      <p class="sr-only" aria-live="polite">
        {announce}
      </p>
      {error !== undefined && <ErrorBox error={error} onRetry={poll} />}
      {alarms.length === 0 && loading && <Loading what="Loading alarms" />}
      {alarms.length === 0 && !loading && error === undefined && (
        <p class="empty">
          {cursor
            ? 'None found yet among the most recent alarms: load more to search further back.'
            : `No alarm in the last 31 days${level || outcome ? ' with these filters' : ''}. New ones appear here.`}
        </p>
      )}
      {alarms.length > 0 && (
        <table class="grid alarms">
          <thead>
            <tr>
              <th scope="col">Processed</th>
              <th scope="col">Level</th>
              <th scope="col">Outcome</th>
              <th scope="col">Batch</th>
              <th scope="col">Content</th>
              <th scope="col">
                <span class="sr-only">Trace</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {alarms.map((a) => (
              <tr key={a.uuid} class={fresh.has(a.uuid) ? 'fresh' : undefined} data-uuid={a.uuid}>
                <td>
                  <Time s={a.created_at} />
                </td>
                <td>
                  <LevelBadge level={a.level} />
                  {a.reported_level !== a.level && (
                    <span class="muted"> (reported {LEVELS[a.reported_level]})</span>
                  )}
                </td>
                <td>
                  <OutcomeBadge outcome={a.outcome} /> <span class="muted">{a.decision}</span>
                </td>
                <td>
                  {a.batch ? (
                    <>
                      #{a.batch}
                      {a.k !== undefined && <span class="muted"> · k {a.k}</span>}
                    </>
                  ) : (
                    <span class="muted">—</span>
                  )}
                </td>
                <td class="content">
                  {a.ctn ? <code>{compact(a.ctn, 140)}</code> : <span class="muted">not stored</span>}
                </td>
                <td>
                  <a href={href('tasks', taskId, 'alarms', a.uuid)}>Trace</a>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <More cursor={cursor} loading={loading} onMore={older} />
    </main>
  );
}
