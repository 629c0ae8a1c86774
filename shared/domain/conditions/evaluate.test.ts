import { describe, expect, it } from 'vitest';
import { parseJson } from '../../json.ts';
import {
  type AlarmFacts,
  asText,
  compare,
  evaluateRule,
  firstMatch,
  lookup,
  matchesCondition,
  parsePath,
  ruleToken,
} from './evaluate.ts';

const facts: AlarmFacts = {
  ctn: {
    host: 'web-01',
    cpu: 93.5,
    code: '500',
    zero: 0,
    empty: '',
    flag: true,
    nil: null,
    tags: ['a', 'b'],
    meta: { region: 'eu', n: 2 },
    'a.b': { c: 'dotted' },
    version: '10',
  },
  level: 2,
  notice_time: 1_700_000_000,
};

describe('parsePath', () => {
  it.each([
    ['ctn.host', ['ctn', 'host']],
    ['level', ['level']],
    ['ctn.[a.b].c', ['ctn', 'a.b', 'c']],
    ['ctn.[a.b]', ['ctn', 'a.b']],
    ['[x]', ['x']],
    ['ctn.meta.region', ['ctn', 'meta', 'region']],
  ])('%s -> %j', (field, path) => {
    expect(parsePath(field)).toEqual(path);
  });

  it.each(['', 'ctn.', '.ctn', 'ctn..a', 'ctn.[a.b', 'ctn.[a]x'])('refuses malformed %j', (field) => {
    expect(parsePath(field)).toBeUndefined();
  });
});

describe('lookup', () => {
  it.each([
    ['ctn.host', { found: true, value: 'web-01' }],
    ['ctn.meta.n', { found: true, value: 2 }],
    ['ctn.[a.b].c', { found: true, value: 'dotted' }],
    ['ctn.tags.1', { found: true, value: 'b' }],
    ['ctn.nil', { found: true, value: null }],
    ['level', { found: true, value: 2 }],
    ['notice_time', { found: true, value: 1_700_000_000 }],
    ['ctn.nope', { found: false }],
    ['ctn.host.length', { found: false }],
    ['ctn.a.b.c', { found: false }],
    ['ctn.constructor', { found: false }],
    ['ctn.__proto__', { found: false }],
    ['other', { found: false }],
  ])('%s', (field, expected) => {
    expect(lookup(facts, field)).toEqual(expected);
  });
});

describe('asText and compare', () => {
  it.each([
    ['x', 'x'],
    [1.5, '1.5'],
    [true, 'true'],
    [null, 'null'],
    [{ a: 1, b: [1, 2] }, '{"a":1,"b":[1,2]}'],
    [['a', 'b'], '["a","b"]'],
  ])('asText(%j) = %s', (value, text) => {
    expect(asText(value)).toBe(text);
  });

  it.each([
    ['10', '9', 1, 'numbers compare numerically'],
    ['10', '10.0', 0, 'equal numbers in different spellings'],
    ['1e2', '100', 0, 'exponent notation'],
    ['-1', '0', -1, 'negative numbers'],
    ['abc', 'abd', -1, 'strings compare as strings'],
    ['10', 'abc', -1, 'one side not a number: string order'],
    ['9', '10a', 1, 'string order when one side is not a number'],
    ['0x10', '16', -1, 'hex is not a number'],
    ['', '0', -1, 'empty string is not a number'],
    ['Infinity', '2', 1, 'Infinity is not a finite number: string order'],
  ])('compare(%s, %s) = %i (%s)', (a, b, sign) => {
    expect(Math.sign(compare(a, b))).toBe(sign);
  });
});

describe('evaluateRule: every operator', () => {
  const cases: [string, string, string | undefined, boolean][] = [
    // field, operator, threshold, expected
    ['ctn.host', 'eq-self', undefined, true],
    ['ctn.nope', 'eq-self', undefined, false],
    ['ctn.host', 'eq', 'web-01', true],
    ['ctn.host', 'eq', 'web-02', false],
    ['ctn.code', 'eq', '500', true],
    ['ctn.code', 'eq', '500.0', true],
    ['ctn.cpu', 'eq', '93.50', true],
    ['level', 'eq', '2', true],
    ['ctn.flag', 'eq', 'true', true],
    ['ctn.nil', 'eq', 'null', true],
    ['ctn.meta', 'eq', '{"region":"eu","n":2}', true],
    ['ctn.tags', 'eq', '["a","b"]', true],
    ['ctn.empty', 'eq', '', true],
    ['ctn.host', 'neq', 'web-02', true],
    ['ctn.host', 'neq', 'web-01', false],
    ['ctn.cpu', 'gt', '90', true],
    ['ctn.cpu', 'gt', '93.5', false],
    ['ctn.version', 'gt', '9', true],
    ['ctn.host', 'gt', 'web-00', true],
    ['ctn.cpu', 'gte', '93.5', true],
    ['ctn.cpu', 'gte', '94', false],
    ['ctn.cpu', 'lt', '100', true],
    ['ctn.cpu', 'lt', '93.5', false],
    ['ctn.zero', 'lt', '1', true],
    ['ctn.cpu', 'lte', '93.5', true],
    ['ctn.cpu', 'lte', '93', false],
    ['notice_time', 'gte', '1700000000', true],
    ['ctn.code', 'in', '404|500|502', true],
    ['ctn.code', 'in', '404|502', false],
    ['ctn.cpu', 'in', '1|93.50', true],
    ['ctn.host', 'in', 'web-01', true],
    ['ctn.code', 'not-in', '404|502', true],
    ['ctn.code', 'not-in', '404|500', false],
    ['ctn.host', 'contain', 'web', true],
    ['ctn.host', 'contain', 'db', false],
    ['ctn.tags', 'contain', '"b"', true],
    ['ctn.meta', 'contain', 'region', true],
    ['ctn.cpu', 'contain', '93', true],
    ['ctn.host', 'not-contain', 'db', true],
    ['ctn.host', 'not-contain', 'web', false],
    ['ctn.host', 'isset', undefined, true],
    ['ctn.empty', 'isset', undefined, true],
    ['ctn.nil', 'isset', undefined, true],
    ['ctn.host', 'not-isset', undefined, false],
    ['ctn.[a.b].c', 'eq', 'dotted', true],
    ['ctn.host', 'bogus', 'x', false],
  ];
  it.each(cases)('%s %s %s -> %s', (field, operator, threshold, expected) => {
    expect(evaluateRule({ field, operator, threshold }, facts)).toBe(expected);
  });
});

