import { RemovalPolicy } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { type Access, access } from '../access.ts';
import { type FunctionGroup, type RouteDef, routeEntry, routes as routeDefs } from '../definitions.ts';
import { pascal } from './queues.ts';
import type { FunctionSpec, ServiceFunctions } from './service-functions.ts';

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

/** Requests per second (steady) and burst, as API Gateway's token bucket takes them. */
export interface Throttle {
  rateLimit: number;
  burstLimit: number;
}

/** Every route of the stage, unless a tighter limit applies (API Gateway applies it per route). */
export const DEFAULT_API_THROTTLE: Throttle = { rateLimit: 1000, burstLimit: 2000 };
/**
 * Each ingestion route (`auth: 'alarm'`, /alarm/*): a runaway monitor must not be able to fill the alarm
 * queue and the table's write capacity on its own; the per-task ALARM_RATE_LIMIT acts behind it.
 */
export const DEFAULT_INGEST_THROTTLE: Throttle = { rateLimit: 500, burstLimit: 1000 };

/**
 * Instances reserved for each alarm intake function (a function group of definitions.ts), so that no
 * flood on another route, and no other function of the account, can take intake's concurrency; it is
 * their ceiling too. 100 of the account's default 1,000, which must keep 100 unreserved. A handler
 * takes tens of milliseconds (a task read, an SQS send), so 50 instances carry well over 1,000 reports
 * per second. `intakeConcurrency` changes them; 0 reserves nothing for a group (docs/aws-operations.md).
 */
export const DEFAULT_INTAKE_CONCURRENCY: Partial<Record<FunctionGroup, number>> = {
  'alarm-report': 50,
  'alarm-monitors': 50,
};

/** A route's function: its entry, what it is, and the access the route declares. */
export function routeSpec(route: RouteDef): FunctionSpec {
  return { entry: routeEntry(route), kind: route.auth === 'alarm' ? 'ingest' : 'http', access: route.access };
}

/**
 * The spec of one function serving several routes (a function group): their entry and kind, which
 * must agree, and the union of their access (infra/access.ts `access`).
 */
export function groupSpec(routes: readonly RouteDef[]): FunctionSpec {
  if (routes.length === 0) throw new Error('groupSpec: no routes');
  const specs = routes.map(routeSpec);
  for (const field of ['entry', 'kind'] as const) {
    const values = new Set(specs.map((s) => s[field]));
    if (values.size > 1)
      throw new Error(`${field}: the routes of one function disagree (${[...values].join(', ')})`);
  }
  return { ...specs[0], access: access(...routes.map((r) => r.access)) };
}

/** What the function serving `route` on AWS may do: the route's access, or its function group's. */
export function deployedAccess(route: RouteDef, all: readonly RouteDef[] = deployedRoutes()): Access {
  return route.fn ? groupSpec(all.filter((r) => r.fn === route.fn)).access : route.access;
}

/**
 * One JSON line per request. Only request metadata: never `$request.*`, `$input.*`, the query string
 * or the body. Task-authenticated GETs carry `id`, `timestamp` and `sign` in the query, and a logged
 * sign could be replayed within the signature skew window; `$context.path` is the path alone. Nor the
 * integration's error message, which may quote a request body.
 */
export const ACCESS_LOG_FORMAT: Record<string, string> = {
  requestId: '$context.requestId',
  // The API's id: the dimension of the metric its 429s on /alarm/* are counted in (observability.ts).
  apiId: '$context.apiId',
  extendedRequestId: '$context.extendedRequestId',
  requestTime: '$context.requestTimeEpoch',
  ip: '$context.identity.sourceIp',
  userAgent: '$context.identity.userAgent',
  method: '$context.httpMethod',
  routeKey: '$context.routeKey',
  path: '$context.path',
  protocol: '$context.protocol',
  status: '$context.status',
  responseLength: '$context.responseLength',
  responseLatency: '$context.responseLatency',
  integrationLatency: '$context.integrationLatency',
  integrationStatus: '$context.integration.status',
  error: '$context.error.message',
};

export interface ServiceHttpApiProps {
  functions: ServiceFunctions;
  throttle?: Throttle;
  ingestThrottle?: Throttle;
  /** Reserved concurrency per intake function group (DEFAULT_INTAKE_CONCURRENCY); 0: none. */
  intakeConcurrency?: Partial<Record<FunctionGroup, number>>;
  accessLogRetention: logs.RetentionDays;
}

/**
 * The HTTP API (payload format 2.0), one Lambda per route from definitions.ts (one per function group
 * for grouped routes) plus `$default`, on the `$default` stage with throttling and access logs. The
 * alarm intake functions have reserved concurrency and are invoked through their `live` alias.
 */
export class ServiceHttpApi extends Construct {
  readonly api: apigw.HttpApi;
  readonly stage: apigw.HttpStage;
  readonly accessLogs: logs.LogGroup;
  readonly handlers = new Map<string, lambda.IFunction>();

