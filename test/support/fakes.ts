import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { SMTPServer } from 'smtp-server';

/**
 * Provider fakes for the notification channels: real servers on 127.0.0.1 that speak each provider's
 * wire protocol closely enough for the service's clients, started by the integration global setup
 * before the stack (their URLs go into the stack's env) and controlled by tests over HTTP (tests run in
 * other processes): `GET /_fake/requests?kind=`, `POST /_fake/robots`, `POST /_fake/script`,
 * `GET /_fake/mails`.
 *
 * - DingTalk / Yach group robots: `POST /ding/robot/send`, `POST /yach/robot/send`; a robot registered
 *   with a secret has its `timestamp`/`sign` verified exactly as the provider computes it
 *   (base64 hmac_sha256(secret, timestamp + "\n" + secret)) and answers errcode 310000 on a mismatch.
 * - Work notices: DingTalk (`/dingapi/gettoken`, `/dingapi/topapi/message/corpconversation/asyncsend_v2`),
 *   WeChat Work (`/wechat/cgi-bin/gettoken`, `/wechat/cgi-bin/message/send`), Yach (`/yachapi/gettoken`,
 *   `/yachapi/v1/single/message/send`); tokens are issued for the configured credentials only.
 * - Amazon SNS (query protocol, `Publish`) at `/sns/`, Pinpoint SMS Voice v2 (JSON 1.0,
 *   `SendVoiceMessage`) at `/pinpoint/`, SES v2 (`POST /ses/v2/email/outbound-emails`).
 * - SMTP: an smtp-server that parses what it receives (headers, quoted-printable / base64 parts).
 */
export type FakeKind =
  | 'dinggroup'
  | 'yachgroup'
  | 'dingworker'
  | 'wechat'
  | 'yachworker'
  | 'gettoken'
  | 'sns'
  | 'pinpoint'
  | 'ses'
  | 'smtp';

export interface FakeRequest {
  kind: FakeKind;
  at: number;
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  // biome-ignore lint/suspicious/noExplicitAny: parsed JSON / form of arbitrary shape
  json: any;
  /** Robots: whether a signature was present and correct. */
  signed?: boolean;
  /** What the fake answered. */
  reply: { status: number; body: unknown };
}

export interface FakeReply {
  status?: number;
  body?: unknown;
  /** SMTP only: an SMTP reply code to fail the message with (e.g. 451, 550). */
  smtpCode?: number;
  /** Only for a request whose body (or raw message) contains this text (tests run in parallel). */
  match?: string;
}

export interface FakeMail {
  at: number;
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
  headers: Record<string, string>;
}

export const FAKE_CREDENTIALS = {
  ding: { appKey: 'ding-app-key', appSecret: 'ding-app-secret', agentId: '1001' },
  wechat: { corpId: 'wx-corp', corpSecret: 'wx-secret', agentId: '2002' },
  yach: { appKey: 'yach-app-key', appSecret: 'yach-app-secret' },
  emailFrom: 'tocsin@example.com',
};

export interface Fakes {
  url: string;
  smtpPort: number;
  /** Environment for the stack's notification providers. */
  env: Record<string, string>;
  /** What the fakes received so far, in order (for a caller in this process; others use FakeClient). */
  requests: readonly FakeRequest[];
  mails: readonly FakeMail[];
  stop(): Promise<void>;
}

function robotSignOf(secret: string, timestamp: string): string {
  return createHmac('sha256', secret).update(`${timestamp}\n${secret}`).digest('base64');
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

// --- minimal MIME parsing for the SMTP fake ---------------------------------------------------------

function parseHeaders(block: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of block.replace(/\r\n[ \t]+/g, ' ').split(/\r\n/)) {
    const i = line.indexOf(':');
    if (i > 0) out[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  return out;
}

function decodeWords(s: string): string {
  return s.replace(/=\?([^?]+)\?([QqBb])\?([^?]*)\?=\s*/g, (_, _cs, enc: string, data: string) => {
    if (enc.toUpperCase() === 'B') return Buffer.from(data, 'base64').toString('utf8');
    const bytes = data
      .replace(/_/g, ' ')
      .replace(/=([0-9A-Fa-f]{2})/g, (_m, h) => String.fromCharCode(parseInt(h, 16)));
    return Buffer.from(bytes, 'latin1').toString('utf8');
  });
}

function decodeBody(body: string, encoding: string | undefined): string {
  const enc = (encoding ?? '7bit').toLowerCase();
  if (enc === 'base64') return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (enc === 'quoted-printable') {
    const bytes = body
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-Fa-f]{2})/g, (_m, h) => String.fromCharCode(parseInt(h, 16)));
    return Buffer.from(bytes, 'latin1').toString('utf8');
  }
  return body;
}

