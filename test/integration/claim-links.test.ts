import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linkKey, mintClaimToken } from '../../shared/domain/auth/claim-token.ts';
import {
  addPeople,
  type ClaimWorld,
  claimAsJson,
  claimTask,
  people,
  getClaim,
  JSON_ACCEPT,
  linksIn,
  mailedLink,
  mailsTo,
  postClaim,
  readLink,
  reportAlarm,
  robotMessages,
} from '../support/claims.ts';
import { advanceClock, baseUrl } from '../support/client.ts';
import { Browser } from '../support/people.ts';
import { TestReceiver } from '../support/receiver.ts';
import { operate, showWorkflow } from '../support/workflows.ts';
import { eachOnce } from '../support/chaos.ts';

/**
 * Claim links end to end (API guide §11.7): an alarm's notices by e-mail (the local SMTP server) and by
 * group robot (its fake) carry links, each e-mail its recipient's own, the robot's one for whoever
 * signs in; the page, the claim as the recipient and as a signed-in person, the refusals of a link a
 * close or a reactivation overtook, and of links altered in any way. Requests come from 127.0.31.x.
 */
const [ANN, BEN, CAT] = people(8_100, ['Ann', 'Ben', 'Cat']);
const hook = new TestReceiver();
let world: ClaimWorld;

const FROM = '127.0.31.1';
const origin = () => new URL(baseUrl()).origin;
const formNonce = (html: string) => /name="n" value="([^"]+)"/.exec(html)?.[1] ?? '';

beforeAll(async () => {
  await hook.start();
  await addPeople([ANN, BEN, CAT]);
  world = await claimTask(hook, [ANN, BEN], { groupMembers: [ANN.uid] });
}, 60_000);

afterAll(async () => {
  await hook.stop();
});

/** The claim events of a workflow the task's webhook got. */
/** A workflow's claim events (each once under the chaos queue, by webhook-id). */
const claimEvents = (wf: number) =>
  eachOnce(
    hook.events('WORKFLOW', 'claim').filter((r) => r.json.data.workflow.id === wf),
    (r) => r.headers['webhook-id'],
  );

