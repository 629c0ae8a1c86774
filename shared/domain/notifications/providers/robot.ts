import { createHmac } from 'node:crypto';
import { config } from '../../../config/env.ts';
import type { Robot } from '../../../contracts/receivers.ts';
import { isRobotUrl } from '../../channels/outbound-urls.ts';
import { plainText, type RenderedMessage } from '../render.ts';
import { FORMAT_ACTION_CARD, FORMAT_MARKDOWN } from '../../tasks/templates.ts';
import { guard, httpStatusOutcome, type ProviderJson, postJson } from './http.ts';
import { delivered, failed, rejected, type SendOutcome, sanitizeDetail } from './types.ts';

/**
 * Group robots (dinggroup / yachgroup): DingTalk's custom robot API, which Yach robots copy.
 * `POST <base>?access_token=<token>&timestamp=<ms>&sign=<urlencoded base64(hmac_sha256(secret,
 * timestamp + "\n" + secret))>`; the signature parameters only when the robot has a secret. A robot
 * whose `webhook` is already a whole http(s) URL is called at that URL (people paste whole robot URLs).
 * Such a URL was named by a task or report, so it goes through the URL guard at connect time when
 * the deployment blocks private targets (API guide §12.7); the base URL is operator configuration. No
 * call follows a redirect: a 3xx is a refusal like any other non-200.
 */

/** DingTalk: 130101 "send too fast, exceed 20 times per minute"; 410100 the newer spelling of it. */
export const RATE_LIMIT_CODES = new Set([130101, 410100]);
/** Provider-side trouble worth a retry ("system busy"). */
export const BUSY_CODES = new Set([-1]);

export function robotSign(secret: string, timestampMs: number): string {
  return createHmac('sha256', secret).update(`${timestampMs}\n${secret}`).digest('base64');
}

export function robotUrl(base: string, robot: Robot, timestampMs: number): URL {
  const url = isRobotUrl(robot.webhook) ? new URL(robot.webhook) : new URL(base);
  if (!isRobotUrl(robot.webhook)) url.searchParams.set('access_token', robot.webhook);
  if (robot.secret) {
    url.searchParams.set('timestamp', String(timestampMs));
    url.searchParams.set('sign', robotSign(robot.secret, timestampMs));
  }
  return url;
}

/** Message body per format: 1 text, 2 markdown, 4 actionCard (markdown without a link to show), 3 as text. */
export function robotBody(m: RenderedMessage, linkUrl?: string): Record<string, unknown> {
  if (m.format === FORMAT_ACTION_CARD && linkUrl) {
    return {
      msgtype: 'actionCard',
      actionCard: {
        title: m.title,
        text: m.body,
        btnOrientation: '0',
        singleTitle: 'View',
        singleURL: linkUrl,
      },
    };
  }
  if (m.format === FORMAT_MARKDOWN || m.format === FORMAT_ACTION_CARD) {
    return { msgtype: 'markdown', markdown: { title: m.title, text: m.body } };
  }
  return { msgtype: 'text', text: { content: plainText(m) } };
}

/** errcode 0 is success (Yach may answer `code` 0/200 instead); errcode != 0 fails even on HTTP 200. */
export function classifyRobotReply(status: number, json: ProviderJson, text: string): SendOutcome {
  if (status !== 200) return httpStatusOutcome(status);
  if (!json || typeof json !== 'object') return failed('bad_reply', sanitizeDetail(text));
  const code = json.errcode ?? json.code;
  const msg = sanitizeDetail(json.errmsg ?? json.msg);
  if (code === 0 || (json.errcode === undefined && code === 200)) return delivered(String(code), msg);
  if (typeof code !== 'number') return failed('bad_reply', sanitizeDetail(text));
  if (RATE_LIMIT_CODES.has(code)) return { outcome: 'rate_limited', code: String(code), detail: msg };
  if (BUSY_CODES.has(code)) return failed(String(code), msg);
  return rejected(String(code), msg);
}

export async function sendToRobot(
  base: string,
  robot: Robot,
  m: RenderedMessage,
  opts: {
    timeoutMs: number;
    linkUrl?: string;
    nowMs: number;
    /** Guard robot URLs (default: the deployment's BLOCK_PRIVATE_WEBHOOKS). */
    blockPrivate?: boolean;
  },
): Promise<SendOutcome> {
  let url: URL;
  try {
    url = robotUrl(base, robot, opts.nowMs);
  } catch {
    return rejected('invalid_url', 'robot webhook is not a valid URL');
  }
  const named = isRobotUrl(robot.webhook);
  const guarded = named && (opts.blockPrivate ?? config().blockPrivateWebhooks);
  return guard(async () => {
    const reply = await postJson(url, robotBody(m, opts.linkUrl), opts.timeoutMs, { guard: guarded });
    return classifyRobotReply(reply.status, reply.json, reply.text);
  });
}