function parseMime(raw: string): { headers: Record<string, string>; text: string; html: string } {
  const split = raw.indexOf('\r\n\r\n');
  const headers = parseHeaders(split >= 0 ? raw.slice(0, split) : raw);
  const body = split >= 0 ? raw.slice(split + 4) : '';
  const type = headers['content-type'] ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  let text = '';
  let html = '';
  if (/^multipart\//i.test(type) && boundary) {
    for (const part of body.split(`--${boundary}`).slice(1)) {
      if (part.startsWith('--')) break;
      const p = parseMime(part.replace(/^\r\n/, ''));
      text ||= p.text;
      html ||= p.html;
    }
  } else {
    const decoded = decodeBody(body, headers['content-transfer-encoding']).replace(/\r\n$/, '');
    if (/^text\/html/i.test(type)) html = decoded;
    else text = decoded;
  }
  return { headers, text, html };
}

// --- the fakes --------------------------------------------------------------------------------------

export async function startFakes(): Promise<Fakes> {
  const requests: FakeRequest[] = [];
  const mails: FakeMail[] = [];
  const robots = new Map<string, { secret?: string; replies: FakeReply[] }>();
  const scripts = new Map<FakeKind, FakeReply[]>();
  const issued = new Set<string>();

  const scripted = (kind: FakeKind, body: string): FakeReply | undefined => {
    const list = scripts.get(kind) ?? [];
    const i = list.findIndex((r) => !r.match || body.includes(r.match));
    return i >= 0 ? list.splice(i, 1)[0] : undefined;
  };
  const issue = (prefix: string) => {
    const t = `${prefix}-${randomUUID()}`;
    issued.add(t);
    return t;
  };

  const http: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readBody(req);
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const query = Object.fromEntries(url.searchParams);
    let json: unknown;
    try {
      json = body ? JSON.parse(body) : undefined;
    } catch {
      json = Object.fromEntries(new URLSearchParams(body));
    }
    const send = (status: number, payload: unknown, type = 'application/json') => {
      res.writeHead(status, { 'content-type': type });
      res.end(typeof payload === 'string' ? payload : JSON.stringify(payload));
    };
    const log = (
      kind: FakeKind,
      reply: { status: number; body: unknown },
      extra: Partial<FakeRequest> = {},
    ) => {
      requests.push({
        kind,
        at: Date.now(),
        method: req.method ?? '',
        path: url.pathname,
        query,
        headers: req.headers,
        body,
        json,
        reply,
        ...extra,
      });
      send(
        reply.status,
        reply.body,
        kind === 'sns' ? 'text/xml' : kind === 'pinpoint' ? 'application/x-amz-json-1.0' : 'application/json',
      );
    };
    const p = url.pathname;

    // Control endpoints.
    if (p === '/_fake/requests') {
      const kind = url.searchParams.get('kind');
      return send(200, kind ? requests.filter((r) => r.kind === kind) : requests);
    }
    if (p === '/_fake/mails') return send(200, mails);
    if (p === '/_fake/robots' && req.method === 'POST') {
      const r = json as { token: string; secret?: string; replies?: FakeReply[] };
      robots.set(r.token, { secret: r.secret, replies: r.replies ?? [] });
      return send(200, { ok: true });
    }
    if (p === '/_fake/script' && req.method === 'POST') {
      const s = json as { kind: FakeKind; replies: FakeReply[] };
      scripts.set(s.kind, [...(scripts.get(s.kind) ?? []), ...s.replies]);
      return send(200, { ok: true });
    }

    // Group robots.
    if (p === '/ding/robot/send' || p === '/yach/robot/send') {
      const kind: FakeKind = p.startsWith('/ding') ? 'dinggroup' : 'yachgroup';
      const robot = robots.get(query.access_token ?? '');
      let signed: boolean | undefined;
      if (robot?.secret) {
        signed =
          /^\d{13}$/.test(query.timestamp ?? '') &&
          typeof query.sign === 'string' &&
          safeEqual(query.sign, robotSignOf(robot.secret, query.timestamp));
        if (!signed)
          return log(kind, { status: 200, body: { errcode: 310000, errmsg: 'sign not match' } }, { signed });
      }
      const next = robot?.replies.shift();
      return log(
        kind,
        { status: next?.status ?? 200, body: next?.body ?? { errcode: 0, errmsg: 'ok' } },
        { signed },
      );
    }

    // Work notices.
    if (p === '/dingapi/gettoken' || p === '/yachapi/gettoken' || p === '/wechat/cgi-bin/gettoken') {
      const c = FAKE_CREDENTIALS;
      const ok =
        p === '/dingapi/gettoken'
          ? query.appkey === c.ding.appKey && query.appsecret === c.ding.appSecret
          : p === '/yachapi/gettoken'
            ? query.appkey === c.yach.appKey && query.appsecret === c.yach.appSecret
            : query.corpid === c.wechat.corpId && query.corpsecret === c.wechat.corpSecret;
      if (!ok)
        return log('gettoken', { status: 200, body: { errcode: 40089, errmsg: 'invalid credentials' } });
      const token = issue(p.split('/')[1]);
      const reply =
        p === '/yachapi/gettoken'
          ? { code: 200, msg: 'ok', obj: { access_token: token, expired_time: 7200 } }
          : { errcode: 0, errmsg: 'ok', access_token: token, expires_in: 7200 };
      return log('gettoken', { status: 200, body: reply });
    }
    const workKinds: Record<string, FakeKind> = {
      '/dingapi/topapi/message/corpconversation/asyncsend_v2': 'dingworker',
      '/wechat/cgi-bin/message/send': 'wechat',
      '/yachapi/v1/single/message/send': 'yachworker',
    };
    if (workKinds[p]) {
      const kind = workKinds[p];
      if (!issued.has(query.access_token ?? '')) {
        const bad =
          kind === 'yachworker'
            ? { code: 40014, msg: 'invalid access_token' }
            : { errcode: 40014, errmsg: 'invalid access_token' };
        return log(kind, { status: 200, body: bad });
      }
      const next = scripted(kind, `${body}\n${JSON.stringify(json)}`);
      const ok =
        kind === 'yachworker' ? { code: 200, msg: 'ok', obj: {} } : { errcode: 0, errmsg: 'ok', task_id: 1 };
      return log(kind, { status: next?.status ?? 200, body: next?.body ?? ok });
    }

    // AWS.
    if (p === '/sns/' || p === '/sns') {
      const next = scripted('sns', `${body}\n${JSON.stringify(json)}`);
      if (next) return log('sns', { status: next.status ?? 400, body: next.body ?? '' });
      const id = randomUUID();
      const xml = `<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishResult><MessageId>${id}</MessageId></PublishResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></PublishResponse>`;
      return log('sns', { status: 200, body: xml });
    }
    if (p === '/pinpoint/' || p === '/pinpoint') {
      const next = scripted('pinpoint', `${body}\n${JSON.stringify(json)}`);
      return log('pinpoint', {
        status: next?.status ?? 200,
        body: next?.body ?? { MessageId: randomUUID() },
      });
    }
    if (p === '/ses/v2/email/outbound-emails') {
      const next = scripted('ses', `${body}\n${JSON.stringify(json)}`);
      return log('ses', { status: next?.status ?? 200, body: next?.body ?? { MessageId: randomUUID() } });
    }
    send(404, { errcode: 404, errmsg: 'no such fake' });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(http.address() as { port: number }).port}`;

  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const parsed = parseMime(raw);
        const next = scripted(
          'smtp',
          `${decodeWords(parsed.headers.subject ?? '')}\n${parsed.text}\n${parsed.html}`,
        );
        if (next?.smtpCode) {
          const err = Object.assign(new Error(`scripted failure ${next.smtpCode}`), {
            responseCode: next.smtpCode,
          });
          return callback(err);
        }
        mails.push({
          at: Date.now(),
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          subject: decodeWords(parsed.headers.subject ?? ''),
          text: parsed.text,
          html: parsed.html,
          headers: parsed.headers,
        });
        callback();
      });
    },
  });
  await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', () => r()));
  const smtpPort = (smtp.server.address() as { port: number }).port;

  const c = FAKE_CREDENTIALS;
  return {
    url,
    smtpPort,
    env: {
      ROBOT_DING_BASE_URL: `${url}/ding/robot/send`,
      ROBOT_YACH_BASE_URL: `${url}/yach/robot/send`,
      DING_WORK_BASE_URL: `${url}/dingapi`,
      DING_WORK_APPKEY: c.ding.appKey,
      DING_WORK_APPSECRET: c.ding.appSecret,
      DING_WORK_AGENT_ID: c.ding.agentId,
      WECHAT_BASE_URL: `${url}/wechat/cgi-bin`,
      WECHAT_CORP_ID: c.wechat.corpId,
      WECHAT_CORP_SECRET: c.wechat.corpSecret,
      WECHAT_AGENT_ID: c.wechat.agentId,
      YACH_WORK_BASE_URL: `${url}/yachapi`,
      YACH_WORK_APPKEY: c.yach.appKey,
      YACH_WORK_APPSECRET: c.yach.appSecret,
      EMAIL_PROVIDER: 'smtp',
      SMTP_HOST: '127.0.0.1',
      SMTP_PORT: String(smtpPort),
      SMTP_SECURE: 'false',
      EMAIL_FROM: c.emailFrom,
      SMS_PROVIDER: 'sns',
      SNS_ENDPOINT: `${url}/sns/`,
      // The phone channel stays unconfigured in tests: its jobs are recorded as skipped.
      VOICE_PROVIDER: 'none',
      NOTIFY_HTTP_TIMEOUT_MS: '2000',
    },
    requests,
    mails,
    async stop() {
      http.closeAllConnections();
      await Promise.all([
        new Promise<void>((r) => http.close(() => r())),
        new Promise<void>((r) => smtp.close(() => r())),
      ]);
    },
  };
}

/** Test-side client of the fakes (tests run in other processes than the global setup). */
export class FakeClient {
  constructor(readonly url: string) {}

  async requests(kind: FakeKind): Promise<FakeRequest[]> {
    const res = await fetch(`${this.url}/_fake/requests?kind=${kind}`);
    return (await res.json()) as FakeRequest[];
  }

  async mails(): Promise<FakeMail[]> {
    const res = await fetch(`${this.url}/_fake/mails`);
    return (await res.json()) as FakeMail[];
  }

  /** Registers a robot token (with its secret, verified on every call) and its next replies. */
  async robot(token: string, opts: { secret?: string; replies?: FakeReply[] } = {}): Promise<void> {
    await fetch(`${this.url}/_fake/robots`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token, ...opts }),
    });
  }

  /** Queues the next replies of a provider (work notices, AWS fakes, SMTP). */
  async script(kind: FakeKind, replies: FakeReply[]): Promise<void> {
    await fetch(`${this.url}/_fake/script`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind, replies }),
    });
  }

  /** Polls until `pick` returns a non-empty list, or fails after `timeoutMs`. */
  async waitFor<T>(what: string, pick: () => Promise<T[]>, min = 1, timeoutMs = 15_000): Promise<T[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = await pick();
      if (found.length >= min) return found;
      if (Date.now() > deadline)
        throw new Error(`fakes: ${what}: expected ${min}, got ${found.length} in ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
