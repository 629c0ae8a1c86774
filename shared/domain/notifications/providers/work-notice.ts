import type { NotifyConfig } from '../../../config/env.ts';
import { plainText, type RenderedMessage } from '../render.ts';
import { FORMAT_ACTION_CARD, FORMAT_MARKDOWN } from '../../tasks/templates.ts';
import {
  guard,
  httpCall,
  httpStatusOutcome,
  type ProviderJson,
  ProviderUnreachable,
  postJson,
} from './http.ts';
import { delivered, failed, rejected, type SendOutcome, sanitizeDetail } from './types.ts';

/**
 * Work notifications to people through the provider's corporate app API (dingworker, yachworker,
 * wechat). Each takes an access token from `gettoken` with the app's credentials, cached in memory
 * until shortly before it expires (and dropped when the provider says it is invalid), then sends one
 * message to the whole recipient list:
 * - DingTalk: `GET <base>/gettoken?appkey&appsecret`, then
 *   `POST <base>/topapi/message/corpconversation/asyncsend_v2?access_token=` `{agent_id, userid_list, msg}`;
 *   recipients are the users' `user` account names.
 * - WeChat Work: `GET <base>/gettoken?corpid&corpsecret`, then `POST <base>/message/send?access_token=`
 *   `{touser: "a|b", agentid, msgtype, ...}`; recipients are the users' `wechatid`.
 * - Yach: `GET <base>/gettoken?appkey&appsecret`, then `POST <base>/v1/single/message/send?access_token=`
 *   (form: `to_work_code` "a|b", `message` JSON, `message_id` = job id for de-duplication);
 *   recipients are the users' `user` account names (work codes).
 */
export interface WorkNoticeProvider {
  send(recipients: string[], m: RenderedMessage, jobId: string): Promise<SendOutcome>;
}

interface CachedToken {
  token: string;
  expiresAtMs: number;
}
const tokens = new Map<string, CachedToken>();
const SAFETY_MS = 5 * 60_000;

/** For tests: forget cached access tokens. */
export function clearTokenCache(): void {
  tokens.clear();
}

/** Provider answered that the token is invalid or expired: refresh and try once more. */
const TOKEN_CODES = new Set([40001, 40014, 42001, 88, 40078]);
/** System busy / frequency limits: retry later. */
const RETRY_CODES = new Set([-1, 45009, 45033, 90018, 90019]);

type TokenFetch = () => Promise<{ token: string; expiresIn: number } | SendOutcome>;

async function withToken(
  cacheKey: string,
  fetchToken: TokenFetch,
  nowMs: () => number,
  call: (token: string) => Promise<SendOutcome & { tokenInvalid?: boolean }>,
): Promise<SendOutcome> {
  for (let round = 0; round < 2; round++) {
    let cached = tokens.get(cacheKey);
    if (!cached || cached.expiresAtMs <= nowMs()) {
      const got = await fetchToken();
      if ('outcome' in got) return got;
      cached = {
        token: got.token,
        expiresAtMs: nowMs() + Math.max(60_000, got.expiresIn * 1000 - SAFETY_MS),
      };
      tokens.set(cacheKey, cached);
    }
    const result = await call(cached.token);
    if (!result.tokenInvalid) return { outcome: result.outcome, code: result.code, detail: result.detail };
    tokens.delete(cacheKey);
  }
  return failed('token_invalid', 'access token refused twice');
}

function classify(
  status: number,
  json: ProviderJson,
  text: string,
  okCodes: number[],
): SendOutcome & { tokenInvalid?: boolean } {
  if (status !== 200) return httpStatusOutcome(status);
  if (!json || typeof json !== 'object') return failed('bad_reply', sanitizeDetail(text));
  const code = json.errcode ?? json.code;
  const msg = sanitizeDetail(json.errmsg ?? json.msg);
  if (okCodes.includes(code)) return delivered(String(code), msg);
  if (typeof code !== 'number') return failed('bad_reply', sanitizeDetail(text));
  if (TOKEN_CODES.has(code)) return { ...failed(String(code), msg), tokenInvalid: true };
  if (RETRY_CODES.has(code)) return failed(String(code), msg);
  return rejected(String(code), msg);
}

function tokenFrom(json: ProviderJson): { token: string; expiresIn: number } | undefined {
  const token = json?.access_token ?? json?.obj?.access_token;
  if (typeof token !== 'string' || !token) return undefined;
  const expiresIn = Number(json?.expires_in ?? json?.obj?.expires_in ?? json?.obj?.expired_time ?? 7200);
  return {
    token,
    expiresIn: Number.isFinite(expiresIn) && expiresIn > 0 && expiresIn < 86_400 * 30 ? expiresIn : 7200,
  };
}

function tokenFetcher(url: URL, timeoutMs: number): TokenFetch {
  return async () => {
    let reply: Awaited<ReturnType<typeof httpCall>>;
    try {
      reply = await httpCall(url, { method: 'GET' }, timeoutMs);
    } catch (err) {
      if (err instanceof ProviderUnreachable) return failed(`gettoken_${err.code}`, err.message);
      throw err;
    }
    // A refused token request is a deployment problem (credentials), not the message's: retry it, so
    // the job ends in the dead-letter queue, from where it can be redriven once the setting is fixed.
    if (reply.status !== 200) return failed(`gettoken_http_${reply.status}`);
    const got = tokenFrom(reply.json);
    if (got) return got;
    const code = reply.json?.errcode ?? reply.json?.code ?? 'bad_reply';
    return failed(`gettoken_${code}`, sanitizeDetail(reply.json?.errmsg ?? reply.json?.msg));
  };
}

