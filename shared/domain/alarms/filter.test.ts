import { describe, expect, it } from 'vitest';
import type { FilterConfig } from '../tasks/model.ts';
import type { Level } from '../../contracts/levels.ts';
import { applyFilter } from './filter.ts';

const alarm = (ctn: Record<string, unknown>, level: Level = 1) => ({
  ctn,
  level,
  notice_time: 1_700_000_000,
});
const hostIs = (host: string, level: number) => ({
  rule: [{ field: 'ctn.host', operator: 'eq', threshold: host }],
  level,
});

describe('applyFilter (API guide §9.3)', () => {
  const conditions = [
    hostIs('a', 3),
    hostIs('b', 9),
    { rule: [{ field: 'ctn.app', operator: 'isset' }], level: 0 },
  ];
  const white: FilterConfig = { enable: true, mode: 1, conditions, not_match: 1 };
  const black: FilterConfig = { enable: true, mode: 2, conditions, not_match: 0 };

  it.each<
    [
      string,
      FilterConfig | undefined,
      Record<string, unknown>,
      { keep: boolean; level: Level; matched: number },
    ]
  >([
    ['filter off keeps everything', undefined, { host: 'z' }, { keep: true, level: 1, matched: -1 }],
    [
      'disabled filter keeps everything',
      { ...white, enable: false },
      { host: 'z' },
      { keep: true, level: 1, matched: -1 },
    ],
    ['whitelist match keeps, level replaced', white, { host: 'a' }, { keep: true, level: 3, matched: 0 }],
    [
      'whitelist match with level 9 keeps the level',
      white,
      { host: 'b' },
      { keep: true, level: 1, matched: 1 },
    ],
    [
      'whitelist: the first match counts',
      white,
      { host: 'a', app: 'x' },
      { keep: true, level: 3, matched: 0 },
    ],
    [
      'whitelist later condition, level 0',
      white,
      { host: 'z', app: 'x' },
      { keep: true, level: 0, matched: 2 },
    ],
    ['whitelist no match rejects', white, { host: 'z' }, { keep: false, level: 1, matched: -1 }],
    ['blacklist match rejects', black, { host: 'a' }, { keep: false, level: 3, matched: 0 }],
    ['blacklist no match keeps', black, { host: 'z' }, { keep: true, level: 1, matched: -1 }],
  ])('%s', (_name, filter, ctn, expected) => {
    expect(applyFilter(filter, alarm(ctn))).toEqual(expected);
  });
});
