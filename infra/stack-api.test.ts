import { beforeAll, describe, expect, it } from 'vitest';
import {
  ACCESS_LOG_FORMAT,
  DEFAULT_API_THROTTLE,
  DEFAULT_INGEST_THROTTLE,
  NOT_FOUND_HANDLER,
  deployedRoutes,
} from './constructs/http-api.ts';
import { accessKey } from './access.ts';
import { routeEntry, routes } from './definitions.ts';
import {
  functionOfRoute,
  invokedFunction,
  ofType,
  outputs,
  type Resource,
  resources,
  synth,
  SYNTH_TIMEOUT_MS,
  synthOnce,
} from './test-stack.ts';

beforeAll(synthOnce, SYNTH_TIMEOUT_MS);

describe('HTTP API', () => {
  it("has one route per deployed route plus $default, each on its own Lambda or its group's (a HEAD on its GET one)", () => {
    // Arrange: a route that answers HEAD has a HEAD route on the same function
    const expected = deployedRoutes().flatMap((r) => [
      [`${r.method} ${r.path}`, routeEntry(r)],
      ...(r.head ? [[`HEAD ${r.path}`, routeEntry(r)]] : []),
    ]);
    const heads = deployedRoutes().filter((r) => r.head).length;
    expected.push(['$default', NOT_FOUND_HANDLER]);
    // Act
    const actual = ofType('AWS::ApiGatewayV2::Route').map(([, route]) => {
      const target = JSON.stringify(route.Properties.Target);
      const integrationId = /"Ref":"([^"]+)"/.exec(target)![1];
      const fn = invokedFunction(resources[integrationId].Properties.IntegrationUri);
      const description = resources[fn].Properties.Description as string;
      return [route.Properties.RouteKey, description.replace(/^tocsin /, '')];
    });
    const lambdas = actual.map(([routeKey]) => functionOfRoute(String(routeKey)));
    // Assert
    expect(heads).toBeGreaterThan(0);
    expect(actual.sort()).toEqual(expected.sort());
    const functions = new Set(deployedRoutes().map((r) => r.fn ?? `${r.method} ${r.path}`));
    expect(new Set(lambdas).size).toBe(functions.size + 1);
  });

  it('gives routes that share a handler file the same access', () => {
    const byHandler = new Map<string, string[]>();
    for (const r of deployedRoutes()) {
      const access = JSON.stringify([r.auth, accessKey(r.access)]);
      byHandler.set(r.handler, [...(byHandler.get(r.handler) ?? []), access]);
    }
    for (const [handler, accesses] of byHandler) expect(new Set(accesses).size, handler).toBe(1);
  });

  it('never deploys a /_local route', () => {
    expect(routes.some((r) => r.path.startsWith('/_local'))).toBe(true);
    const keys = ofType('AWS::ApiGatewayV2::Route').map(([, r]) => String(r.Properties.RouteKey));
    expect(keys.filter((k) => k.includes('/_local'))).toEqual([]);
    expect(JSON.stringify(resources)).not.toContain('shared/local');
  });

  it('uses Lambda proxy integrations with payload format 2.0', () => {
    const integrations = ofType('AWS::ApiGatewayV2::Integration');
    // One per route of a function of its own, one per function group (its routes share it), $default.
    const routes = deployedRoutes();
    const groups = new Set(routes.flatMap((r) => (r.fn ? [r.fn] : [])));
    expect(integrations).toHaveLength(routes.filter((r) => !r.fn).length + groups.size + 1);
    for (const [, i] of integrations) {
      expect(i.Properties).toMatchObject({ IntegrationType: 'AWS_PROXY', PayloadFormatVersion: '2.0' });
    }
  });
});