describe('evaluateRule: a missing field satisfies only neq, not-in, not-contain and not-isset', () => {
  const expected: Record<string, boolean> = {
    'eq-self': false,
    eq: false,
    neq: true,
    gt: false,
    gte: false,
    lt: false,
    lte: false,
    in: false,
    'not-in': true,
    contain: false,
    'not-contain': true,
    isset: false,
    'not-isset': true,
  };
  it.each(Object.entries(expected))('%s -> %s', (operator, result) => {
    expect(evaluateRule({ field: 'ctn.missing.deep', operator, threshold: '' }, facts)).toBe(result);
    expect(evaluateRule({ field: 'ctn.missing', operator, threshold: 'x' }, facts)).toBe(result);
  });
});

describe('conditions', () => {
  const hostWeb = { rule: [{ field: 'ctn.host', operator: 'contain', threshold: 'web' }] };
  const cpuHigh = { rule: [{ field: 'ctn.cpu', operator: 'gt', threshold: '95' }] };
  const both = { rule: [...hostWeb.rule, { field: 'level', operator: 'gte', threshold: '2' }] };

  it('AND-s the rules of one condition', () => {
    expect(matchesCondition(both, facts)).toBe(true);
    expect(matchesCondition({ rule: [...hostWeb.rule, ...cpuHigh.rule] }, facts)).toBe(false);
  });

  it('matches nothing with an empty rule list', () => {
    expect(matchesCondition({ rule: [] }, facts)).toBe(false);
  });

  it('OR-s conditions in order: the first match counts', () => {
    expect(firstMatch([cpuHigh, hostWeb, both], facts)).toBe(1);
    expect(firstMatch([both, hostWeb], facts)).toBe(0);
    expect(firstMatch([cpuHigh], facts)).toBe(-1);
    expect(firstMatch(undefined, facts)).toBe(-1);
    expect(firstMatch([], facts)).toBe(-1);
  });
});

describe('ruleToken', () => {
  it('writes field#operator#threshold, and the actual value for eq-self', () => {
    expect(ruleToken({ field: 'ctn.code', operator: 'eq', threshold: '500' }, facts)).toBe('ctn.code#eq#500');
    expect(ruleToken({ field: 'ctn.host', operator: 'eq-self' }, facts)).toBe('ctn.host#eq-self#web-01');
    expect(ruleToken({ field: 'ctn.meta', operator: 'eq-self' }, facts)).toBe(
      'ctn.meta#eq-self#{"region":"eu","n":2}',
    );
    expect(ruleToken({ field: 'ctn.host', operator: 'isset' }, facts)).toBe('ctn.host#isset#');
  });
});

describe('numbers beyond double precision (API guide §7.3: content is kept as written)', () => {
  const big: AlarmFacts = {
    ctn: parseJson(
      '{"trace_id":12345678901234567890,"big":1e21,"__proto__":"own","constructor":"c"}',
    ) as Record<string, unknown>,
    level: 0,
    notice_time: 0,
  };

  it.each([
    ['eq', '12345678901234567890', true],
    ['eq', '12345678901234567891', false],
    ['gt', '12345678901234567889', true],
    ['lt', '12345678901234567891', true],
    ['in', '1|12345678901234567890', true],
  ])('trace_id %s %s is %s (integers compare exactly)', (operator, threshold, expected) => {
    expect(evaluateRule({ field: 'ctn.trace_id', operator, threshold }, big)).toBe(expected);
  });

  it('compares exponent forms numerically and sees own keys named __proto__ and constructor', () => {
    expect(evaluateRule({ field: 'ctn.big', operator: 'eq', threshold: '1000000000000000000000' }, big)).toBe(
      true,
    );
    expect(evaluateRule({ field: 'ctn.__proto__', operator: 'eq', threshold: 'own' }, big)).toBe(true);
    expect(evaluateRule({ field: 'ctn.constructor', operator: 'isset' }, big)).toBe(true);
    expect(evaluateRule({ field: 'ctn.constructor', operator: 'isset' }, facts)).toBe(false);
    expect(ruleToken({ field: 'ctn.trace_id', operator: 'eq-self' }, big)).toBe(
      'ctn.trace_id#eq-self#12345678901234567890',
    );
  });
});