  constructor(scope: Construct, id: string, props: ServiceHttpApiProps) {
    super(scope, id);
    const { functions } = props;
    const notFound = functions.add('NotFound', {
      entry: NOT_FOUND_HANDLER,
      kind: 'http',
      access: {},
    });
    this.api = new apigw.HttpApi(this, 'Api', {
      description: 'tocsin alarm task management API',
      defaultIntegration: new HttpLambdaIntegration('NotFoundIntegration', notFound),
      // Created below with the same id (so the same logical id) as HttpApi's own default stage, which
      // takes neither throttling nor access log settings.
      createDefaultStage: false,
    });
    this.handlers.set('$default', notFound);

    this.accessLogs = new logs.LogGroup(this, 'AccessLogs', {
      retention: props.accessLogRetention,
      // Who called the API: kept when the stack goes, until the retention expires.
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const throttle = props.throttle ?? DEFAULT_API_THROTTLE;
    const ingestThrottle = props.ingestThrottle ?? DEFAULT_INGEST_THROTTLE;
    for (const t of [throttle, ingestThrottle]) {
      if (!(t.rateLimit > 0 && t.burstLimit > 0 && Number.isInteger(t.burstLimit)))
        throw new Error('API throttling: rateLimit and burstLimit must be positive (burstLimit an integer)');
    }
    this.stage = new apigw.HttpStage(this.api, 'DefaultStage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle,
      accessLogSettings: {
        destination: new apigw.LogGroupLogDestination(this.accessLogs),
        format: AccessLogFormat.custom(JSON.stringify(ACCESS_LOG_FORMAT)),
      },
    });
    const routeSettings: Record<string, { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }> = {};

    const intakeConcurrency = { ...DEFAULT_INTAKE_CONCURRENCY, ...props.intakeConcurrency };
    for (const [group, n] of Object.entries(intakeConcurrency)) {
      if (!(group in DEFAULT_INTAKE_CONCURRENCY))
        throw new Error(
          `intakeConcurrency: no intake function ${group} (${Object.keys(DEFAULT_INTAKE_CONCURRENCY).join(', ')})`,
        );
      if (!(Number.isInteger(n) && n >= 0))
        throw new Error(`intakeConcurrency.${group}: a whole number of instances, 0 for none`);
    }
    const deployed = deployedRoutes();
    const groupFunctions = new Map<FunctionGroup, lambda.IFunction>();
    const groupFunction = (group: FunctionGroup) => {
      let fn = groupFunctions.get(group);
      if (fn) return fn;
      const spec = groupSpec(deployed.filter((r) => r.fn === group));
      const ingest = spec.kind === 'ingest';
      fn = functions.add(pascal(group), {
        ...spec,
        ...(ingest ? { alias: true, reservedConcurrency: intakeConcurrency[group] || undefined } : {}),
      });
      groupFunctions.set(group, fn);
      return fn;
    };

    // A function group's routes share one integration and one permission to invoke its function (for
    // any route of this API): the resources of a route are its route alone.
    const groupIntegrations = new Map<FunctionGroup, HttpLambdaIntegration>();
    const groupIntegration = (group: FunctionGroup) => {
      let integration = groupIntegrations.get(group);
      if (!integration) {
        integration = new HttpLambdaIntegration(
          `${pascal(group)}Integration`,
          functions.invocable(groupFunction(group)),
          { scopePermissionToRoute: false },
        );
        groupIntegrations.set(group, integration);
      }
      return integration;
    };

    for (const route of deployed) {
      const rid = routeId(route);
      if (route.auth === 'alarm' && !route.fn)
        throw new Error(`${rid}: an alarm intake route belongs to a function group (definitions.ts)`);
      const fn = route.fn ? groupFunction(route.fn) : functions.add(rid, routeSpec(route));
      const [httpRoute] = this.api.addRoutes({
        path: route.path,
        methods: [apigw.HttpMethod[route.method], ...(route.head ? [apigw.HttpMethod.HEAD] : [])],
        integration: route.fn
          ? groupIntegration(route.fn)
          : new HttpLambdaIntegration(`${rid}Integration`, functions.invocable(fn)),
      });
      const routeKey = `${route.method} ${route.path}`;
      this.handlers.set(routeKey, fn);
      if (route.auth === 'alarm') {
        routeSettings[routeKey] = {
          ThrottlingRateLimit: ingestThrottle.rateLimit,
          ThrottlingBurstLimit: ingestThrottle.burstLimit,
        };
        // API Gateway refuses settings for a route key that does not exist yet.
        this.stage.node.addDependency(httpRoute);
      }
    }
    // Per-route settings have no L2 property: set them on the stage resource.
    (this.stage.node.defaultChild as apigw.CfnStage).routeSettings = routeSettings;
  }
}
