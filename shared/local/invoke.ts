import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type RouteDef, routeEntry, routes } from '../../infra/definitions.ts';
import { queues, schedule } from '../../infra/consumers.ts';
import { routeName } from '../../scripts/gen-events.ts';
import { newNonce, signRequest } from '../domain/auth/request-signature.ts';
import { hmacSign } from '../domain/auth/signature.ts';
import { useBundles } from './bundles.ts';
import { lambdaContext, loadHandler } from './lambda.ts';
import { useLocalStack } from './stack-env.ts';

const USAGE = `usage: npm run invoke -- FUNCTION EVENT.json [options]

Runs one Lambda handler once, in this process, against the running local stack's table and queues
(start it with \`npm start\`), and prints what it returned.

FUNCTION   a route function (GetHealth, PostAlarmReport, PutAlarmtaskStop, ... as in events/http/),
           a consumer (process-alarm, deliver-webhook, send-notification), run-due-work, or a handler file
EVENT      an event file, e.g. events/http/GetHealth.json (\`npm run gen:events\` writes them all)

options (sign the event afresh, as a client would):
  --app ID:TOKEN      application auth headers, request-bound (x-app-id, x-app-timestamp,
                      x-app-nonce, x-app-sign: API guide §3.1.1)
  --task ID:SECRET    task auth parameters id, timestamp, sign (query, form or JSON body)
  --alarm ID:TOKEN    alarm auth: taskid, timestamp, sign of /alarm/report and /alarm/test, and the
                      fixed signature in the query of the monitor adapters (the task must have
                      turned it on: PUT /alarmtask/intake {"fixed_sign": 1})
  --state FILE        state file of the running local stack (default .tocsin-local.json)
  --bundles           run the function's bundle as the CDK deploys it (built, or reused from the
                      cache), not its TypeScript source (also TOCSIN_BUNDLES=1)`;

/** The handler file of a function name. */
export function handlerOf(name: string): { file: string; route?: RouteDef } {
  const route = routes.find((r) => !r.localOnly && routeName(r) === name);
  // A grouped route runs in its group's entry, as on AWS (it dispatches on the event's routeKey).
  if (route) return { file: routeEntry(route), route };
  const base = (file: string) => file.split('/').at(-1)?.replace(/\.ts$/, '');
  const consumer = queues.find((q) => base(q.consumer) === name);
  if (consumer) return { file: consumer.consumer };
  if (base(schedule.handler) === name) return { file: schedule.handler };
  if (existsSync(resolve(name))) return { file: name };
  throw new Error(`unknown function ${name}; see \`npm run invoke -- --help\``);
}

function pair(value: string | undefined, what: string): [number, string] | undefined {
  if (value === undefined) return undefined;
  const i = value.indexOf(':');
  const id = Number(value.slice(0, i));
  if (i < 1 || !Number.isSafeInteger(id))
    throw new Error(`--${what} must be ID:${what === 'task' ? 'SECRET' : 'TOKEN'}`);
  return [id, value.slice(i + 1)];
}

// biome-ignore lint/suspicious/noExplicitAny: an event read from a file
type Event = Record<string, any>;

/** Puts fresh signatures into an HTTP API event (the sample events carry placeholders). */
export function signEvent(
  event: Event,
  route: RouteDef | undefined,
  keys: { app?: [number, string]; task?: [number, string]; alarm?: [number, string] },
  now: number,
): Event {
  if (!route) return event;
  const ts = String(now);
  const out: Event = structuredClone(event);
  out.headers ??= {};
  const setParams = (params: Record<string, string | number>) => {
    const type = String(
      Object.entries(out.headers).find(([k]) => k.toLowerCase() === 'content-type')?.[1] ?? '',
    );
    if (out.body && type.startsWith('application/json')) {
      out.body = JSON.stringify({ ...JSON.parse(out.body), ...params });
    } else if (out.body && type.startsWith('application/x-www-form-urlencoded')) {
      const form = new URLSearchParams(out.body);
      for (const [k, v] of Object.entries(params)) form.set(k, String(v));
      out.body = form.toString();
    } else {
      out.queryStringParameters = { ...out.queryStringParameters, ...params };
      out.rawQueryString = new URLSearchParams(out.queryStringParameters).toString();
    }
  };
  if (keys.task && route.auth === 'app+task') {
    const [id, secret] = keys.task;
    setParams({ id, timestamp: ts, sign: hmacSign(secret, id, ts) });
  }
  if (keys.alarm && route.auth === 'alarm') {
    const [id, token] = keys.alarm;
    const sdk = route.path === '/alarm/report' || route.path === '/alarm/test';
    if (sdk) setParams({ taskid: id, timestamp: now, sign: hmacSign(token, id, ts) });
    else {
      const query = {
        ...out.queryStringParameters,
        taskid: String(id),
        timestamp: ts,
        sign: hmacSign(token, id, ts),
      };
      out.queryStringParameters = query;
      out.rawQueryString = new URLSearchParams(query).toString();
    }
  }
  // Last: the request-bound app signature covers the query and the body as they now are.
  if (keys.app && ['app', 'app+task', 'app|person', 'reader', 'admin'].includes(route.auth)) {
    const [id, token] = keys.app;
    const nonce = newNonce();
    const request = {
      method: route.method,
      path: route.path,
      rawQuery: String(out.rawQueryString ?? ''),
      body: Buffer.from(String(out.body ?? ''), out.isBase64Encoded ? 'base64' : 'utf8'),
    };
    Object.assign(out.headers, {
      'x-app-id': String(id),
      'x-app-timestamp': ts,
      'x-app-nonce': nonce,
      'x-app-sign': signRequest(token, request, id, ts, nonce),
    });
  }
  return out;
}

async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      app: { type: 'string' },
      task: { type: 'string' },
      alarm: { type: 'string' },
      state: { type: 'string' },
      bundles: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || positionals.length !== 2) {
    console.log(USAGE);
    process.exitCode = values.help ? 0 : 2;
    return;
  }
  const [name, eventFile] = positionals;
  const { file, route } = handlerOf(name);
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  await useLocalStack(values.state);
  await useBundles(values.bundles === true || process.env.TOCSIN_BUNDLES === '1');
  const { nowSeconds } = await import('../clock.ts');
  const event = signEvent(
    JSON.parse(readFileSync(resolve(eventFile), 'utf8')) as Event,
    route,
    { app: pair(values.app, 'app'), task: pair(values.task, 'task'), alarm: pair(values.alarm, 'alarm') },
    nowSeconds(),
  );
  const handler = await loadHandler(file);
  const result = await handler(event, lambdaContext(`tocsin-${name}`));
  if (route && result && typeof result.body === 'string') {
    console.log(`HTTP ${result.statusCode}`);
    console.log(JSON.stringify(JSON.parse(result.body), null, 2));
  } else {
    console.log(JSON.stringify(result ?? null, null, 2));
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error(`error: ${(err as Error).message}`);
    process.exitCode = 1;
  });
}
