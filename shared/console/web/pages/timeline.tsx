import { useRef, useState } from 'preact/hooks';
import { clock, dateTime } from '../format.ts';
import type { FinalShifts } from '../types.ts';

type Shift = FinalShifts['shifts'][number];

/** A colour per person (the same person, the same colour, on every page). */
function hue(uid: number): number {
  return (uid * 137) % 360;
}

const QUARTER = 900;

/** An instant on the bar, rounded to a quarter of an hour, kept within the window. */
function instantAt(bar: HTMLElement, clientX: number, from: number, to: number): number {
  const box = bar.getBoundingClientRect();
  const share = Math.min(1, Math.max(0, (clientX - box.left) / box.width));
  return Math.round((from + share * (to - from)) / QUARTER) * QUARTER;
}

export interface Span {
  start: number;
  end: number;
}

/**
 * The final rotation of a window as one bar: a segment per shift (coloured by person; gaps marked),
 * day ticks under it. Dragging across the bar selects a span (whole quarters of an hour), handed to
 * `onSelect`: the page offers an override for it. Each shift is listed in text below the bar too, so
 * nothing depends on seeing the colours or using a pointer.
 */
export function Timeline({
  final,
  names,
  selection,
  onSelect,
}: {
  final: FinalShifts;
  names: (uid: number) => string;
  selection?: Span;
  onSelect?: (span: Span) => void;
}) {
  const { from, to } = final;
  const bar = useRef<HTMLDivElement>(null);
  const [dragFrom, setDragFrom] = useState<number>();
  const [dragTo, setDragTo] = useState<number>();
  const pct = (t: number) => `${((Math.min(Math.max(t, from), to) - from) / (to - from)) * 100}%`;
  const width = (a: number, b: number) => `${((Math.min(b, to) - Math.max(a, from)) / (to - from)) * 100}%`;
  const who = (s: Shift) => (s.uids.length ? s.uids.map(names).join(', ') : 'nobody on call');
  const days: number[] = [];
  for (let d = Math.ceil(from / 86_400) * 86_400; d < to; d += 86_400) days.push(d);
  const shown =
    dragFrom !== undefined && dragTo !== undefined
      ? { start: Math.min(dragFrom, dragTo), end: Math.max(dragFrom, dragTo) }
      : selection;
  const down = (e: PointerEvent) => {
    if (!onSelect || !bar.current) return;
    bar.current.setPointerCapture(e.pointerId);
    const t = instantAt(bar.current, e.clientX, from, to);
    setDragFrom(t);
    setDragTo(t);
  };
  const move = (e: PointerEvent) => {
    if (dragFrom === undefined || !bar.current) return;
    setDragTo(instantAt(bar.current, e.clientX, from, to));
  };
  const up = (e: PointerEvent) => {
    if (dragFrom === undefined || !bar.current) return;
    const t = instantAt(bar.current, e.clientX, from, to);
    const span = { start: Math.min(dragFrom, t), end: Math.max(dragFrom, t) };
    setDragFrom(undefined);
    setDragTo(undefined);
    if (span.end > span.start) onSelect?.(span);
  };
  return (
    <figure class="timeline">
      <div
        ref={bar}
        class={`bar${onSelect ? ' selectable' : ''}`}
        data-testid="timeline-bar"
        onPointerDown={down}
        onPointerMove={move}
        onPointerUp={up}
      >
        {final.shifts.map((s) => (
          <div
            key={s.start}
            class={`seg${s.uids.length ? '' : ' gap'}`}
            style={{
              left: pct(s.start),
              width: width(s.start, s.end),
              ...(s.uids.length ? { background: `hsl(${hue(s.uids[0])} 55% 55%)` } : {}),
            }}
            title={`${who(s)}: ${dateTime(s.start)} to ${dateTime(s.end)}`}
          >
            <span>{who(s)}</span>
          </div>
        ))}
        {shown && (
          <div
            class="selection"
            style={{ left: pct(shown.start), width: width(shown.start, shown.end) }}
            aria-hidden="true"
          />
        )}
      </div>
      <div class="ticks" aria-hidden="true">
        {days.map((d) => (
          <span key={d} style={{ left: pct(d) }}>
            {dateTime(d).slice(5, 10)}
          </span>
        ))}
      </div>
      <figcaption>
        <details>
          <summary>
            {final.shifts.length} shifts, {final.gaps.length} gaps, {final.coverage_pct}% covered
          </summary>
          <ol class="shifts">
            {final.shifts.map((s) => (
              <li key={s.start} class={s.uids.length ? '' : 'gap'}>
                {dateTime(s.start)} – {clock(s.end)} ({dateTime(s.end).slice(0, 10)}): {who(s)}
                <span class="muted">
                  {' '}
                  {s.source.kind === 'layer'
                    ? `layer ${s.source.name}`
                    : s.source.kind === 'override'
                      ? `override ${s.source.override}`
                      : s.source.kind}
                </span>
              </li>
            ))}
          </ol>
        </details>
      </figcaption>
    </figure>
  );
}
