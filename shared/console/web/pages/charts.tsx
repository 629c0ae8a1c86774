import { get, serviceNow } from '../api.ts';
import { clock, dateTime, LEVELS, OUTCOMES, outcomeLabel } from '../format.ts';
import { href, navigate, type Route } from '../router.ts';
import type { Stats } from '../types.ts';
import { Loaded, useAsync, useInterval } from '../ui.tsx';
import { TaskHead } from './task.tsx';

const WINDOWS: [number, string][] = [
  [60, 'last hour'],
  [360, 'last 6 hours'],
  [1440, 'last 24 hours'],
];

interface Series {
  name: string;
  cls: string;
}

interface Bin {
  minute: number;
  values: number[];
}

const W = 960;
const H = 220;
const LEFT = 44;
const BOTTOM = 22;
const TOP = 8;

function niceMax(n: number): number {
  if (n <= 5) return Math.max(1, n);
  const p = 10 ** Math.floor(Math.log10(n));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= n) return m * p;
  return n;
}

/** A stacked bar per minute, hand-drawn in SVG; a table of the same numbers for screen readers. */
function StackedBars({
  id,
  title,
  series,
  bins,
}: {
  id: string;
  title: string;
  series: Series[];
  bins: Bin[];
}) {
  const totals = bins.map((b) => b.values.reduce((x, y) => x + y, 0));
  const max = niceMax(Math.max(0, ...totals));
  const plotW = W - LEFT - 8;
  const plotH = H - TOP - BOTTOM;
  const bw = plotW / Math.max(1, bins.length);
  const y = (v: number) => TOP + plotH - (v / max) * plotH;
  const labelEvery = Math.max(1, Math.ceil(bins.length / 8));
  const sums = series.map((_, k) => bins.reduce((s, b) => s + (b.values[k] ?? 0), 0));
  const busy = bins.filter((_, i) => totals[i] > 0);
  return (
    <figure class="card chart">
      <figcaption id={`${id}-title`}>
        <h2>{title}</h2>
        <ul class="legend">
          {series.map((s, k) => (
            <li key={s.name}>
              <span class={`swatch ${s.cls}`} aria-hidden="true" /> {s.name} <strong>{sums[k]}</strong>
            </li>
          ))}
        </ul>
      </figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby={`${id}-title`} preserveAspectRatio="none">
        <title>{title}</title>
        {[0, max / 2, max].map((v) => (
          <g key={v} class="axis">
            <line x1={LEFT} x2={W - 8} y1={y(v)} y2={y(v)} />
            <text x={LEFT - 6} y={y(v) + 4} text-anchor="end">
              {Number.isInteger(v) ? v : v.toFixed(1)}
            </text>
          </g>
        ))}
        {bins.map((b, i) => {
          let base = 0;
          return (
            <g key={b.minute}>
              {totals[i] > 0 && (
                <title>
                  {clock(b.minute)}:{' '}
                  {series
                    .map((s, k) => (b.values[k] ? `${b.values[k]} ${s.name}` : ''))
                    .filter(Boolean)
                    .join(', ')}
                </title>
              )}
              {b.values.map((v, k) => {
                if (!v) return null;
                const top = y(base + v);
                const height = y(base) - top;
                base += v;
                return (
                  <rect
                    key={series[k].name}
                    class={series[k].cls}
                    x={LEFT + i * bw + (bw > 3 ? 0.5 : 0)}
                    width={Math.max(0.8, bw > 3 ? bw - 1 : bw)}
                    y={top}
                    height={height}
                  />
                );
              })}
              {i % labelEvery === 0 && (
                <text class="axis" x={LEFT + i * bw} y={H - 6}>
                  {clock(b.minute)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <details>
        <summary>The numbers ({busy.length} busy minutes)</summary>
        <table class="grid small">
          <thead>
            <tr>
              <th scope="col">Minute</th>
              {series.map((s) => (
                <th scope="col" key={s.name}>
                  {s.name}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {busy.map((b) => (
              <tr key={b.minute}>
                <th scope="row">{dateTime(b.minute)}</th>
                {series.map((s, k) => (
                  <td key={s.name}>{b.values[k] ?? 0}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}

/** Alarms per minute of a task by level and by outcome (GET /alarmtask/alarms/stats), refreshed every 15 s. */
export function ChartsPage({ taskId, route }: { taskId: number; route: Route }) {
  const minutes = Number(route.query.get('minutes') ?? 60) || 60;
  // A window that ends at a given time (an incident's, linked from a trace) stays put; else it follows now.
  const end = Number(route.query.get('to')) || undefined;
  const state = useAsync(() => {
    const to = end ?? serviceNow();
    return get<Stats>('/alarmtask/alarms/stats', { task_id: taskId, from: to - minutes * 60, to });
  }, `stats ${taskId} ${minutes} ${end}`);
  useInterval(state.reload, 15_000, end === undefined);

  return (
    <main id="main">
      <TaskHead taskId={taskId} current="charts" title="Charts" />
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Window
          <select
            value={minutes}
            onChange={(e) =>
              navigate(href('tasks', taskId, 'charts', { minutes: e.currentTarget.value, to: end }))
            }
          >
            {WINDOWS.map(([m, label]) => (
              <option key={m} value={m}>
                {label}
              </option>
            ))}
          </select>
        </label>
        {end !== undefined && (
          <>
            <span class="live">until {dateTime(end)}</span>
            <a class="button" href={href('tasks', taskId, 'charts', { minutes })}>
              Follow now
            </a>
          </>
        )}
      </form>
      <Loaded state={state}>
        {(stats) => {
          const byMinute = new Map(stats.minutes.map((m) => [m.minute, m]));
          const first = Math.floor(stats.window.from / 60) * 60;
          const last = Math.floor(stats.window.to / 60) * 60;
          const bins: { minute: number; levels: number[]; outcomes: Record<string, number> }[] = [];
          for (let m = first; m <= last; m += 60) {
            bins.push(byMinute.get(m) ?? { minute: m, levels: [0, 0, 0, 0], outcomes: {} });
          }
          return (
            <>
              {!stats.complete && (
                <p class="warn">
                  Too many alarms to count them all in one request: counting goes from the newest minute back,
                  so the oldest minutes shown are counted in part (narrow the window to see them whole).
                </p>
              )}
              <StackedBars
                id="by-level"
                title="Alarms per minute by level"
                series={LEVELS.map((name, k) => ({ name, cls: `s-level-${k}` }))}
                bins={bins.map((b) => ({ minute: b.minute, values: b.levels }))}
              />
              <StackedBars
                id="by-outcome"
                title="Alarms per minute by outcome"
                series={OUTCOMES.map((o) => ({ name: outcomeLabel(o), cls: `s-outcome-${o}` }))}
                bins={bins.map((b) => ({
                  minute: b.minute,
                  values: OUTCOMES.map((o) => b.outcomes[o] ?? 0),
                }))}
              />
            </>
          );
        }}
      </Loaded>
    </main>
  );
}
