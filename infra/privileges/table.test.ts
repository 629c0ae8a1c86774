import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../stack.ts';
import { privilegesTable } from './table.ts';

describe('the privileges table of docs/aws-operations.md', () => {
  it('is the one the declarations make (npx tsx infra/privileges/table.ts prints it)', () => {
    const page = readFileSync(join(PROJECT_ROOT, 'docs/aws-operations.md'), 'utf8');
    const table = privilegesTable();
    expect(table.split('\n').length).toBeGreaterThan(10);
    expect(page).toContain(table);
  });
});