describe('an alarm to two people by e-mail and a group robot', () => {
  it('gives each e-mail its recipient’s own link, and the robot message a link for the group', async () => {
    // Arrange
    const marker = randomUUID();
    // Act
    await reportAlarm(world.task, marker);
    // Assert: the workflow's `generated` mail to each person holds their own link, for the email channel.
    const [ann, ben] = await Promise.all([mailedLink(ANN.email, marker), mailedLink(BEN.email, marker)]);
    const [annLink, benLink] = await Promise.all([readLink(ann), readLink(ben)]);
    expect(annLink).toMatchObject({ uid: ANN.uid, round: 0, channel: 'email' });
    expect(benLink).toMatchObject({
      uid: BEN.uid,
      round: 0,
      channel: 'email',
      workflowId: annLink?.workflowId,
    });
    // ... the alarm's own mail too (its alarm opened the workflow).
    const [alarmMail] = await mailsTo(ANN.email, marker, /: alarm \(error\)$/);
    expect(await readLink(linksIn(alarmMail.html)[0])).toMatchObject({
      uid: ANN.uid,
      workflowId: annLink?.workflowId,
    });
    // ... and the robot's messages a group link (uid 0), in markdown.
    const [robot] = await robotMessages(world.robot, marker, /workflow #\d+ created/);
    const [groupToken] = linksIn(robot.json.markdown.text);
    expect(robot.json.markdown.text).toContain(`[Claim this workflow](${baseUrl()}/claim?t=${groupToken})`);
    expect(await readLink(groupToken)).toMatchObject({
      uid: 0,
      channel: 'dinggroup',
      workflowId: annLink?.workflowId,
    });
  });

  it('opens a page that offers to claim as the recipient: small, strict, and changing nothing', async () => {
    // Arrange
    const marker = randomUUID();
    await reportAlarm(world.task, marker);
    const token = await mailedLink(ANN.email, marker);
    const wf = (await readLink(token))!.workflowId;
    // Act
    const page = await getClaim(token, { from: FROM, headers: { accept: 'text/html' } });
    // Assert
    expect(page.status).toBe(200);
    expect(page.text).toContain(`Claim as ${ANN.username}</button>`);
    expect(page.text).toContain(marker);
    expect(page.text).not.toMatch(/<script/i);
    expect(Buffer.byteLength(page.text)).toBeLessThan(20 * 1024);
    expect(page.headers).toMatchObject({
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      'x-robots-tag': 'noindex, nofollow',
    });
    expect(page.headers['content-security-policy']).toMatch(
      /^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'$/,
    );
    expect((await showWorkflow(wf)).status).toBe(0);
  });
});

describe('claiming with a personal link', () => {
  it('claims as its recipient; the record and the claim event name the channel; the others learn who', async () => {
    // Arrange
    const marker = randomUUID();
    await reportAlarm(world.task, marker);
    const [ann, ben] = await Promise.all([mailedLink(ANN.email, marker), mailedLink(BEN.email, marker)]);
    const wf = (await readLink(ann))!.workflowId;
    const page = await getClaim(ann, { from: FROM });
    // Act: the page's form, as a browser posts it.
    const claimed = await postClaim(
      { t: ann, n: formNonce(page.text) },
      { from: FROM, headers: { origin: origin() } },
    );
    // Assert
    expect(claimed.status).toBe(200);
    expect(claimed.text).toMatch(new RegExp(`you claimed workflow \\[${wf}\\] at \\d{4}-\\d\\d-\\d\\d`));
    const shown = await showWorkflow(wf);
    expect(shown.status).toBe(1);
    expect(shown.pipelines.filter((p: { status: number }) => p.status === 1)).toEqual([
      expect.objectContaining({ created_by: ANN.uid, props: { link: { channel: 'email' } } }),
    ]);
    const [event] = await hook.waitFor(() => claimEvents(wf).length === 1).then(() => claimEvents(wf));
    expect(event.json.data.pipeline).toEqual({
      remark: '',
      user: { uid: ANN.uid, username: ANN.username, user: ANN.user },
      link: { channel: 'email' },
    });
    // Again (the form of the page it had): the same answer, nothing more.
    const again = await postClaim(
      { t: ann, n: formNonce(page.text) },
      { from: FROM, headers: { ...JSON_ACCEPT, origin: origin() } },
    );
    expect([again.status, again.json.data.claim.you]).toEqual([200, true]);
    // Ben's link: claimed by someone else, 409 for a JSON caller, and his page says who.
    const ben409 = await postClaim({ t: ben, n: 'x'.repeat(22) }, { from: FROM, headers: JSON_ACCEPT });
    expect(ben409.status).toBe(409);
    expect(ben409.json.msg).toMatch(new RegExp(`^workflow \\[${wf}\\] was claimed by ${ANN.username} at `));
    expect(ben409.json.data.claim).toMatchObject({ uid: ANN.uid, you: false, link: { channel: 'email' } });
    const benPage = await getClaim(ben, { from: FROM });
    expect([benPage.status, benPage.text.includes('<form')]).toEqual([409, false]);
    expect(claimEvents(wf)).toHaveLength(1);
  });

  it('refuses a link a close overtook, and one a reactivation overtook; the reactivation’s own link claims', async () => {
    // Arrange
    const marker = randomUUID();
    await reportAlarm(world.task, marker);
    const before = await mailedLink(BEN.email, marker);
    const wf = (await readLink(before))!.workflowId;
    const nonce = (await claimPageNonce(before)) ?? '';
    // Act: closed, then the form of a page opened before
    expect((await operate('close', { ids: [wf], remark: 'noise' })).code).toBe(0);
    const whenClosed = await postClaim({ t: before, n: nonce }, { from: FROM, headers: JSON_ACCEPT });
    // Assert
    expect([whenClosed.status, whenClosed.json.msg]).toEqual([
      409,
      `workflow [${wf}] is closed: there is nothing to claim`,
    ]);
    expect(whenClosed.json.data.offer).toBeUndefined();
    // Act: reactivated, the old link again (with a page nonce taken while it was pending once more)
    expect((await operate('reactive', { ids: [wf], remark: 'again' })).code).toBe(0);
    const stale = await getClaim(before, { from: FROM, headers: JSON_ACCEPT });
    // Assert
    expect([stale.status, stale.json.msg]).toEqual([
      409,
      `workflow [${wf}] was reactivated after the link was sent: it can no longer be claimed with this link`,
    ]);
    expect((await showWorkflow(wf)).status).toBe(0);
    // The reactivation's notice carries a link of the new round, which claims.
    const [mail] = await mailsTo(BEN.email, marker, /workflow #\d+ reactivated/);
    const fresh = linksIn(mail.html)[0];
    expect(await readLink(fresh)).toMatchObject({ uid: BEN.uid, workflowId: wf, round: 1 });
    expect((await claimAsJson(fresh, { from: FROM })).status).toBe(200);
    // The old link, posted with the nonce of a page it had: still refused, nothing changes.
    const late = await postClaim({ t: before, n: nonce }, { from: FROM, headers: JSON_ACCEPT });
    expect(late.status).toBe(409);
    await hook.waitFor(() => claimEvents(wf).length === 1);
    expect((await showWorkflow(wf)).pipelines.filter((p: { status: number }) => p.status === 1)).toEqual([
      expect.objectContaining({ created_by: BEN.uid }),
    ]);
  });
});

describe('claiming with a group link', () => {
  it('sends nobody signed in to the sign-in, and claims as the person who signed in', async () => {
    // Arrange
    const marker = randomUUID();
    await reportAlarm(world.task, marker);
    const [robot] = await robotMessages(world.robot, marker, /workflow #\d+ created/);
    const token = linksIn(robot.json.markdown.text)[0];
    const wf = (await readLink(token))!.workflowId;
    const anonymous = await getClaim(token, { from: FROM });
    // Act: nobody signed in
    const toSignIn = await postClaim({ t: token, n: 'x'.repeat(22) }, { from: FROM });
    const viaForm = await postClaim({ t: token, n: (await claimPageNonce(token)) ?? '' }, { from: FROM });
    const asJson = await postClaim(
      { t: token, n: (await claimPageNonce(token)) ?? '' },
      { from: FROM, headers: JSON_ACCEPT },
    );
    // Assert
    expect(anonymous.text).toContain(
      `<a class="button" href="/console#/claim?t=${token}">Sign in to claim</a>`,
    );
    expect(toSignIn.status).toBe(403); // an old form: the page again (still with the sign-in)
    expect([viaForm.status, viaForm.headers.location]).toEqual([303, `/console#/claim?t=${token}`]);
    expect([asJson.status, asJson.json.code]).toEqual([401, 401]);
    // Act: Cat (no permission on the task) signs in, comes back to the page later, claims a minute later.
    const cat = new Browser(FROM);
    expect((await cat.signIn(CAT.user, CAT.password)).json.code).toBe(0);
    await advanceClock(61);
    const page = await cat.send(`/claim?t=${token}`);
    await advanceClock(61);
    const claimed = await cat.send('/claim', {
      body: new URLSearchParams({ t: token, n: formNonce(page.text) }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    // Assert: Cat may not claim it: refused, and the link stays usable.
    expect(page.text).toContain(`Claim as ${CAT.username}</button>`);
    expect(claimed.status).toBe(403);
    expect(claimed.text).toContain(`user [${CAT.uid}] has no permission on task [${world.task.id}]`);
    // Ann (who holds a permission) claims with the same link.
    const ann = new Browser(FROM);
    expect((await ann.signIn(ANN.user, ANN.password)).json.code).toBe(0);
    const annPage = await ann.send(`/claim?t=${token}`);
    const annClaim = await ann.send('/claim', {
      body: new URLSearchParams({ t: token, n: formNonce(annPage.text) }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    });
    expect([annClaim.status, annClaim.json.data.claim]).toEqual([
      200,
      expect.objectContaining({ uid: ANN.uid, you: true, link: { channel: 'dinggroup' } }),
    ]);
    await hook.waitFor(() => claimEvents(wf).length === 1);
    expect(claimEvents(wf)[0].json.data.pipeline.link).toEqual({ channel: 'dinggroup' });
  });
});

/** The page nonce of a link's page (JSON), undefined when it offers no form. */
async function claimPageNonce(token: string): Promise<string | undefined> {
  return (await getClaim(token, { from: FROM, headers: JSON_ACCEPT })).json.data?.offer?.page_nonce;
}

describe('an altered link', () => {
  it('is refused the same way whatever was altered, and whether or not its workflow exists', async () => {
    // Arrange
    const [one, two] = [randomUUID(), randomUUID()];
    await Promise.all([reportAlarm(world.task, one), reportAlarm(world.task, two)]);
    const [ann, ben, annTwo] = await Promise.all([
      mailedLink(ANN.email, one),
      mailedLink(BEN.email, one),
      mailedLink(ANN.email, two),
    ]);
    const wf = (await readLink(ann))!.workflowId;
    const raw = Buffer.from(ann, 'base64url');
    const flipped = Array.from({ length: raw.length * 8 }, (_, bit) => {
      const b = Buffer.from(raw);
      b[bit >> 3] ^= 1 << (bit & 7);
      return b.toString('base64url');
    });
    // Ann's link with Ben's uid, and Ann's with the other alarm's workflow: the fields (workflow,
    // round, uid) of the other real token put in, Ann's MAC kept.
    const spliced = (other: string) => {
      const b = Buffer.from(raw);
      Buffer.from(other, 'base64url').copy(b, 2, 2, raw.length - 16 - 8 - 4 - 1);
      return b.toString('base64url');
    };
    expect(spliced(ben)).not.toBe(ann);
    expect(spliced(annTwo)).not.toBe(ann);
    const forged = mintClaimToken(
      { workflowId: 999_999_999, round: 0, uid: ANN.uid, channel: 'email', expiresAt: 2_000_000_000 },
      linkKey(randomBytes(32), 1),
    );
    const candidates = [...flipped, spliced(ben), spliced(annTwo), forged];
    // Act: from six addresses (each stays under its minute's limit)
    const answers = [];
    for (let i = 0; i < candidates.length; i += 20) {
      answers.push(
        ...(await Promise.all(
          candidates
            .slice(i, i + 20)
            .map((t, j) =>
              postClaim(
                { t, n: 'x'.repeat(22) },
                { from: `127.0.31.${10 + ((i + j) % 6)}`, headers: JSON_ACCEPT },
              ),
            ),
        )),
      );
    }
    // Assert
    expect(new Set(answers.map((a) => `${a.status} ${a.text}`))).toEqual(
      new Set([
        '401 {"code":401,"msg":"this claim link is not valid: claim the workflow in the console","data":{}}',
      ]),
    );
    expect((await showWorkflow(wf)).status).toBe(0);
  });
});
