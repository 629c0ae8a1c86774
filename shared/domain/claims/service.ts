import { nowSeconds } from '../../clock.ts';
import { type ClaimLinkConfig, config } from '../../config/env.ts';
import { logger } from '../../log.ts';
import {
  type ClaimLink,
  type LinkKey,
  linkKey,
  pageNonce,
  pageNonceMatches,
  readClaimToken,
} from '../auth/claim-token.ts';
import { loadSealKey } from '../auth/seal.ts';
import { resolveSession } from '../auth/sessions.ts';
import { getUsers } from '../directory/repository.ts';
import { AppError, ConflictError, NotFoundError } from '../errors.ts';
import type { PipelineRecord, Workflow } from '../workflows/model.ts';
import { getWorkflowWithPipelines } from '../workflows/repository.ts';
import { claimWithLink } from '../workflows/service.ts';
import {
  type Claimant,
  type ClaimView,
  type LinkState,
  linkState,
  nameOf,
  stateAnswer,
  timeText,
  workflowSummary,
} from './model.ts';
import { addressSubject, linkSubject, markLinkUsed, releaseLink, takeClaimSlot } from './repository.ts';

/**
 * Claim links (API guide §11.7): `GET /claim` shows what a link would claim and changes nothing;
 * `POST /claim` claims, through the claim of `PUT /workflow/claim` (exactly one winner).
 *
 * Every request first takes a slot of its source address's minute (429 beyond it), then reads the
 * token: its MAC is checked before anything is read, so a forged or altered token costs the same work,
 * and gets the same answer, whether or not its workflow exists. A claim also takes a slot of the
 * link's minute, needs the page nonce of a page served in the last 10 to 20 minutes (a replayed old
 * form fails), marks the link used (one conditional write: of concurrent claims with one link, one
 * goes on), and gives the link back when its claim was refused for a reason that changed nothing
 * (no permission, an unknown person). A group link claims as the person of the console session
 * cookie, which is `SameSite=Strict` (only this service's own pages send it), so its form needs no
 * CSRF token; the HTTP layer refuses an `Origin` of another site.
 */

/** A group link claims as the signed-in person: nobody is (HTML: to the sign-in and back). */
export class SignInNeeded extends AppError {
  constructor() {
    super(401, 401, 'a group link claims as the person signed in to the console: sign in first');
  }
}

export interface LinkRequest {
  /** `t`, as the request gave it. */
  token: unknown;
  /** The request's source address. */
  address: string;
  /** The console session cookie's value, if any (who claims with a group link). */
  session?: string;
}

export interface ClaimRequest extends LinkRequest {
  /** `n`: the page nonce of the form. */
  pageNonce: unknown;
}

export const claimDeps = {
  now: nowSeconds,
  settings: (): ClaimLinkConfig & { timeZone: string } => ({
    ...config().claimLink,
    timeZone: config().timeZone,
  }),
  loadSealKey,
  resolveSession,
  getUsers,
  load: (id: number) => getWorkflowWithPipelines(id, true),
  claimWithLink,
  takeClaimSlot,
  markLinkUsed,
  releaseLink,
};
export type ClaimDeps = typeof claimDeps;

interface Opened {
  token: string;
  link: ClaimLink;
  key: LinkKey;
}

function rateLimited(what: string, until: number, now: number): AppError {
  const seconds = Math.max(1, until - now);
  return new AppError(
    429,
    429,
    `too many claim requests ${what}: try again in ${seconds} seconds`,
    {},
    { 'retry-after': String(seconds) },
  );
}

const INVALID = 'this claim link is not valid: claim the workflow in the console';

/** The address's slot, then the token (MAC first), then its expiry: 429 or 401. */
async function openLink(req: LinkRequest, now: number, deps: ClaimDeps): Promise<Opened> {
  const settings = deps.settings();
  const slot = await deps.takeClaimSlot(addressSubject(req.address), settings.addressPerMinute, now);
  if (!slot.taken) throw rateLimited('from this address', slot.until, now);
  const seal = await deps.loadSealKey();
  const live = new Map(settings.keyIds.map((id) => [id, linkKey(seal, id)]));
  const link = readClaimToken(req.token, (id) => live.get(id));
  if (!link) throw new AppError(401, 401, INVALID);
  if (link.expiresAt <= now)
    throw new AppError(401, 401, 'this claim link has expired: claim the workflow in the console');
  return { token: req.token as string, link, key: live.get(link.keyId) as LinkKey };
}

/** The link's recipient, or for a group link the signed-in person (null: nobody is). */
async function claimantOf(link: ClaimLink, session: string | undefined, deps: ClaimDeps) {
  if (link.uid !== 0) {
    const [user] = await deps.getUsers([link.uid]);
    return { uid: link.uid, username: user?.username ?? '' };
  }
  if (session === undefined) return null;
  const resolved = await deps.resolveSession(session);
  return 'person' in resolved ? { uid: resolved.person.uid, username: resolved.person.username } : null;
}

