import type { Authentication } from '../handler.ts';

/** The `none` authentication mode: a public route, anyone may call it (no credentials are read). */
export const anyone: Authentication = { kind: 'none' };
