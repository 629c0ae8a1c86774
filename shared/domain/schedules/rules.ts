/**
 * Pure rules of the schedule API (API guide §18): what the schemas cannot word, and the stored form
 * of a validated configuration. No I/O.
 */
import { type FieldError, ValidationError } from '../errors.ts';
import type { Coverage, Layer, Restriction, ScheduleConfig } from './model.ts';
import { DAY_SECONDS, MAX_WINDOW_DAYS } from './model.ts';
import { isTimeZone } from './zone.ts';

// biome-ignore lint/suspicious/noExplicitAny: request bodies are checked by the schema before use
type Raw = Record<string, any>;

const uniq = <T>(xs: T[]): T[] => [...new Set(xs)];

/** A real calendar date and time (`2026-02-30T09:00` is not). */
function realLocal(text: string): boolean {
  const [date, time] = text.split('T');
  const [y, m, d] = date.split('-').map(Number);
  const [h, mi] = time.split(':').map(Number);
  const back = new Date(Date.UTC(y, m - 1, d, h, mi));
  return (
    y >= 1970 &&
    back.getUTCFullYear() === y &&
    back.getUTCMonth() === m - 1 &&
    back.getUTCDate() === d &&
    h < 24 &&
    mi < 60
  );
}

/** Every problem of a configuration the schema let through, each naming its field. */
export function configErrors(body: Raw): FieldError[] {
  const errors: FieldError[] = [];
  const zone = (value: unknown, field: string) => {
    if (typeof value === 'string' && !isTimeZone(value))
      errors.push({ field, message: 'must be an IANA time zone (e.g. Europe/London)' });
  };
  zone(body.time_zone, 'time_zone');
  (Array.isArray(body.layers) ? body.layers : []).forEach((l: Raw, i: number) => {
    if (typeof l !== 'object' || l === null) return;
    zone(l.time_zone, `layers.${i}.time_zone`);
    if (typeof l.start === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(l.start) && !realLocal(l.start))
      errors.push({ field: `layers.${i}.start`, message: 'must be a real date and time' });
  });
  return errors;
}

/** 422 unless `[from, to)` is a window of at most 90 days with `to` after `from`. */
export function checkWindow(from: number, to: number): void {
  if (to <= from) throw ValidationError.of('to', 'must be after from');
  if (to - from > MAX_WINDOW_DAYS * DAY_SECONDS)
    throw ValidationError.of('to', `must be at most ${MAX_WINDOW_DAYS} days after from`);
}

/** 422 listing every problem, else the configuration as stored. */
export function parseConfig(body: Raw): ScheduleConfig {
  const errors = configErrors(body);
  if (errors.length) throw new ValidationError(errors);
  return normalizeConfig(body);
}

function normRestrictions(rs: Raw[] | undefined): Restriction[] | undefined {
  if (!rs?.length) return undefined;
  return rs.map((r) => ({ days: [...(r.days as number[])].sort(), from: r.from, to: r.to }));
}

function normLayer(l: Raw): Layer {
  const restrictions = normRestrictions(l.restrictions);
  return {
    name: l.name,
    ...(l.time_zone ? { time_zone: l.time_zone } : {}),
    start: l.start,
    turn: { every: l.turn.every, unit: l.turn.unit },
    users: [...(l.users as number[])],
    ...(restrictions ? { restrictions } : {}),
  };
}

/** The stored configuration of a validated body (unknown fields dropped, defaults applied). */
export function normalizeConfig(body: Raw): ScheduleConfig {
  const fallback = uniq((body.fallback ?? []) as number[]);
  let coverage: Coverage | undefined;
  if (body.coverage) {
    const required = normRestrictions(body.coverage.required);
    coverage = {
      ...(required ? { required } : {}),
      horizon_days: body.coverage.horizon_days ?? 14,
      alarm_task_id: body.coverage.alarm_task_id,
    };
  }
  return {
    time_zone: body.time_zone,
    layers: (body.layers as Raw[]).map(normLayer),
    ...(fallback.length ? { fallback } : {}),
    ...(coverage ? { coverage } : {}),
  };
}

/** Every user a configuration names (layers, fallback), to check they exist. */
export function configUids(c: ScheduleConfig): number[] {
  return uniq([...c.layers.flatMap((l) => l.users), ...(c.fallback ?? [])]);
}
