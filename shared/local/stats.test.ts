import { describe, expect, it } from 'vitest';
import { statementUnits } from './stats.ts';

describe('statementUnits (DynamoDB Local reports nothing for BatchExecuteStatement)', () => {
  it('charges each INSERT a write unit per started KB of its item, names and values', () => {
    const small = { Statement: `INSERT INTO "t" VALUE {'pk': ?, 'sk': ?}`, Parameters: ['A#1', 'x'] };
    const large = {
      Statement: `INSERT INTO "t" VALUE {'pk': ?, 'sk': ?, 'body': ?}`,
      Parameters: ['A#2', 'x', 'y'.repeat(1500)],
    };
    expect(statementUnits({ Statements: [small] })).toBe(1);
    expect(statementUnits({ Statements: [small, small, large] })).toBe(4);
    expect(statementUnits({})).toBe(0);
  });
});