describe('HTTP API stage', () => {
  function stageOf(res: Record<string, Resource>): [string, Resource] {
    const stages = Object.entries(res).filter(([, r]) => r.Type === 'AWS::ApiGatewayV2::Stage');
    expect(stages).toHaveLength(1);
    return stages[0];
  }
  const stage = () => stageOf(resources)[1].Properties;
  const ingestRouteKeys = () =>
    deployedRoutes()
      .filter((r) => r.auth === 'alarm')
      .map((r) => `${r.method} ${r.path}`);

  it('is the auto-deployed $default stage, every route throttled by default', () => {
    expect(stage()).toMatchObject({
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: {
        ThrottlingRateLimit: DEFAULT_API_THROTTLE.rateLimit,
        ThrottlingBurstLimit: DEFAULT_API_THROTTLE.burstLimit,
      },
    });
  });

  it('throttles each ingestion route tighter, and only those', () => {
    // Arrange
    const ingest = ingestRouteKeys();
    const settings = stage().RouteSettings as Record<string, unknown>;
    // Assert
    expect(ingest).toContain('POST /alarm/report');
    expect(ingest.every((k) => / \/alarm\//.test(k))).toBe(true);
    expect(Object.keys(settings).sort()).toEqual([...ingest].sort());
    for (const key of ingest) {
      expect(settings[key], key).toEqual({
        ThrottlingRateLimit: DEFAULT_INGEST_THROTTLE.rateLimit,
        ThrottlingBurstLimit: DEFAULT_INGEST_THROTTLE.burstLimit,
      });
    }
    expect(DEFAULT_INGEST_THROTTLE.rateLimit).toBeLessThan(DEFAULT_API_THROTTLE.rateLimit);
  });

  it('is created after the routes its settings name (API Gateway refuses unknown route keys)', () => {
    const dependsOn = (stageOf(resources)[1] as Resource & { DependsOn?: string[] }).DependsOn ?? [];
    const routeIds = ofType('AWS::ApiGatewayV2::Route')
      .filter(([, r]) => ingestRouteKeys().includes(String(r.Properties.RouteKey)))
      .map(([id]) => id);
    expect(routeIds).toHaveLength(ingestRouteKeys().length);
    for (const id of routeIds) expect(dependsOn).toContain(id);
  });

  it('takes its throttling from the stack props', { timeout: SYNTH_TIMEOUT_MS }, () => {
    // Act
    const json = synth({
      apiThrottle: { rateLimit: 50, burstLimit: 100 },
      ingestThrottle: { rateLimit: 5, burstLimit: 10 },
    }).toJSON() as { Resources: Record<string, Resource> };
    const props = stageOf(json.Resources)[1].Properties;
    // Assert
    expect(props.DefaultRouteSettings).toEqual({ ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 });
    expect((props.RouteSettings as Record<string, unknown>)['POST /alarm/report']).toEqual({
      ThrottlingRateLimit: 5,
      ThrottlingBurstLimit: 10,
    });
    expect(() => synth({ apiThrottle: { rateLimit: 0, burstLimit: 10 } })).toThrow(/positive/);
  });

  it('writes access logs to its own log group, kept for the log retention', () => {
    const destination = (stage().AccessLogSettings as { DestinationArn: { 'Fn::GetAtt': [string, string] } })
      .DestinationArn;
    const logGroupId = destination['Fn::GetAtt'][0];
    expect(resources[logGroupId]).toMatchObject({
      Type: 'AWS::Logs::LogGroup',
      DeletionPolicy: 'Retain',
      Properties: { RetentionInDays: 30 },
    });
    expect(outputs.ApiAccessLogGroup.Value).toEqual({ Ref: logGroupId });
  });

  it('logs request metadata as JSON, never the query string or the body', () => {
    // Arrange
    const format = (stage().AccessLogSettings as { Format: string }).Format;
    const variables = format.match(/\$[A-Za-z][\w.]*/g) ?? [];
    // Assert: the fields the runbook relies on
    expect(JSON.parse(format)).toMatchObject({
      requestId: '$context.requestId',
      ip: '$context.identity.sourceIp',
      method: '$context.httpMethod',
      routeKey: '$context.routeKey',
      path: '$context.path',
      status: '$context.status',
      protocol: '$context.protocol',
      responseLength: '$context.responseLength',
      integrationLatency: '$context.integrationLatency',
    });
    expect(JSON.parse(format)).toEqual(ACCESS_LOG_FORMAT);
    // Assert: only $context variables of an allow-list: no $request.querystring, $input, body,
    // request override or integration error message (which may quote a body).
    expect(variables.length).toBe(Object.keys(ACCESS_LOG_FORMAT).length);
    for (const v of variables) expect(ALLOWED_ACCESS_LOG_VARIABLES, v).toContain(v);
    expect(format).not.toMatch(/query|body|\$request|\$input|requestOverride|\$method|errorMessage/i);
  });
});

/** $context variables that carry no part of the query string, headers (but the user agent) or body. */
const ALLOWED_ACCESS_LOG_VARIABLES = [
  '$context.apiId',
  '$context.requestId',
  '$context.extendedRequestId',
  '$context.requestTime',
  '$context.requestTimeEpoch',
  '$context.identity.sourceIp',
  '$context.identity.userAgent',
  '$context.httpMethod',
  '$context.routeKey',
  '$context.path',
  '$context.protocol',
  '$context.status',
  '$context.responseLength',
  '$context.responseLatency',
  '$context.integrationLatency',
  '$context.integration.status',
  '$context.error.message',
];
