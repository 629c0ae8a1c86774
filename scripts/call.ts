import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { routes } from '../infra/definitions.ts';
import { signEvent } from '../shared/local/invoke.ts';
import { defaultStateFile } from '../shared/local/paths.ts';

const USAGE = `usage: npm run -s call -- [options] METHOD PATH [JSON]

Sends one request to the running local stack (\`npm start\`, found through the state file it writes)
and prints the answer. The request is signed as a client signs it (docs/api-guide.md §3), with the
service's clock (so a moved test clock does not expire the signature):

  --app ID:TOKEN      application auth, bound to the request (method, path, query, body, a nonce):
                      X-App-Id, X-App-Timestamp, X-App-Nonce, X-App-Sign (§3.1.1)
  --task ID:SECRET    task auth: id, timestamp, sign in the query (GET, DELETE) or the JSON body (PUT)
  --alarm ID:TOKEN    alarm auth: taskid, timestamp, sign in the body of /alarm/report and /alarm/test,
                      or the fixed signature in the query of a monitor adapter
  --field PATH        print only this value of the answer (e.g. data.task.id; strings unquoted);
                      repeat it for several values, printed on one line, separated by tabs
  --state FILE        state file of the running stack (default: TOCSIN_STATE_FILE, else
                      .tocsin-local.json in the project root)
  --url URL           send to this base URL instead (e.g. a deployed API; BASE_PATH included)

PATH may carry a query string (GET /alarmtask/alarms?uid=1&task_id=100001). JSON is the request
body. Exit code 0 when the service answered code 0, else 1 (with --field the answer then goes to
standard error, so a shell variable captures nothing).

  npm run -s call -- --app 385732:0123456789abcdef0123456789abcdef01234567 GET /department/simple`;

// biome-ignore lint/suspicious/noExplicitAny: an API answer of any shape
type Json = any;

export interface CallOutput {
  out: (line: string) => void;
  err: (line: string) => void;
}

function keyPair(value: string | undefined, flag: string): [number, string] | undefined {
  if (value === undefined) return undefined;
  const i = value.indexOf(':');
  const id = Number(value.slice(0, i));
  if (i < 1 || !Number.isSafeInteger(id) || i === value.length - 1) {
    throw new Error(`--${flag} must be ID:${flag === 'task' ? 'SECRET' : 'TOKEN'}, got ${value}`);
  }
  return [id, value.slice(i + 1)];
}

/** The base URL of the running local stack, from the state file `npm start` writes. */
function stackUrl(stateOption?: string): string {
  const file = resolve(stateOption || process.env.TOCSIN_STATE_FILE || defaultStateFile);
  if (!existsSync(file)) throw new Error(`no running local stack (no ${file}); run \`npm start\` first`);
  const url = (JSON.parse(readFileSync(file, 'utf8')) as { url?: unknown }).url;
  if (typeof url !== 'string') throw new Error(`${file} names no url`);
  return url;
}

/** The service's now: the local stack's test clock, or this machine's clock for another service. */
async function serviceNow(base: string): Promise<number> {
  try {
    const res = await fetch(`${base}/_local/clock`);
    const body = (await res.json()) as { code?: number; data?: { now?: unknown } };
    if (res.ok && body.code === 0 && Number.isSafeInteger(body.data?.now)) return body.data?.now as number;
  } catch {
    // not the local stack (or not reachable: the request below says so)
  }
  return Math.floor(Date.now() / 1000);
}

function pick(answer: Json, path: string): unknown {
  let value: Json = answer;
  for (const segment of path.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, segment)) return undefined;
    value = value[segment];
  }
  return value;
}

/** `npm run call`: returns the process exit code. */
export async function runCall(argv: string[], io: CallOutput): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      app: { type: 'string' },
      task: { type: 'string' },
      alarm: { type: 'string' },
      field: { type: 'string', multiple: true },
      state: { type: 'string' },
      url: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || positionals.length < 2 || positionals.length > 3) {
    (values.help ? io.out : io.err)(USAGE);
    return values.help ? 0 : 2;
  }
  const [methodArg, pathArg, bodyArg] = positionals;
  const method = methodArg.toUpperCase();
  if (!pathArg.startsWith('/')) throw new Error(`PATH must start with /, got ${pathArg}`);
  if (bodyArg !== undefined) JSON.parse(bodyArg); // a typo in the body is the caller's, not the service's
  // PUT and POST carry task and alarm auth in a JSON body, so they always have one.
  const body = bodyArg ?? (method === 'PUT' || method === 'POST' ? '{}' : undefined);
  const keys = {
    app: keyPair(values.app, 'app'),
    task: keyPair(values.task, 'task'),
    alarm: keyPair(values.alarm, 'alarm'),
  };
  const base = (values.url ?? stackUrl(values.state)).replace(/\/+$/, '');
  const target = new URL(pathArg, 'http://path.invalid');
  const route = routes.find((r) => r.method === method && r.path === target.pathname);

  // Signed exactly as `npm run invoke` signs an event: the same placement rules per route.
  const event = signEvent(
    {
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body,
      queryStringParameters: Object.fromEntries(target.searchParams),
      rawQueryString: target.searchParams.toString(),
    },
    route,
    keys,
    await serviceNow(base),
  );
  const query = String(event.rawQueryString ?? '');
  const res = await fetch(`${base}${target.pathname}${query ? `?${query}` : ''}`, {
    method,
    headers: event.headers,
    body: event.body,
  });
  const text = await res.text();
  let answer: Json;
  try {
    answer = JSON.parse(text);
  } catch {
    io.out(text);
    return res.ok ? 0 : 1;
  }
  const ok = res.ok && (answer?.code === undefined || answer.code === 0);
  if (!values.field) {
    io.out(JSON.stringify(answer, null, 2));
    return ok ? 0 : 1;
  }
  if (!ok) {
    io.err(`HTTP ${res.status} ${JSON.stringify(answer)}`);
    return 1;
  }
  const picked: string[] = [];
  for (const path of values.field) {
    const value = pick(answer, path);
    if (value === undefined) {
      io.err(`the answer has no ${path}: ${JSON.stringify(answer)}`);
      return 1;
    }
    picked.push(typeof value === 'string' ? value : JSON.stringify(value));
  }
  io.out(picked.join('\t'));
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  runCall(process.argv.slice(2), {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  }).then(
    (code) => {
      process.exitCode = code;
    },
    (err: Error) => {
      process.stderr.write(`error: ${err.message}\n`);
      process.exitCode = 2;
    },
  );
}
