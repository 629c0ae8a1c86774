import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addPeople,
  type ClaimWorld,
  claimTask,
  getClaim,
  JSON_ACCEPT,
  mailedLink,
  pageNonceOf,
  people,
  postClaim,
  readLink,
  reportAlarm,
} from '../support/claims.ts';
import { api } from '../support/client.ts';
import { TestReceiver } from '../support/receiver.ts';
import { showWorkflow } from '../support/workflows.ts';
import { eachOnce } from '../support/chaos.ts';

/**
 * Claim links under pressure (API guide §11.7): one link posted 50 times at once while someone else
 * claims through `PUT /workflow/claim` (exactly one claim), and the rate limits of a source address and
 * of a link (429 with Retry-After). Requests come from 127.0.33.x.
 */
const [ANN, BEN] = people(8_300, ['Ann', 'Ben']);
const hook = new TestReceiver();
let world: ClaimWorld;

beforeAll(async () => {
  await hook.start();
  await addPeople([ANN, BEN]);
  world = await claimTask(hook, [ANN, BEN]);
}, 60_000);

afterAll(async () => {
  await hook.stop();
});

/** A workflow's claim events (each once under the chaos queue, by webhook-id). */
const claimEvents = (wf: number) =>
  eachOnce(
    hook.events('WORKFLOW', 'claim').filter((r) => r.json.data.workflow.id === wf),
    (r) => r.headers['webhook-id'],
  );

describe('concurrent claims', () => {
  it('50 parallel posts of one link and a PUT /workflow/claim by another person: exactly one claim', async () => {
    // Arrange
    const marker = randomUUID();
    await reportAlarm(world.task, marker);
    const token = await mailedLink(ANN.email, marker);
    const wf = (await readLink(token))!.workflowId;
    const n = await pageNonceOf(token, '127.0.33.1');
    // Act
    const [posts, put] = await Promise.all([
      Promise.all(
        Array.from({ length: 50 }, () =>
          postClaim({ t: token, n }, { from: '127.0.33.1', headers: JSON_ACCEPT }),
        ),
      ),
      api.put('/workflow/claim', { ids: [wf], created_by: BEN.uid }),
    ]);
    // Assert: one claim record, one claim event, by the winner.
    const shown = await showWorkflow(wf);
    const records = shown.pipelines.filter((p: { status: number }) => p.status === 1);
    expect(records).toHaveLength(1);
    const winner = records[0].created_by;
    expect([ANN.uid, BEN.uid]).toContain(winner);
    await hook.waitFor(() => claimEvents(wf).length > 0);
    await new Promise((r) => setTimeout(r, 500));
    expect(claimEvents(wf).map((e) => e.json.data.pipeline.user.uid)).toEqual([winner]);
    // ... and every answer agrees with it.
    expect(put.code).toBe(winner === BEN.uid ? 0 : 409);
    const statuses = new Set(posts.map((p) => p.status));
    expect([...statuses].every((s) => [200, 409, 429].includes(s))).toBe(true);
    const won = posts.filter((p) => p.status === 200);
    if (winner === ANN.uid) expect(won.length).toBeGreaterThan(0);
    else expect(won).toEqual([]);
    for (const p of posts.filter((x) => x.status === 409 && x.json.data.claim)) {
      expect(p.json.data.claim.uid).toBe(winner);
    }
    // The link's own limit (10 claims a minute) turned the rest away, with when to come back.
    const limited = posts.filter((p) => p.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(40);
    expect(limited[0].json.msg).toMatch(/^too many claim requests with this link: try again in \d+ seconds$/);
    expect(Number(limited[0].headers['retry-after'])).toBeGreaterThan(0);
  });
});

describe('rate limits', () => {
  it('turn away an address that used its minute, for the page and the claim alike, with Retry-After', async () => {
    // Arrange: an address of its own; 120 requests a minute are allowed.
    const from = '127.0.33.50';
    const junk = 'A'.repeat(47);
    // Act
    const answers = [];
    for (let i = 0; i < 120; i += 20) {
      answers.push(
        ...(await Promise.all(
          Array.from({ length: 20 }, () => getClaim(junk, { from, headers: JSON_ACCEPT })),
        )),
      );
    }
    const page = await getClaim(junk, { from });
    const post = await postClaim({ t: junk, n: 'x' }, { from, headers: JSON_ACCEPT });
    const elsewhere = await getClaim(junk, { from: '127.0.33.51', headers: JSON_ACCEPT });
    // Assert
    expect(new Set(answers.map((a) => a.status))).toEqual(new Set([401]));
    expect(page.status).toBe(429);
    expect(page.text).toMatch(/too many claim requests from this address: try again in \d+ seconds/);
    expect(Number(page.headers['retry-after'])).toBeGreaterThan(0);
    expect([post.status, post.json.code]).toEqual([429, 429]);
    expect(elsewhere.status).toBe(401);
  });
});
