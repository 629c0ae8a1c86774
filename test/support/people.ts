import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { inject } from 'vitest';
import { setPasswordByOperator } from '../../shared/domain/signin/signin.ts';
import { importDirectory } from '../../shared/domain/directory/service.ts';
import { projectRoot } from '../../shared/local/paths.ts';
import { baseUrl } from './client.ts';
import { checkAnswer } from './openapi-check.ts';

/**
 * People signing in over HTTP, as a browser does: a raw HTTP client that can send from any loopback
 * address (the service throttles failed sign-ins per source address, and every other suite sends
 * from 127.0.0.1), a cookie jar, and the operator's `npm run admin` with standard input.
 */
export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Set-Cookie values. */
  cookies: string[];
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary envelopes
  json: { code: number; msg: string; data: any };
}

export interface Send {
  method?: string;
  headers?: Record<string, string>;
  json?: unknown;
  body?: string;
  /** The source address (127.x.y.z). */
  from?: string;
}

/** One HTTP request to `url` (absolute, or a path on the stack). */
export function send(url: string, opts: Send = {}): Promise<Answer> {
  const target = new URL(url, baseUrl());
  const headers: Record<string, string> = { ...opts.headers };
  let body = opts.body;
  if (opts.json !== undefined) {
    body = JSON.stringify(opts.json);
    headers['content-type'] ??= 'application/json';
  }
  return new Promise((resolve, reject) => {
    const req = request(
      target,
      { method: opts.method ?? (body === undefined ? 'GET' : 'POST'), headers, localAddress: opts.from },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c as Buffer));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: Answer['json'] = { code: -1, msg: '', data: {} };
          try {
            json = JSON.parse(text);
          } catch {}
          const method = opts.method ?? (body === undefined ? 'GET' : 'POST');
          const contentType = res.headers['content-type'];
          try {
            checkAnswer({ method, url: target.href, status: res.statusCode ?? 0, contentType, body: text });
          } catch (err) {
            reject(err);
            return;
          }
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            cookies: res.headers['set-cookie'] ?? [],
            text,
            json,
          });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Cookies by name, as a browser keeps them for one site (Max-Age=0 removes one). */
export class Jar {
  readonly cookies = new Map<string, string>();

  take(setCookies: string[]): void {
    for (const c of setCookies) {
      const [pair, ...attrs] = c.split(';');
      const at = pair.indexOf('=');
      const name = pair.slice(0, at).trim();
      const value = pair.slice(at + 1).trim();
      if (attrs.some((a) => a.trim().toLowerCase() === 'max-age=0')) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

/** A signed-in browser: its cookie, its CSRF token, and requests the way the console makes them. */
export class Browser {
  readonly jar = new Jar();
  csrf = '';
  constructor(readonly from = '127.0.0.1') {}

  async send(path: string, opts: Send = {}): Promise<Answer> {
    const method = opts.method ?? (opts.json === undefined && opts.body === undefined ? 'GET' : 'POST');
    const origin = new URL(baseUrl()).origin;
    const headers: Record<string, string> = {
      ...(this.jar.cookies.size ? { cookie: this.jar.header() } : {}),
      ...(method === 'GET' ? {} : { origin, 'x-csrf-token': this.csrf }),
      ...opts.headers,
    };
    const answer = await send(path, { ...opts, method, headers, from: opts.from ?? this.from });
    this.jar.take(answer.cookies);
    return answer;
  }

  async signIn(account: string, password: string): Promise<Answer> {
    const answer = await this.send('/auth/signin', { json: { account, password } });
    if (answer.json.code === 0) this.csrf = answer.json.data.csrf_token;
    return answer;
  }

  get session(): string | undefined {
    return this.jar.cookies.get('tocsin_session');
  }
}

export interface TestPerson {
  uid: number;
  user: string;
  email: string;
  username: string;
  role?: number;
}

/** Puts people in the directory (with passwords, set as the operator's command does). */
export async function addPeople(people: (TestPerson & { password?: string })[]): Promise<void> {
  await importDirectory({
    users: people.map(({ password: _p, ...p }) => ({ role: 0, ...p })),
  });
  for (const p of people) if (p.password) await setPasswordByOperator(p.uid, p.password);
}

/** `npm run admin -- ...args` against the test stack, with `stdin` piped in. */
export function admin(
  args: string[],
  stdin = '',
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'shared/local/admin.ts', ...args], {
    cwd: projectRoot,
    env: { ...process.env, TOCSIN_STATE_FILE: inject('stack').stateFile },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => {
    stdout += String(d);
  });
  child.stderr.on('data', (d) => {
    stderr += String(d);
  });
  child.stdin.end(stdin);
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

/** Polls `probe` until it gives a value (at most `timeoutMs`). */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 45_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** One request as a browser makes it (GET, or a form POST), with the jar's cookies; keeps what it sets. */
export async function browse(url: string, jar: Jar, form?: string): Promise<Answer> {
  const answer = await send(url, {
    method: form ? 'POST' : 'GET',
    headers: {
      cookie: jar.header(),
      ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
    },
    body: form,
  });
  jar.take(answer.cookies);
  return answer;
}

/**
 * A browser at the test OpenID Connect provider (test/support/oidc.ts) from `location` (its
 * authorization URL) on: follows its redirects, fills its login form with `email`, and stops at the
 * redirect that leaves the provider (the service's callback), whose URL it returns.
 */
export async function signInAtProvider(
  location: string,
  email: string,
  jar: Jar,
  sub?: string,
): Promise<string> {
  const issuer = new URL(location).origin;
  let url = location;
  let answer = await browse(url, jar);
  for (let hop = 0; hop < 20; hop++) {
    const next = answer.headers.location as string | undefined;
    if (next) {
      url = new URL(next, url).href;
      if (new URL(url).origin !== issuer) return url;
      answer = await browse(url, jar);
      continue;
    }
    const form = /<form method="post" action="([^"]+)"/.exec(answer.text);
    if (answer.status !== 200 || !form)
      throw new Error(`provider answered ${answer.status}: ${answer.text.slice(0, 300)}`);
    url = new URL(form[1], issuer).href;
    answer = await browse(
      url,
      jar,
      `email=${encodeURIComponent(email)}${sub ? `&sub=${encodeURIComponent(sub)}` : ''}`,
    );
  }
  throw new Error('too many redirects at the provider');
}
