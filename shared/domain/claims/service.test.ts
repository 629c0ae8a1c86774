import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { linkKey, mintClaimToken, pageNonce } from '../auth/claim-token.ts';
import type { User } from '../directory/model.ts';
import { type AppError, ConflictError, ForbiddenError } from '../errors.ts';
import type { PipelineRecord, Workflow } from '../workflows/model.ts';
import { linkState } from './model.ts';
import { type ClaimDeps, claimByLink, SignInNeeded, showClaimLink } from './service.ts';

/**
 * The claim link use cases with in-memory adapters (the real ones are the integration suite's): what
 * is read before the token is known good (nothing), what is answered, when the link is spent.
 */
const NOW = 1_800_000_000;
const seal = randomBytes(32);
const key = linkKey(seal, 1);
const users = [
  { uid: 11, username: 'Ann' },
  { uid: 12, username: 'Bo' },
] as User[];

function workflow(over: Partial<Workflow> = {}): Workflow {
  return {
    id: 7,
    task_id: 1,
    metric: '',
    history_id: 1,
    status: 0,
    created_at: NOW - 60,
    updated_at: NOW - 60,
    version: 1,
    epoch: 1,
    task_name: 'disk <b>',
    department_id: 1,
    history: {
      id: 1,
      uuid: 'u',
      task_id: 1,
      batch: 0,
      metric: '',
      level: 2,
      ctn: { host: 'web-1' },
      notice_time: NOW,
      created_at: NOW,
    },
    ...over,
  };
}

const claimRecord = (by: number, at: number, link?: 'email'): PipelineRecord => ({
  workflow_id: 7,
  sk: `PIPE#${at}#000002`,
  status: 1,
  remark: '',
  props: link ? { link: { channel: link } } : {},
  created_by: by,
  created_at: at,
  workflow_status: 1,
  workflow_epoch: 2,
});

function world(wf: Workflow = workflow(), pipelines: PipelineRecord[] = []) {
  const state = {
    wf,
    pipelines,
    used: new Set<string>(),
    loads: 0,
    claims: 0,
    released: 0,
    slots: [] as string[],
  };
  let refuse: Error | undefined;
  const deps: ClaimDeps = {
    now: () => NOW,
    settings: () => ({
      keyIds: [1],
      ttlSeconds: 86_400,
      addressPerMinute: 100,
      linkPerMinute: 100,
      timeZone: 'UTC',
    }),
    loadSealKey: async () => seal,
    resolveSession: async (id) =>
      id === 'good' ? ({ session: {}, person: { uid: 12, username: 'Bo' } } as never) : { refused: 'ended' },
    getUsers: async (uids) => users.filter((u) => uids.includes(u.uid)),
    load: async () => {
      state.loads++;
      return { workflow: state.wf, pipelines: state.pipelines };
    },
    claimWithLink: async (input, link) => {
      state.claims++;
      if (refuse) throw refuse;
      state.wf = { ...state.wf, status: 1, claimer: input.created_by };
      state.pipelines = [...state.pipelines, claimRecord(input.created_by, NOW, link.channel as 'email')];
      return { workflows: [{ id: 7, status: 1 }] };
    },
    takeClaimSlot: async (subject) => {
      state.slots.push(subject);
      return { taken: true, tries: 1 };
    },
    markLinkUsed: async (nonce) => {
      if (state.used.has(nonce)) return false;
      state.used.add(nonce);
      return true;
    },
    releaseLink: async (nonce) => {
      state.released++;
      state.used.delete(nonce);
    },
  };
  return { deps, state, refuseWith: (e: Error) => (refuse = e) };
}

const token = (uid = 11, over: { round?: number; expiresAt?: number } = {}) =>
  mintClaimToken({ workflowId: 7, round: 0, uid, channel: 'email', expiresAt: NOW + 3600, ...over }, key);
const form = (t: string) => ({ token: t, pageNonce: pageNonce(t, key, NOW), address: '10.0.0.1' });

