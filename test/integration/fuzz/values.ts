import fc from 'fast-check';

/** Hostile values for the fuzz test (fuzz.test.ts): what every endpoint must refuse, and noise that must not matter. */

export type Json = unknown;
export type Body = Record<string, Json>;

/** A value nested `depth` levels deep, as JSON text (a recursive serializer could not write it). */
export const deep = (depth: number, leaf = '1'): Json => {
  let open = '';
  let close = '';
  for (let i = 0; i < depth; i++) {
    open += i % 2 ? '[' : '{"d":';
    close = (i % 2 ? ']' : '}') + close;
  }
  return { $raw: open + leaf + close };
};

/** Values that no id, integer, enum or string-with-a-format field accepts. */
export const notAnId = fc.constantFrom<Json>(
  0,
  -1,
  1.5,
  '1',
  '',
  null,
  true,
  [],
  {},
  [1],
  { $raw: '1e20' },
  { $raw: '9007199254740993' },
  { $raw: '1e308' },
  { $raw: '-1e20' },
  { $raw: '1e400' },
  '\uffff',
  '🚨',
  deep(40),
);
export const notAString = fc.constantFrom<Json>(1, null, true, [], {}, ['a'], { $raw: '1e308' }, deep(35));
export const notAnObject = fc.constantFrom<Json>(1, 'x', null, true, [], [{}], '\uffff', { $raw: '1e20' });
export const notAnArray = fc.constantFrom<Json>(1, 'x', null, true, {}, { 0: 1 }, '\ufffe');
export const hostileText = fc.constantFrom(
  '\uffff\ufffe',
  '🚨🔥',
  'x'.repeat(5000),
  '<script>alert(1)</script>',
  '\u0024{jndi:ldap://x}',
  '\u0000\u0001',
  '\ud800',
  '磁盘已满',
);
/** Noise that must not matter: unknown fields that a sloppy parser would trip on. */
export const noise = fc.dictionary(
  fc.constantFrom('__proto__', 'constructor', 'prototype', '', 'toString', 'hasOwnProperty', 'zzz', '\uffff'),
  fc.oneof(hostileText, notAnId, fc.constant(deep(2000))),
  { maxKeys: 3 },
);

/** Serializes a body: `{$raw: text}` becomes that JSON text (numbers JSON.stringify cannot write). */
export function serialize(v: Json): string {
  if (v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 1 && '$raw' in v)
    return String((v as { $raw: string }).$raw);
  if (Array.isArray(v)) return `[${v.map(serialize).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.entries(v)
      .map(([k, x]) => `${JSON.stringify(k)}:${serialize(x)}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

export function setPath(obj: Body, path: string[], value: Json): Body {
  const out = structuredClone(obj);
  let cur = out as Record<string, Json>;
  for (const seg of path.slice(0, -1)) {
    if (!cur[seg] || typeof cur[seg] !== 'object')
      Object.defineProperty(cur, seg, { value: {}, enumerable: true, writable: true, configurable: true });
    cur = cur[seg] as Record<string, Json>;
  }
  Object.defineProperty(cur, path[path.length - 1], {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return out;
}
