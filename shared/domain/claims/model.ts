import { formatDateTime } from '../../clock.ts';
import type { ClaimLink } from '../auth/claim-token.ts';
import { truncate } from '../notifications/render.ts';
import { LEVEL_NAMES } from '../../contracts/levels.ts';
import type { NotifyChannel } from '../tasks/templates.ts';
import {
  type PipelineRecord,
  STATUS_NAMES,
  WF_CLOSED,
  WF_DONE,
  WF_PENDING,
  WF_PROCESSING,
  staleRound,
  type Workflow,
} from '../workflows/model.ts';

/**
 * What a claim link's page says (API guide §11.7): pure decisions over the workflow as read, the link
 * and who would claim. No I/O here.
 */

/** Who claims with a link: its recipient, or for a group link the signed-in person (null: nobody yet). */
export interface Claimant {
  uid: number;
  username: string;
}

/** The state of a link's workflow as far as the link is concerned. */
export type LinkState =
  | { kind: 'open' }
  | { kind: 'claimed'; by: number; at: number; channel?: NotifyChannel; you: boolean }
  | { kind: 'refused'; reason: string };

/** The latest claim of a workflow (its status-1 pipeline record). */
export function lastClaim(pipelines: PipelineRecord[]): PipelineRecord | undefined {
  let last: PipelineRecord | undefined;
  for (const p of pipelines) {
    if (p.status !== WF_PROCESSING) continue;
    if (!last || p.created_at > last.created_at || (p.created_at === last.created_at && p.sk > last.sk))
      last = p;
  }
  return last;
}

/**
 * The state of `wf` for `link`, claimed by `actor` (if known): a reactivation since the link was made
 * refuses it; a pending workflow is open; a processing one was claimed (by the actor, or by someone
 * else); a finished or closed one is refused.
 */
export function linkState(
  link: Pick<ClaimLink, 'round'>,
  wf: Workflow,
  pipelines: PipelineRecord[],
  actor: number | undefined,
): LinkState {
  const stale = staleRound(wf, link.round);
  if (stale) return { kind: 'refused', reason: `${stale}: it can no longer be claimed with this link` };
  if (wf.status === WF_PENDING) return { kind: 'open' };
  if (wf.status === WF_PROCESSING) {
    const claim = lastClaim(pipelines);
    const by = wf.claimer ?? claim?.created_by ?? 0;
    return {
      kind: 'claimed',
      by,
      at: claim?.created_at ?? wf.updated_at,
      ...(claim?.props.link ? { channel: claim.props.link.channel } : {}),
      you: actor !== undefined && actor === by,
    };
  }
  const what = wf.status === WF_DONE ? 'done' : wf.status === WF_CLOSED ? 'closed' : STATUS_NAMES[wf.status];
  return { kind: 'refused', reason: `workflow [${wf.id}] is ${what}: there is nothing to claim` };
}

/** The workflow as the page shows it. */
export interface WorkflowSummary {
  id: number;
  status: number;
  status_name: string;
  task: { id: number; name: string };
  level: number;
  level_name: string;
  /** The alarm's content, compact JSON, cut to SUMMARY_CHARS. */
  summary: string;
  created_at: number;
  created_at_text: string;
}

export const SUMMARY_CHARS = 300;

export function workflowSummary(wf: Workflow, timeZone: string): WorkflowSummary {
  const level = wf.history.level;
  return {
    id: wf.id,
    status: wf.status,
    status_name: STATUS_NAMES[wf.status],
    task: { id: wf.task_id, name: wf.task_name },
    level,
    level_name: LEVEL_NAMES[level] ?? String(level),
    summary: truncate(JSON.stringify(wf.history.ctn), SUMMARY_CHARS),
    created_at: wf.created_at,
    created_at_text: timeText(wf.created_at, timeZone),
  };
}

/** A time as the page says it: `YYYY-MM-DD HH:MM:SS (<zone>)`. */
export const timeText = (seconds: number, timeZone: string) =>
  `${formatDateTime(seconds, timeZone)} (${timeZone})`;

/** What a claim link answers: the page's content, or the `data` of a JSON answer (API guide §11.7). */
export interface ClaimView {
  /** HTTP status and envelope code: 200/0, or 409 (claimed by someone else, refused) or 403 (a stale form). */
  status: number;
  code: number;
  /** The headline: what happened, or why not. */
  msg: string;
  channel: NotifyChannel;
  workflow: WorkflowSummary;
  /** The claim the workflow holds, when it is claimed. */
  claim?: {
    uid: number;
    username: string;
    at: number;
    at_text: string;
    /** Claimed by who would claim with this link. */
    you: boolean;
    /** Claimed with a claim link, and the channel of its message. */
    link?: { channel: NotifyChannel };
  };
  /**
   * The button, when the workflow is open: claim as `claimant` (null: a group link, and nobody is
   * signed in), posting the token and `page_nonce`.
   */
  offer?: { claimant: Claimant | null; page_nonce: string };
}

/** The answer of a state: its status, code and headline. */
export function stateAnswer(
  state: LinkState,
  wf: Workflow,
  names: Map<number, string>,
  timeZone: string,
): { status: number; code: number; msg: string } {
  switch (state.kind) {
    case 'open':
      return { status: 200, code: 0, msg: `workflow [${wf.id}] is pending: claim it` };
    case 'claimed': {
      const at = timeText(state.at, timeZone);
      if (state.you) return { status: 200, code: 0, msg: `you claimed workflow [${wf.id}] at ${at}` };
      return {
        status: 409,
        code: 409,
        msg: `workflow [${wf.id}] was claimed by ${nameOf(state.by, names)} at ${at}`,
      };
    }
    case 'refused':
      return { status: 409, code: 409, msg: state.reason };
  }
}

/** A person's name for the page: their username, `the application` for uid 0, else `user [uid]`. */
export function nameOf(uid: number, names: Map<number, string>): string {
  if (uid === 0) return 'the application';
  return names.get(uid) || `user [${uid}]`;
}
