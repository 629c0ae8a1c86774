import { describe, expect, it } from 'vitest';
import { itemsWritten, statementUnits } from './stats.ts';

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

describe('itemsWritten (table writes: items, whatever their size)', () => {
  it('counts every item a write call writes, and none for a read', () => {
    const put = { PutRequest: { Item: { pk: 'A', sk: 'x' } } };
    expect(itemsWritten('BatchWriteItemCommand', { RequestItems: { t: [put, put, put] } })).toBe(3);
    expect(itemsWritten('BatchExecuteStatementCommand', { Statements: [{}, {}] })).toBe(2);
    expect(itemsWritten('TransactWriteItemsCommand', { TransactItems: [{}, {}, {}, {}] })).toBe(4);
    expect(itemsWritten('UpdateItemCommand', {})).toBe(1);
    expect(itemsWritten('BatchGetItemCommand', { RequestItems: { t: { Keys: [{}, {}] } } })).toBe(0);
  });
});
