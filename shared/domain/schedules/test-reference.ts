/**
 * A reference evaluator of on-call schedules for the tests, written apart from timeline.ts and
 * zone.ts (it shares no code with them, only their types): it walks the clock minute by minute, reads
 * each zone's wall clock at every minute from Intl, and finds a local time's instant by looking the
 * wall-clock minute up in that walk (the first minute showing it: the first occurrence of a repeated
 * time; for a skipped time, the last minute before the jump plus the distance to it: the offset in
 * force before the gap). Whole-minute times only, which is what its tests use.
 */
import type { Override, ScheduleVersion, Source } from './model.ts';

const MINUTE = 60;

/** One zone's wall clock over a stretch of minutes. */
class WallClock {
  /** Wall-clock minute (minutes since the local 1970-01-01 00:00) -> first instant showing it. */
  private readonly first = new Map<number, number>();
  /** Wall-clock minute shown at each walked instant, by index. */
  private readonly walls: number[] = [];

  constructor(
    zone: string,
    private readonly from: number,
    to: number,
  ) {
    const f = new Intl.DateTimeFormat('en-GB', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    for (let t = from; t < to; t += MINUTE) {
      // en-GB: "dd/mm/yyyy, hh:mm"
      const text = f.format(new Date(t * 1000));
      const [date, time] = text.split(', ');
      const [dd, mm, yyyy] = date.split('/').map(Number);
      const [hh, mi] = time.split(':').map(Number);
      const wall = Math.round(Date.UTC(yyyy, mm - 1, dd) / 60_000) + hh * 60 + mi;
      this.walls.push(wall);
      if (!this.first.has(wall)) this.first.set(wall, t);
    }
  }

  /** The wall-clock minute at instant t (a walked minute). */
  wallAt(t: number): number {
    return this.walls[(t - this.from) / MINUTE];
  }

  /** The instant of a wall-clock minute. */
  instant(wall: number): number {
    const seen = this.first.get(wall);
    if (seen !== undefined) return seen;
    // Skipped: find the last wall minute shown before it, then carry on at that minute's offset.
    for (let back = 1; back <= 24 * 60; back++) {
      const before = this.first.get(wall - back);
      if (before !== undefined) return before + back * MINUTE;
    }
    throw new Error(`wall minute ${wall} is outside the walk`);
  }
}

const wallOf = (text: string) => {
  // YYYY-MM-DDTHH:MM
  const y = Number(text.slice(0, 4));
  const mo = Number(text.slice(5, 7));
  const d = Number(text.slice(8, 10));
  return (
    Math.round(Date.UTC(y, mo - 1, d) / 60_000) + Number(text.slice(11, 13)) * 60 + Number(text.slice(14, 16))
  );
};
const hhmm = (text: string) => Number(text.slice(0, 2)) * 60 + Number(text.slice(3, 5));

export interface ReferenceAnswer {
  uids: number[];
  source: Source;
}

/**
 * Who is on call at every minute of [from, to) (both whole minutes), by brute force. `walkFrom`
 * must lie before every layer's start and a day before `from`.
 */
export function referenceAnswers(
  versions: ScheduleVersion[],
  overrides: Override[],
  from: number,
  to: number,
  walkFrom: number,
): ReferenceAnswer[] {
  const clocks = new Map<string, WallClock>();
  const clock = (zone: string) => {
    let c = clocks.get(zone);
    if (!c) {
      c = new WallClock(zone, walkFrom, to + 16 * 86_400);
      clocks.set(zone, c);
    }
    return c;
  };
  const byTime = [...versions].sort((a, b) => a.effective_from - b.effective_from || a.version - b.version);
  // The hand-offs of every layer of every version, walked out in order until past `to`.
  const handoffs = byTime.map((v) =>
    v.layers.map((layer) => {
      const zone = layer.time_zone ?? v.time_zone;
      const c = clock(zone);
      const startWall = wallOf(layer.start);
      const out: number[] = [];
      for (let k = 0; ; k++) {
        const t =
          layer.turn.unit === 'hour'
            ? c.instant(startWall) + k * layer.turn.every * 3600
            : c.instant(startWall + k * layer.turn.every * (layer.turn.unit === 'week' ? 7 : 1) * 1440);
        out.push(t);
        if (t >= to) break;
      }
      return out;
    }),
  );
  const answers: ReferenceAnswer[] = [];
  for (let t = from; t < to; t += MINUTE) {
    let vi = 0;
    for (let i = 0; i < byTime.length; i++) if (byTime[i].effective_from <= t) vi = i;
    const v = byTime[vi];
    let best: Override | undefined;
    for (const o of overrides) if (o.start <= t && t < o.end && (!best || o.id > best.id)) best = o;
    if (best) {
      answers.push({ uids: [best.user], source: { kind: 'override', override: best.id } });
      continue;
    }
    let answer: ReferenceAnswer | undefined;
    for (let l = v.layers.length - 1; l >= 0 && !answer; l--) {
      const layer = v.layers[l];
      const starts = handoffs[vi][l];
      if (t < starts[0]) continue;
      let k = 0;
      while (starts[k + 1] <= t) k++;
      if (layer.restrictions?.length) {
        const c = clock(layer.time_zone ?? v.time_zone);
        const today = Math.floor(c.wallAt(t) / 1440);
        const inside = [today - 1, today].some((day) => {
          const weekday = ((new Date(day * 86_400_000).getUTCDay() + 6) % 7) + 1;
          return layer.restrictions?.some((r) => {
            if (!r.days.includes(weekday)) return false;
            const a = hhmm(r.from);
            const b = hhmm(r.to);
            const start = c.instant(day * 1440 + a);
            const end = c.instant((day + (b <= a ? 1 : 0)) * 1440 + b);
            return start <= t && t < end;
          });
        });
        if (!inside) continue;
      }
      answer = {
        uids: [layer.users[k % layer.users.length]],
        source: { kind: 'layer', layer: l, name: layer.name },
      };
    }
    if (!answer && v.fallback?.length) answer = { uids: [...v.fallback], source: { kind: 'fallback' } };
    answers.push(answer ?? { uids: [], source: { kind: 'none' } });
  }
  return answers;
}
