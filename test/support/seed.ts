import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { putApp } from '../../shared/domain/auth/apps.ts';
import { importDirectory } from '../../shared/domain/directory/service.ts';

/** The app every test signs with (created in the stack by the global setup). */
export const TEST_APP = { id: 900001, token: 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678' };
/** A second app, for wrong-app checks. */
export const OTHER_APP = { id: 900002, token: 'ffffffffffffffffffffffffffffffffffffffff' };

export const fixturePath = resolve(import.meta.dirname, '../fixtures/directory.json');

export async function seedTestDirectory(): Promise<void> {
  await importDirectory(JSON.parse(readFileSync(fixturePath, 'utf8')));
  await putApp({ id: TEST_APP.id, name: 'tests', token: TEST_APP.token });
  await putApp({ id: OTHER_APP.id, name: 'other', token: OTHER_APP.token });
}
