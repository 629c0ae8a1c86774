/**
 * What the sign-in routes answer with (the envelope's `data`): the types the handlers return and the
 * OpenAPI document describes (npm run gen:openapi).
 */
import type { SignedInPerson } from './sessions.ts';

/** POST /auth/signin, PUT /auth/password: the session cookie is set; its CSRF token. */
export interface SignedInAnswer {
  person: SignedInPerson;
  /** Sent as `X-CSRF-Token` with every request that changes something. */
  csrf_token: string;
  /** Unix seconds when the session ends at the latest. */
  expires_at: number;
}

/** GET /auth/session: the standing session, or nobody (no session cookie). */
export type SessionState = SessionAnswer | SignedOutAnswer;

/** GET /auth/session without a session cookie: nobody is signed in (an answer, not a refusal). */
export interface SignedOutAnswer {
  person: null;
  /** Whether single sign-on is offered. */
  sso: boolean;
}

/** GET /auth/session: the standing session. */
export interface SessionAnswer {
  person: SignedInPerson;
  csrf_token: string;
  /** Minutes without a request after which the session ends. */
  idle_minutes: number;
  /** Whether single sign-on is offered. */
  sso: boolean;
}
