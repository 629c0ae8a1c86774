import { describe, expect, it } from 'vitest';
import { keys, PARTITION_PREFIXES, partitionPrefix } from './keys.ts';

describe('partition prefixes', () => {
  it('take the text up to the first #, or a whole constant value', () => {
    expect(partitionPrefix('TASK#12')).toBe('TASK#');
    expect(partitionPrefix('WHLOG#7#19876')).toBe('WHLOG#');
    expect(partitionPrefix('DEPTS')).toBe('DEPTS');
  });

  it('list the prefix of every table key a key builder makes, and nothing else', () => {
    // Builders take numbers, strings or a task's {id, name, pinyin}: this one argument is all of them.
    const arg = Object.assign(new String('7'), { id: 7, name: '7', pinyin: '7' });
    const found = new Set<string>();
    for (const build of Object.values(keys) as ((...args: unknown[]) => unknown)[]) {
      const out = build(arg, arg, arg, arg, arg);
      if (out && typeof out === 'object' && 'pk' in out) found.add(partitionPrefix(String(out.pk)));
    }
    expect([...found].sort()).toEqual([...PARTITION_PREFIXES].sort());
  });
});
