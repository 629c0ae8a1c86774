import { describe, expect, it } from 'vitest';
import { isObject, isRawJson, nestingDepth, parseJson, textOf, toWireJson } from './json.ts';

describe('parseJson keeps numbers as written', () => {
  it.each([
    ['12345678901234567890'],
    ['9007199254740993'],
    ['1e21'],
    ['-1e20'],
    ['1e308'],
    ['1e400'],
    ['1.0'],
    ['-0'],
    ['0.1000'],
  ])('%s round-trips exactly', (n) => {
    // Act
    const v = parseJson(`{"n":${n}}`) as { n: unknown };
    // Assert
    expect(isRawJson(v.n)).toBe(true);
    expect(JSON.stringify(v)).toBe(`{"n":${n}}`);
  });

  it('keeps numbers that print the same as plain numbers', () => {
    const v = parseJson('{"a":1,"b":-2.5,"c":1e-200,"d":[3]}') as Record<string, unknown>;
    expect(v).toEqual({ a: 1, b: -2.5, c: 1e-200, d: [3] });
  });

  it('keeps __proto__ and constructor as own data keys, the prototype untouched', () => {
    const v = parseJson('{"__proto__":{"x":1},"constructor":2,"":3}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.keys(v)).toEqual(['__proto__', 'constructor', '']);
    expect(JSON.stringify(v)).toBe('{"__proto__":{"x":1},"constructor":2,"":3}');
  });

  it('parses text nested too deeply for a reviver (it is refused by depth later)', () => {
    const deep = `${'['.repeat(100_000)}1${']'.repeat(100_000)}`;
    expect(nestingDepth(parseJson(deep))).toBe(100_000);
  });

  it('throws SyntaxError on invalid JSON', () => {
    expect(() => parseJson('{"a":')).toThrow(SyntaxError);
  });
});

describe('toWireJson', () => {
  it('escapes what SQS refuses and nothing else, and reads back the same', () => {
    // Arrange
    const value = { s: 'a\ufffe\uffff 🚨 磁盘 \u0001', n: parseJson('12345678901234567890') };
    // Act
    const wire = toWireJson(value);
    // Assert
    expect(wire).not.toMatch(/[\uD800-\uDFFF\uFFFE\uFFFF]/);
    expect(wire).toContain('磁盘');
    expect(wire).toContain('12345678901234567890');
    expect(JSON.stringify(parseJson(wire))).toBe(JSON.stringify(value));
  });
});

describe('nestingDepth', () => {
  it.each([
    [1, 0],
    [{}, 1],
    [{ a: [1] }, 2],
    [{ a: { b: { c: {} } } }, 4],
    [[[], [[[]]]], 4],
  ])('of %j is %i', (v, d) => {
    expect(nestingDepth(v)).toBe(d);
  });

  it('does not count raw numbers as objects, and stops past the limit', () => {
    expect(nestingDepth({ n: parseJson('1e400') })).toBe(1);
    expect(nestingDepth(parseJson(`${'['.repeat(1000)}${']'.repeat(1000)}`), 64)).toBe(65);
  });
});

describe('textOf', () => {
  it.each([
    ['a string', 'web-1', 'web-1'],
    ['a number', 42, '42'],
    ['a number kept as written', (parseJson('{"n":1e309}') as { n: unknown }).n, '1e309'],
    ['null', null, 'null'],
    ['an array with a number kept as written', parseJson('[1e309,"a"]'), '[1e309,"a"]'],
  ])('writes %s', (_label, value, text) => {
    expect(textOf(value)).toBe(text);
  });

  it('does not walk a value nested deeper than any accepted one', () => {
    const deep = parseJson(`${'['.repeat(100_000)}1${']'.repeat(100_000)}`);
    expect(textOf(deep)).toBe('(nested too deep)');
  });
});

describe('isObject', () => {
  it('is true for JSON objects only', () => {
    expect(isObject({})).toBe(true);
    expect(isObject(parseJson('{"a":1}'))).toBe(true);
    for (const v of [null, undefined, [], [1], 'x', 1, true]) expect(isObject(v)).toBe(false);
  });
});
