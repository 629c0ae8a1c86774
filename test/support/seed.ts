import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { changeGrant, putApp } from '../../shared/domain/auth/apps.ts';
import { importDirectory } from '../../shared/domain/directory/service.ts';

/**
 * The app every test signs with (created in the stack by the global setup). It holds the grant
 * `operate` (and so `read`): the suites of the routes beyond the interface call them as an app
 * naming the acting user.
 */
export const TEST_APP = { id: 900001, token: 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678' };
/** A second app, for wrong-app checks; it holds no grant. */
export const OTHER_APP = { id: 900002, token: 'ffffffffffffffffffffffffffffffffffffffff' };
/** An app holding the grant `admin` (dead letters and their redrive, every task). */
export const ADMIN_APP = { id: 900003, token: '0a1b2c3d4e5f60718293a4b5c6d7e8f901234567' };

export const fixturePath = resolve(import.meta.dirname, '../fixtures/directory.json');

export async function seedTestDirectory(): Promise<void> {
  await importDirectory(JSON.parse(readFileSync(fixturePath, 'utf8')));
  await putApp({ id: TEST_APP.id, name: 'tests', token: TEST_APP.token });
  await putApp({ id: OTHER_APP.id, name: 'other', token: OTHER_APP.token });
  await putApp({ id: ADMIN_APP.id, name: 'admin', token: ADMIN_APP.token });
  await changeGrant(TEST_APP.id, 'operate', true);
  await changeGrant(ADMIN_APP.id, 'admin', true);
}
