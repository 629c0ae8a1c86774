import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { type RouteDef, routes as routeDefs } from '../definitions.ts';
import { pascal } from './queues.ts';
import type { FunctionKind, ServiceFunctions } from './service-functions.ts';

/** Handler of the `$default` route: every unknown method/path answers the 404 envelope. */
export const NOT_FOUND_HANDLER = 'functions/http/not-found.ts';

/** The routes that are deployed: everything in definitions.ts except the local runtime's own. */
export function deployedRoutes(all: readonly RouteDef[] = routeDefs): RouteDef[] {
  return all.filter((r) => !r.localOnly && !r.path.startsWith('/_local'));
}

/** `PUT /alarmtask/update` -> `PutAlarmtaskUpdate`. */
export function routeId(route: Pick<RouteDef, 'method' | 'path'>): string {
  return pascal(route.method.toLowerCase()) + pascal(route.path);
}

/** The HTTP API (payload format 2.0), one Lambda per route from definitions.ts plus `$default`. */
export class ServiceHttpApi extends Construct {
  readonly api: apigw.HttpApi;
  readonly handlers = new Map<string, lambda.IFunction>();

  constructor(scope: Construct, id: string, functions: ServiceFunctions) {
    super(scope, id);
    const notFound = functions.add('NotFound', {
      entry: NOT_FOUND_HANDLER,
      kind: 'http',
      table: 'none',
      readsSealKey: false,
    });
    this.api = new apigw.HttpApi(this, 'Api', {
      description: 'tocsin alarm task management API',
      defaultIntegration: new HttpLambdaIntegration('NotFoundIntegration', notFound),
    });
    this.handlers.set('$default', notFound);

    for (const route of deployedRoutes()) {
      const rid = routeId(route);
      const kind: FunctionKind = route.auth === 'alarm' ? 'ingest' : 'http';
      const fn = functions.add(rid, {
        entry: route.handler,
        kind,
        table: route.table,
        publishes: route.publishes,
        readsSealKey: route.auth !== 'none',
      });
      this.api.addRoutes({
        path: route.path,
        methods: [apigw.HttpMethod[route.method]],
        integration: new HttpLambdaIntegration(`${rid}Integration`, fn),
      });
      this.handlers.set(`${route.method} ${route.path}`, fn);
    }
  }
}
