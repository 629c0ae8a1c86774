import { randomBytes } from 'node:crypto';
import { nowSeconds } from '../../clock.ts';
import type { ClaimLinkConfig } from '../../config/env.ts';
import type { ClaimTarget, NotificationJob, NotifyScene } from '../../contracts/messages.ts';
import { linkKey, mintClaimToken } from '../auth/claim-token.ts';
import { loadSealKey } from '../auth/seal.ts';
import type { Task } from '../tasks/model.ts';
import {
  FORMAT_HTML,
  type NotifyChannel,
  type ResolvedTemplate,
  type TemplateOptions,
} from '../tasks/templates.ts';
import { escapeHtml, type RenderedMessage, type RenderValues, renderMessage } from './render.ts';

/**
 * Claim links in messages (API guide §11.7). A job about a pending workflow (`job.claim`) renders its
 * message once with a mark where `{workflow.claim_url}` goes; each recipient's message gets its own
 * link (a token for that uid, 0 for a group robot) minted right before the provider call, so a token
 * exists only in the message sent: never in a queue message, the job record (which keeps the link
 * shown as `<base>/claim?t=…`), a dead letter or a log line.
 *
 * Calls get no link: a spoken URL is of no use.
 */

/** Where a message's link goes, and what its tokens say. */
export interface ClaimLinkMark {
  /** The text standing for the link in the rendered message (random per job run). */
  mark: string;
  /** The public base URL: the link is `<base>/claim?t=<token>`. */
  base: string;
  target: ClaimTarget;
  channel: NotifyChannel;
  keyId: number;
  ttlSeconds: number;
}

/** A rendered message, with its claim link's mark when it carries one. */
export type LinkedMessage = RenderedMessage & { claimLink?: ClaimLinkMark };

const isCount = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;

/** Whether a job's `claim` is well formed. */
export function isClaimTarget(v: unknown): v is ClaimTarget {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const c = v as Record<string, unknown>;
  return isCount(c.workflow_id) && (c.workflow_id as number) > 0 && isCount(c.round);
}

/** The claim link mark of a job, when its messages carry links (a pending workflow, a base URL, not a call). */
export function claimLinkOf(
  job: Pick<NotificationJob, 'claim' | 'channel'>,
  cfg: { publicBaseUrl?: string; claimLink?: ClaimLinkConfig },
): ClaimLinkMark | undefined {
  if (!job.claim || !cfg.publicBaseUrl || !cfg.claimLink || job.channel === 'phone') return undefined;
  return {
    mark: `tocsin-claim-link-${randomBytes(8).toString('hex')}`,
    base: cfg.publicBaseUrl,
    target: job.claim,
    channel: job.channel,
    keyId: cfg.claimLink.keyIds[0],
    ttlSeconds: cfg.claimLink.ttlSeconds,
  };
}

/** The render values with `{workflow.claim_url}` (the mark) and `{workflow.id}`. */
function withClaimUrl(values: RenderValues, link: ClaimLinkMark | undefined): RenderValues {
  if (!link) return values;
  return {
    ...values,
    workflow: { id: link.target.workflow_id, ...values.workflow, claim_url: link.mark },
  };
}

/** A link as the job record and the template preview show it: without a token. */
export const shownClaimUrl = (publicBaseUrl: string) => `${publicBaseUrl}/claim?t=…`;

/**
 * Whether the messages of `scene` on `channel` carry a claim link, as far as a task's configuration
 * tells (the template preview): the scenes about a pending workflow, and a compressed alarm's notice
 * when the task's alarms open workflows (an upgrade's only when its alarm opened one, which the
 * configuration cannot tell). Never a call.
 */
export function scenesClaimLink(
  task: Pick<Task, 'workflow'>,
  scene: NotifyScene,
  channel: NotifyChannel,
): boolean {
  if (channel === 'phone') return false;
  if (scene === 'generated' || scene === 'reactive' || scene === 'remind_pending') return true;
  return scene === 'compressed' && task.workflow?.enable === true;
}

/** The rendered message with its link's mark, when the mark made it in (a custom template may have no link). */
function linkedMessage(m: RenderedMessage, link: ClaimLinkMark | undefined): LinkedMessage {
  return link && (m.title.includes(link.mark) || m.body.includes(link.mark)) ? { ...m, claimLink: link } : m;
}

/**
 * A job's message, rendered once (the consumer's render hook): with the template `resolve` gives for
 * `{claimLink}` and `{workflow.claim_url}` standing for the link, when the job's messages carry one.
 */
export function render(
  job: Pick<NotificationJob, 'claim' | 'channel'>,
  cfg: { publicBaseUrl?: string; claimLink?: ClaimLinkConfig },
  values: RenderValues,
  resolve: (opts: TemplateOptions) => ResolvedTemplate,
): LinkedMessage {
  const link = claimLinkOf(job, cfg);
  return linkedMessage(
    renderMessage(resolve({ claimLink: link !== undefined }), withClaimUrl(values, link)),
    link,
  );
}

function replaceMark(m: LinkedMessage, link: ClaimLinkMark, url: string): LinkedMessage {
  const inBody = m.format === FORMAT_HTML ? escapeHtml(url) : url;
  return {
    format: m.format,
    title: m.title.replaceAll(link.mark, url),
    body: m.body.replaceAll(link.mark, inBody),
  };
}

/** The message as a job record keeps it: the link shown without a token. */
export function withShownClaimLink(m: LinkedMessage): LinkedMessage {
  return m.claimLink ? replaceMark(m, m.claimLink, shownClaimUrl(m.claimLink.base)) : m;
}

/** The message for one recipient (`uid`; 0 for a group robot): its own link, minted now. */
export async function withClaimLink(m: LinkedMessage, uid: number): Promise<LinkedMessage> {
  const link = m.claimLink;
  if (!link) return m;
  const key = linkKey(await loadSealKey(), link.keyId);
  const token = mintClaimToken(
    {
      workflowId: link.target.workflow_id,
      round: link.target.round,
      uid,
      channel: link.channel,
      expiresAt: nowSeconds() + link.ttlSeconds,
    },
    key,
  );
  return replaceMark(m, link, `${link.base}/claim?t=${token}`);
}