describe('the claim link page', () => {
  it('offers to claim a pending workflow as the recipient, changing nothing', async () => {
    const w = world();
    const view = await showClaimLink({ token: token(), address: '10.0.0.1' }, w.deps);
    expect(view).toMatchObject({
      status: 200,
      code: 0,
      channel: 'email',
      offer: { claimant: { uid: 11, username: 'Ann' } },
    });
    expect(view.workflow).toMatchObject({
      id: 7,
      task: { name: 'disk <b>' },
      level_name: 'error',
      summary: '{"host":"web-1"}',
    });
    expect(w.state.claims).toBe(0);
    expect(w.state.slots).toEqual(['ip#10.0.0.1']);
  });

  it('refuses a forged link with the same answer and without reading anything, whatever it names', async () => {
    const w = world();
    const good = token();
    const forged = `${good.slice(0, 10)}${good[10] === 'A' ? 'B' : 'A'}${good.slice(11)}`;
    const other = mintClaimToken(
      { workflowId: 999, round: 0, uid: 11, channel: 'email', expiresAt: NOW + 60 },
      linkKey(randomBytes(32), 1),
    );
    const answers = await Promise.all(
      [forged, other, 'junk', undefined].map((t) =>
        showClaimLink({ token: t, address: 'a' }, w.deps).catch((e: AppError) => [e.status, e.message]),
      ),
    );
    expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
    expect(answers[0]).toEqual([401, expect.stringMatching(/not valid/)]);
    expect(w.state.loads).toBe(0);
  });

  it('says when a link has expired, was overtaken by a reactivation, or its workflow was claimed', async () => {
    await expect(
      showClaimLink({ token: token(11, { expiresAt: NOW }), address: 'a' }, world().deps),
    ).rejects.toMatchObject({ status: 401, message: expect.stringMatching(/expired/) });
    const reactivated = await showClaimLink(
      { token: token(), address: 'a' },
      world(workflow({ round: 1 })).deps,
    );
    expect(reactivated).toMatchObject({ status: 409, msg: expect.stringMatching(/reactivated/) });
    expect(reactivated.offer).toBeUndefined();
    const claimed = world(workflow({ status: 1, claimer: 12 }), [claimRecord(12, NOW - 30)]);
    expect(await showClaimLink({ token: token(), address: 'a' }, claimed.deps)).toMatchObject({
      status: 409,
      msg: expect.stringMatching(
        /^workflow \[7\] was claimed by Bo at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(UTC\)$/,
      ),
      claim: { uid: 12, username: 'Bo', you: false },
    });
  });

  it('offers a group link to the signed-in person, or the sign-in to nobody', async () => {
    const w = world();
    expect(
      (await showClaimLink({ token: token(0), address: 'a', session: 'good' }, w.deps)).offer?.claimant,
    ).toEqual({ uid: 12, username: 'Bo' });
    expect(
      (await showClaimLink({ token: token(0), address: 'a', session: 'gone' }, w.deps)).offer?.claimant,
    ).toBeNull();
    expect((await showClaimLink({ token: token(0), address: 'a' }, w.deps)).offer?.claimant).toBeNull();
  });

  it('answers 429 with Retry-After when the address has used its minute', async () => {
    const w = world();
    w.deps.takeClaimSlot = async () => ({ taken: false, until: NOW + 42 });
    const err = (await showClaimLink({ token: token(), address: 'a' }, w.deps).catch((e) => e)) as AppError;
    expect([err.status, err.headers['retry-after']]).toEqual([429, '42']);
  });
});

describe('the claim', () => {
  it('claims once, with the link recorded, and says so again when repeated', async () => {
    const w = world();
    const t = token();
    const first = await claimByLink(form(t), w.deps);
    expect(first).toMatchObject({
      status: 200,
      code: 0,
      claim: { uid: 11, you: true, link: { channel: 'email' } },
    });
    expect(first.msg).toMatch(/^you claimed workflow \[7\] at /);
    const again = await claimByLink(form(t), w.deps);
    expect(again).toMatchObject({ status: 200, claim: { uid: 11, you: true } });
    expect(w.state.claims).toBe(1);
    expect(w.state.slots).toEqual([
      'ip#10.0.0.1',
      `link#${[...w.state.used][0]}`,
      'ip#10.0.0.1',
      `link#${[...w.state.used][0]}`,
    ]);
  });

  it('needs the nonce of a recent page: an old form gets the page again, and claims nothing', async () => {
    const w = world();
    const t = token();
    const old = await claimByLink({ ...form(t), pageNonce: pageNonce(t, key, NOW - 1300) }, w.deps);
    expect(old).toMatchObject({
      status: 403,
      msg: expect.stringMatching(/expired/),
      offer: { claimant: { uid: 11 } },
    });
    expect(w.state.claims).toBe(0);
  });

  it('answers 409 naming who claimed, when another claim won the race', async () => {
    const w = world();
    w.deps.claimWithLink = async () => {
      w.state.wf = { ...w.state.wf, status: 1, claimer: 12 };
      w.state.pipelines = [claimRecord(12, NOW)];
      throw new ConflictError('workflow [7] is processing, only pending workflows can be claimed');
    };
    expect(await claimByLink(form(token()), w.deps)).toMatchObject({
      status: 409,
      code: 409,
      claim: { uid: 12, username: 'Bo', you: false },
    });
    expect(w.state.released).toBe(0);
  });

  it('gives the link back when the claim was refused before it changed anything', async () => {
    const w = world();
    w.refuseWith(new ForbiddenError('user [11] has no permission on task [1]'));
    const t = token();
    await expect(claimByLink(form(t), w.deps)).rejects.toMatchObject({ status: 403 });
    expect([w.state.released, w.state.used.size]).toEqual([1, 0]);
  });

  it('lets one of concurrent claims with one link go on; the others wait for its answer', async () => {
    const w = world();
    const t = token();
    const [a, b] = await Promise.all([claimByLink(form(t), w.deps), claimByLink(form(t), w.deps)]);
    expect(w.state.claims).toBe(1);
    expect([a, b].filter((v) => v.status === 200 && v.claim?.you)).not.toHaveLength(0);
    expect([a, b].every((v) => v.status === 200 || v.status === 409)).toBe(true);
  });

  it('a group link needs a signed-in person', async () => {
    const w = world();
    await expect(claimByLink(form(token(0)), w.deps)).rejects.toBeInstanceOf(SignInNeeded);
    expect(await claimByLink({ ...form(token(0)), session: 'good' }, w.deps)).toMatchObject({
      status: 200,
      claim: { uid: 12, you: true },
    });
  });
});

describe('linkState', () => {
  it('refuses done and closed workflows, and is open only in the round of the link', () => {
    expect(linkState({ round: 0 }, workflow({ status: 2 }), [], 11)).toMatchObject({
      kind: 'refused',
      reason: expect.stringMatching(/done/),
    });
    expect(linkState({ round: 0 }, workflow({ status: 9 }), [], 11)).toMatchObject({
      kind: 'refused',
      reason: expect.stringMatching(/closed/),
    });
    expect(linkState({ round: 2 }, workflow({ round: 2 }), [], 11)).toEqual({ kind: 'open' });
    expect(linkState({ round: 1 }, workflow({ round: 2 }), [], 11).kind).toBe('refused');
  });
});
