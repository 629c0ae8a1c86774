import { logger } from '../../log.ts';
import { count } from '../../metrics.ts';

/**
 * The audit trail of credentials and sign-in: one structured log line (`audit` = the event) and one
 * count of the `AuthEvents` metric (dimension `event`) per event. The stack alarms on a
 * deployment-wide spike of `signin-failed` (infra/constructs/observability.ts). A line names who
 * (uid, app id, source address) and what, never a password, token, signature, session id or what was
 * typed as an account name (it may be a password typed in the wrong field).
 */
export type AuthEvent =
  | 'signin'
  | 'signin-failed'
  | 'lockout'
  | 'unlock'
  | 'password-change'
  | 'password-rehash'
  | 'sso-link'
  | 'grant-change'
  | 'app-binding'
  | 'app-signature'
  | 'user-deactivated'
  | 'user-activated'
  | 'task-credentials-rotated'
  | 'app-call';

export type AuditFields = Record<string, string | number | boolean | number[] | string[] | undefined>;

export function audit(event: AuthEvent, fields: AuditFields = {}): void {
  logger.info(`audit: ${event}`, { audit: event, ...fields });
  // Every app call is logged; counting them would only repeat the API's own request metrics.
  if (event !== 'app-call') count('AuthEvents', { event });
}
