import { describe, expect, it } from 'vitest';
import { toPinyin } from './model.ts';

describe('toPinyin (behaviour §4)', () => {
  it.each([
    ['日志中心', 'rizhizhongxin'],
    ['吕布', 'lvbu'],
    ['绿色ABC', 'lvseABC'],
    ['Infra', 'Infra'],
    ['', ''],
  ])('%s -> %s', (name, expected) => {
    expect(toPinyin(name)).toBe(expected);
  });
});