function markdownOrText(m: RenderedMessage) {
  return m.format === FORMAT_MARKDOWN || m.format === FORMAT_ACTION_CARD;
}

/**
 * A provider that sends with an access token: the token from `<base>/gettoken` with the app's
 * credentials as query parameters, cached per `cacheKey` (withToken); `send` calls the API at
 * `api(path)`, `<base><path>?access_token=<token>`, behind the provider guard.
 */
function tokenWorker(spec: {
  baseUrl: string;
  credentials: Record<string, string>;
  cacheKey: string;
  timeoutMs: number;
  nowMs: () => number;
  send: (
    api: (path: string) => URL,
    recipients: string[],
    m: RenderedMessage,
    jobId: string,
  ) => Promise<SendOutcome & { tokenInvalid?: boolean }>;
}): WorkNoticeProvider {
  const tokenUrl = new URL(`${spec.baseUrl}/gettoken`);
  for (const [name, value] of Object.entries(spec.credentials)) tokenUrl.searchParams.set(name, value);
  const fetchToken = tokenFetcher(tokenUrl, spec.timeoutMs);
  return {
    send: (recipients, m, jobId) =>
      withToken(spec.cacheKey, fetchToken, spec.nowMs, (token) =>
        guard(() => {
          const api = (path: string) => {
            const url = new URL(`${spec.baseUrl}${path}`);
            url.searchParams.set('access_token', token);
            return url;
          };
          return spec.send(api, recipients, m, jobId);
        }),
      ),
  };
}

export function dingWorker(
  cfg: NonNullable<NotifyConfig['dingworker']>,
  opts: { timeoutMs: number; linkUrl?: string; nowMs: () => number },
): WorkNoticeProvider {
  return tokenWorker({
    baseUrl: cfg.baseUrl,
    credentials: { appkey: cfg.appKey, appsecret: cfg.appSecret },
    cacheKey: `ding:${cfg.baseUrl}:${cfg.appKey}`,
    timeoutMs: opts.timeoutMs,
    nowMs: opts.nowMs,
    send: async (api, recipients, m) => {
      let msg: Record<string, unknown>;
      if (m.format === FORMAT_ACTION_CARD && opts.linkUrl) {
        msg = {
          msgtype: 'action_card',
          action_card: {
            title: m.title,
            markdown: m.body,
            single_title: 'View',
            single_url: opts.linkUrl,
          },
        };
      } else if (markdownOrText(m)) {
        msg = { msgtype: 'markdown', markdown: { title: m.title, text: m.body } };
      } else {
        msg = { msgtype: 'text', text: { content: plainText(m) } };
      }
      const reply = await postJson(
        api('/topapi/message/corpconversation/asyncsend_v2'),
        { agent_id: Number(cfg.agentId) || cfg.agentId, userid_list: recipients.join(','), msg },
        opts.timeoutMs,
      );
      return classify(reply.status, reply.json, reply.text, [0]);
    },
  });
}

export function wechatWorker(
  cfg: NonNullable<NotifyConfig['wechat']>,
  opts: { timeoutMs: number; nowMs: () => number },
): WorkNoticeProvider {
  return tokenWorker({
    baseUrl: cfg.baseUrl,
    credentials: { corpid: cfg.corpId, corpsecret: cfg.corpSecret },
    cacheKey: `wechat:${cfg.baseUrl}:${cfg.corpId}:${cfg.agentId}`,
    timeoutMs: opts.timeoutMs,
    nowMs: opts.nowMs,
    send: async (api, recipients, m) => {
      const body = markdownOrText(m)
        ? { msgtype: 'markdown', markdown: { content: m.body } }
        : { msgtype: 'text', text: { content: plainText(m) } };
      const reply = await postJson(
        api('/message/send'),
        { touser: recipients.join('|'), agentid: Number(cfg.agentId) || cfg.agentId, ...body },
        opts.timeoutMs,
      );
      const out = classify(reply.status, reply.json, reply.text, [0]);
      const invalid = reply.json?.invaliduser;
      return invalid && out.outcome === 'delivered'
        ? { ...out, detail: sanitizeDetail(`invaliduser ${invalid}`) }
        : out;
    },
  });
}

export function yachWorker(
  cfg: NonNullable<NotifyConfig['yachworker']>,
  opts: { timeoutMs: number; nowMs: () => number },
): WorkNoticeProvider {
  return tokenWorker({
    baseUrl: cfg.baseUrl,
    credentials: { appkey: cfg.appKey, appsecret: cfg.appSecret },
    cacheKey: `yach:${cfg.baseUrl}:${cfg.appKey}`,
    timeoutMs: opts.timeoutMs,
    nowMs: opts.nowMs,
    send: async (api, recipients, m, jobId) => {
      const message = markdownOrText(m)
        ? { msgtype: 'markdown', markdown: { title: m.title, text: m.body } }
        : { msgtype: 'text', text: { content: plainText(m) } };
      const form = new URLSearchParams({
        to_work_code: recipients.join('|'),
        message: JSON.stringify(message),
        message_id: jobId,
      });
      const reply = await httpCall(
        api('/v1/single/message/send'),
        {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: form.toString(),
        },
        opts.timeoutMs,
      );
      return classify(reply.status, reply.json, reply.text, [200, 0]);
    },
  });
}
