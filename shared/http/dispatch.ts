import type { Context } from 'aws-lambda';
import type { HttpEvent, HttpResult } from './handler.ts';

/** A route's Lambda handler (what httpHandler builds). */
export type RouteHandler = (event: HttpEvent, context: Context) => Promise<HttpResult>;

/** The entry of a function group: the dispatching handler, and its table (route key -> handler). */
export type DispatchingHandler = RouteHandler & { readonly routes: ReadonlyMap<string, RouteHandler> };

/**
 * One Lambda serving several routes (a function group of infra/definitions.ts): each event goes to the
 * handler of its `routeKey`, which API Gateway sets to the matched route (`POST /alarm/report`); any
 * other event (a route this function was not deployed for) gets `fallback`, the 404 envelope. The
 * handlers stay the routes' own modules, so a route behaves the same whichever Lambda serves it.
 */
export function dispatchRoutes(
  handlers: Readonly<Record<string, RouteHandler>>,
  fallback: RouteHandler,
): DispatchingHandler {
  const table = new Map(Object.entries(handlers));
  const dispatch = (event: HttpEvent, context: Context) =>
    (table.get(event.routeKey) ?? fallback)(event, context);
  return Object.assign(dispatch, { routes: table as ReadonlyMap<string, RouteHandler> });
}