async function loadWorkflow(link: ClaimLink, deps: ClaimDeps) {
  const found = await deps.load(link.workflowId);
  if (!found) throw new NotFoundError(`workflow [${link.workflowId}] not found`);
  return found;
}

/** The answer: the workflow, its claim, and the button while it is open. */
async function viewOf(
  o: Opened,
  found: { workflow: Workflow; pipelines: PipelineRecord[] },
  claimant: Claimant | null,
  now: number,
  deps: ClaimDeps,
  state: LinkState = linkState(o.link, found.workflow, found.pipelines, claimant?.uid),
): Promise<ClaimView> {
  const { timeZone } = deps.settings();
  const wf = found.workflow;
  const names = new Map<number, string>();
  if (claimant) names.set(claimant.uid, claimant.username);
  if (state.kind === 'claimed' && state.by !== 0 && !names.has(state.by)) {
    for (const u of await deps.getUsers([state.by])) names.set(u.uid, u.username);
  }
  const view: ClaimView = {
    ...stateAnswer(state, wf, names, timeZone),
    channel: o.link.channel,
    workflow: workflowSummary(wf, timeZone),
  };
  if (state.kind === 'claimed') {
    view.claim = {
      uid: state.by,
      username: nameOf(state.by, names),
      at: state.at,
      at_text: timeText(state.at, timeZone),
      you: state.you,
      ...(state.channel ? { link: { channel: state.channel } } : {}),
    };
  }
  if (state.kind === 'open') view.offer = { claimant, page_nonce: pageNonce(o.token, o.key, now) };
  return view;
}

/** `GET /claim` (and HEAD): what the link would claim. Reads only. */
export async function showClaimLink(req: LinkRequest, deps: ClaimDeps = claimDeps): Promise<ClaimView> {
  const now = deps.now();
  const o = await openLink(req, now, deps);
  const [found, claimant] = await Promise.all([
    loadWorkflow(o.link, deps),
    claimantOf(o.link, req.session, deps),
  ]);
  return viewOf(o, found, claimant, now, deps);
}

/** `POST /claim`: claims the link's workflow as its recipient (a group link: as the signed-in person). */
export async function claimByLink(req: ClaimRequest, deps: ClaimDeps = claimDeps): Promise<ClaimView> {
  const now = deps.now();
  const o = await openLink(req, now, deps);
  const { link } = o;
  const claimant = await claimantOf(link, req.session, deps);
  if (!pageNonceMatches(o.token, o.key, req.pageNonce, now)) {
    // An old (or no) form: the page as it is now, to press the button again.
    const view = await viewOf(o, await loadWorkflow(link, deps), claimant, now, deps);
    if (!view.offer) return view;
    return { ...view, status: 403, code: 403, msg: 'the claim page had expired: press the button again' };
  }
  const slot = await deps.takeClaimSlot(linkSubject(link.nonce), deps.settings().linkPerMinute, now);
  if (!slot.taken) throw rateLimited('with this link', slot.until, now);
  if (!claimant) throw new SignInNeeded();

  const before = await loadWorkflow(link, deps);
  const state = linkState(link, before.workflow, before.pipelines, claimant.uid);
  if (state.kind !== 'open') return viewOf(o, before, claimant, now, deps, state);
  const use = { workflow_id: link.workflowId, uid: claimant.uid, channel: link.channel, at: now };
  if (!(await deps.markLinkUsed(link.nonce, { ...use, expires_at: link.expiresAt }))) {
    return answerAfter(o, claimant, now, deps, 'this link is being used right now: try again in a moment');
  }
  try {
    await deps.claimWithLink(
      { id: link.workflowId, created_by: claimant.uid },
      { channel: link.channel, round: link.round },
    );
  } catch (err) {
    // Someone else's operation won (or the workflow moved on): the link has done its work.
    if (err instanceof ConflictError) return answerAfter(o, claimant, now, deps, err.message);
    // Refused before anything changed (no permission, an unknown person) or failed: the link may try again.
    await deps.releaseLink(link.nonce).catch((e) => logger.warn('claim link not released', { error: e }));
    throw err;
  }
  return answerAfter(o, claimant, now, deps, undefined);
}

/**
 * The answer once the claim (ours or another) has happened: the workflow read again. Still open (a
 * concurrent claim with the same link has not finished): 409 with `busy`.
 */
async function answerAfter(
  o: Opened,
  claimant: Claimant,
  now: number,
  deps: ClaimDeps,
  busy: string | undefined,
): Promise<ClaimView> {
  const after = await loadWorkflow(o.link, deps);
  const view = await viewOf(o, after, claimant, now, deps);
  if (view.offer) return { ...view, status: 409, code: 409, msg: busy ?? view.msg };
  return view;
}
