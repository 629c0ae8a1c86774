import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file lives in shared/local). */
export const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const defaultStateFile = resolve(projectRoot, '.tocsin-local.json');
/** The only address the local stack's listeners bind. */
export const LOOPBACK = '127.0.0.1';
