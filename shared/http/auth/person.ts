import type { Authentication, RequestContext } from '../handler.ts';
import { authenticatePerson } from '../session.ts';

/**
 * The signed-in person of a request (`ctx.person`, and the session for sign out): the session cookie,
 * same origin and CSRF token on a change (shared/http/session.ts).
 */
export async function signedIn(ctx: RequestContext): Promise<void> {
  const person = await authenticatePerson(ctx.event);
  ctx.person = person.person;
  ctx.session = { id: person.id, hash: person.hash };
}

/** The `person` authentication mode: a signed-in person only (their own password, sign out). */
export const personAuth: Authentication = { kind: 'person', caller: signedIn };
