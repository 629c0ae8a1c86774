/**
 * The modes an app or a signed-in person may call with: `app|person` (`appOrPerson`, here) and
 * `reader` / `admin` (auth/reader.ts, made with `appOrPersonMode`). An app signs its requests; a
 * browser with a session sends its cookie. A request carrying app headers is an app's, whatever cookie
 * came with it. A signed-in person is the acting user, whatever the input says.
 */
import type { App, Grant } from '../../domain/auth/apps.ts';
import { loadSealKey } from '../../domain/auth/seal.ts';
import { config } from '../../config/env.ts';
import { header } from '../event.ts';
import type { Actor, Authentication, AuthKind } from '../handler.ts';
import { hasSessionCookie } from '../session.ts';
import { actAs, authenticateCaller } from './app.ts';
import { signedIn } from './person.ts';

type EitherKind = Extract<AuthKind, 'app|person' | 'reader' | 'admin'>;

/**
 * The grant an app needs for a route of one of these modes, if any: `admin` on `admin` routes, the
 * route's grant (default `read`) on `reader` routes, and on `app|person` routes the grant they name
 * only when the deployment sets STRICT_APP_GRANTS (the interface's workflow routes).
 */
export function grantFor(kind: EitherKind, options: { grant?: Grant }): Grant | undefined {
  if (kind === 'admin') return 'admin';
  if (kind === 'reader') return options.grant ?? 'read';
  if (options.grant && config().strictAppGrants) return options.grant;
  return undefined;
}

/**
 * A mode where an app or a signed-in person calls. The seal key is loaded whoever calls (a route an
 * app may call reads sealed values: a task's secret and tokens). `act` runs after the app's
 * `actAs` (the admin's super powers of reader routes).
 */
export function appOrPersonMode(
  kind: EitherKind,
  options: { grant?: Grant; actor?: Actor },
  act?: Authentication['act'],
): Authentication {
  const { actor } = options;
  return {
    kind,
    ...(actor ? { actor } : {}),
    ...(options.grant ? { grant: options.grant } : {}),
    async caller(ctx) {
      await loadSealKey();
      if (header(ctx.event, 'x-app-id') === undefined && hasSessionCookie(ctx.event)) await signedIn(ctx);
      else await authenticateCaller(ctx, grantFor(kind, options));
    },
    admit(input, ctx) {
      if (ctx.person && actor) input[actor] = ctx.person.uid;
    },
    async act(input, ctx) {
      if (!ctx.app) return;
      actAs(
        ctx.app as App,
        actor && input[actor] !== undefined ? Number(input[actor]) : undefined,
        ctx.event,
      );
      await act?.(input, ctx);
    },
  };
}

/**
 * The `app|person` mode: an interface route the console calls too: application auth exactly as
 * `appAuth`, or a signed-in person, who then is the acting user (`actor`, when the route names one).
 * `grant`: what an app needs when the deployment sets STRICT_APP_GRANTS.
 */
export const appOrPerson = (options: { grant?: Grant; actor?: Actor } = {}): Authentication =>
  appOrPersonMode('app|person', options);
