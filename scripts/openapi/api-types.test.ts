/** The console's API types (shared/generated/api-types.ts) against the OpenAPI document they come from. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { API_TYPES_FILE, generateApiTypes } from '../gen-api-types.ts';

describe('the generated API types', () => {
  it('are what npm run gen:api-types writes from the committed document (run it after gen:openapi)', async () => {
    // Act
    const text = await generateApiTypes();
    // Assert
    expect(
      readFileSync(API_TYPES_FILE, 'utf8') === text,
      'shared/generated/api-types.ts is stale: run npm run gen:api-types',
    ).toBe(true);
    // Every operation and the named answers are there.
    expect(text).toContain('"/alarmtask/list": {');
    expect(text).toMatch(/\n {8}TaskSummary: \{/);
  }, 60_000);
});
