import { expect } from 'vitest';
import { api } from './client.ts';

// biome-ignore lint/suspicious/noExplicitAny: response shapes under test
export type Any = any;

/** Every page of a listing, following its cursor; fails when a cursor repeats. */
export async function allPages(
  path: string,
  field: 'tasks' | 'workflows',
  query: Record<string, string | number>,
): Promise<{ items: Any[]; pages: number }> {
  const items: Any[] = [];
  const seen = new Set<string>();
  let cursor = '';
  for (let pages = 1; ; pages++) {
    const res = await api.get<Any>(path, { query: { ...query, ...(cursor ? { cursor } : {}) } });
    expect(res.code).toBe(0);
    items.push(...res.data[field]);
    cursor = res.data.next_cursor;
    if (!cursor) return { items, pages };
    expect(seen.has(cursor)).toBe(false);
    seen.add(cursor);
    expect(pages).toBeLessThan(50);
  }
}
