import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.ts';
import { checkWindow, configErrors, normalizeConfig, parseConfig } from './rules.ts';

const layer = { name: 'l', start: '2026-03-02T09:00', turn: { every: 1, unit: 'day' }, users: [1, 2] };

describe('schedule rules', () => {
  it('names every unknown zone and impossible start, each by its field', () => {
    expect(
      configErrors({
        time_zone: 'Europe/Atlantis',
        layers: [layer, { ...layer, time_zone: 'Nowhere/Else', start: '2026-02-29T09:00' }],
      }),
    ).toEqual([
      { field: 'time_zone', message: 'must be an IANA time zone (e.g. Europe/London)' },
      { field: 'layers.1.time_zone', message: 'must be an IANA time zone (e.g. Europe/London)' },
      { field: 'layers.1.start', message: 'must be a real date and time' },
    ]);
    expect(
      configErrors({ time_zone: 'Asia/Shanghai', layers: [{ ...layer, start: '2028-02-29T23:59' }] }),
    ).toEqual([]);
  });

  it('stores the configuration without unknown fields, with the coverage horizon defaulted and fallback distinct', () => {
    const config = normalizeConfig({
      time_zone: 'UTC',
      layers: [{ ...layer, extra: 1, restrictions: [{ days: [5, 1], from: '09:00', to: '24:00' }] }],
      fallback: [3, 3, 4],
      coverage: { alarm_task_id: 100001 },
      junk: true,
    });
    expect(config).toEqual({
      time_zone: 'UTC',
      layers: [
        {
          name: 'l',
          start: '2026-03-02T09:00',
          turn: { every: 1, unit: 'day' },
          users: [1, 2],
          restrictions: [{ days: [1, 5], from: '09:00', to: '24:00' }],
        },
      ],
      fallback: [3, 4],
      coverage: { horizon_days: 14, alarm_task_id: 100001 },
    });
    expect(() => parseConfig({ time_zone: 'Mars/Base', layers: [layer] })).toThrow(ValidationError);
  });

  it('takes windows of at most 90 days that end after they start', () => {
    expect(() => checkWindow(100, 100)).toThrow('to must be after from');
    expect(() => checkWindow(0, 90 * 86_400 + 1)).toThrow('to must be at most 90 days after from');
    expect(() => checkWindow(0, 90 * 86_400)).not.toThrow();
  });
});
