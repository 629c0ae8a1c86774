import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { launchChromium, pageOf } from '../support/chromium.ts';
import {
  addPeople,
  type ClaimWorld,
  claimTask,
  getClaim,
  linksIn,
  mailedLink,
  people,
  readLink,
  reportAlarm,
  robotMessages,
} from '../support/claims.ts';
import { baseUrl } from '../support/client.ts';
import { TestReceiver } from '../support/receiver.ts';
import { showWorkflow } from '../support/workflows.ts';
import { eachOnce } from '../support/chaos.ts';

/**
 * Claim links against what opens every link (API guide §11.7): mail and chat link scanners and
 * previews fetch a link over and over, and a browser with scripts on loads the page and waits; none of
 * it may claim. Only pressing the button does (scripts off too; a group link's after the console's
 * sign-in, which comes back to the link). Requests come from 127.0.32.x.
 */
const [ANN, BEN] = people(8_200, ['Ann', 'Ben']);
const hook = new TestReceiver();
let world: ClaimWorld;
let chromium: Browser;

/** What opens links without a person: the preview and safety scanners of mail and chat, and curl. */
const SCANNERS = [
  'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) DingTalk/7.6.0 Chrome/108.0 Safari/537.36 DingTalkBot-LinkService/1.0',
  'Mozilla/5.0 (compatible; FeishuBot/1.0; +https://www.feishu.cn) LarkUrl2Card',
  'Mozilla/5.0 (Linux; Android 13) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/116.0 Mobile Safari/537.36 MicroMessenger/8.0.40 WeChat',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36 Edg/120.0 (Outlook Safe Links; ms-office; MSOffice 16)',
  'curl/8.5.0',
];

beforeAll(async () => {
  await hook.start();
  await addPeople([ANN, BEN]);
  [world, chromium] = await Promise.all([claimTask(hook, [ANN, BEN]), launchChromium()]);
}, 60_000);

afterAll(async () => {
  await chromium?.close();
  await hook.stop();
});

/** A workflow's claim events (each once under the chaos queue, by webhook-id). */
const claimEvents = (wf: number) =>
  eachOnce(
    hook.events('WORKFLOW', 'claim').filter((r) => r.json.data.workflow.id === wf),
    (r) => r.headers['webhook-id'],
  );
const claimRecords = async (wf: number) =>
  (await showWorkflow(wf)).pipelines.filter((p: { status: number }) => p.status === 1);
const linkUsed = async (nonce: string) =>
  (
    await db().send(
      new GetCommand({ TableName: tableName(), Key: keys.claimLinkUse(nonce), ConsistentRead: true }),
    )
  ).Item;

describe('links opened by scanners and previews', () => {
  it('1,000 GET and 1,000 HEAD requests with their User-Agents claim nothing', async () => {
    // Arrange: Ann's own link and the group's
    const marker = randomUUID();
    await reportAlarm(world.task, marker);
    const personal = await mailedLink(ANN.email, marker);
    const [robot] = await robotMessages(world.robot, marker, /workflow #\d+ created/);
    const group = linksIn(robot.json.markdown.text)[0];
    const link = (await readLink(personal))!;
    const requests = Array.from({ length: 2_000 }, (_, i) => ({
      token: i % 2 ? personal : group,
      head: i >= 1_000,
      ua: SCANNERS[i % SCANNERS.length],
      // Scanners fetch from many addresses: 25 of them, each well within its minute.
      from: `127.0.32.${1 + (i % 25)}`,
    }));
    // Act
    const answers: { status: number; head: boolean; length: number; form: boolean }[] = [];
    for (let i = 0; i < requests.length; i += 25) {
      const chunk = await Promise.all(
        requests.slice(i, i + 25).map(async (r) => {
          const a = await getClaim(r.token, { head: r.head, from: r.from, headers: { 'user-agent': r.ua } });
          return {
            status: a.status,
            head: r.head,
            length: a.text.length,
            form: /<form|Sign in to claim/.test(a.text),
          };
        }),
      );
      answers.push(...chunk);
    }
    // Assert: each got the page (HEAD without its body), and nothing happened.
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
    expect(answers.filter((a) => !a.head && !a.form)).toEqual([]);
    expect(answers.filter((a) => a.head && a.length > 0)).toEqual([]);
    const shown = await showWorkflow(link.workflowId);
    expect(shown.status).toBe(0);
    expect(shown.pipelines.map((p: { status: number }) => p.status)).toEqual([0]);
    expect(await linkUsed(link.nonce)).toBeUndefined();
    expect(await linkUsed((await readLink(group))!.nonce)).toBeUndefined();
    // No claim event was raised: an operation's event is published right after its commit.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(claimEvents(link.workflowId)).toEqual([]);
  }, 300_000);
});

describe('a browser', () => {
  it('opens the page with scripts on and waits: nothing is claimed until the button is pressed', async () => {
    // Arrange
    const marker = randomUUID();
    await reportAlarm(world.task, marker);
    const token = await mailedLink(BEN.email, marker);
    const wf = (await readLink(token))!.workflowId;
    const ctx = await chromium.newContext({ javaScriptEnabled: true });
    const errors: string[] = [];
    const page = await pageOf(ctx, errors);
    const requests: { method: string; url: string; origin?: string }[] = [];
    page.on('request', (r) =>
      requests.push({ method: r.method(), url: r.url(), origin: r.headers().origin }),
    );
    // Act: open it, and leave it open for 30 s.
    const url = `${baseUrl()}/claim?t=${token}`;
    const opened = await page.goto(url);
    await page.waitForTimeout(30_000);
    // Assert: one request, the page's own; nothing claimed.
    expect(opened?.status()).toBe(200);
    expect(requests).toEqual([{ method: 'GET', url, origin: undefined }]);
    expect(await claimRecords(wf)).toEqual([]);
    expect(claimEvents(wf)).toEqual([]);
    // Act: press the button.
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.getByRole('button', { name: `Claim as ${BEN.username}` }).click(),
    ]);
    // Assert: claimed by Ben, once, the record and the event naming the channel; no other request.
    expect(answer.status()).toBe(200);
    await page.getByText(new RegExp(`you claimed workflow \\[${wf}\\] at `)).waitFor();
    expect(await claimRecords(wf)).toEqual([
      expect.objectContaining({ created_by: BEN.uid, props: { link: { channel: 'email' } } }),
    ]);
    await hook.waitFor(() => claimEvents(wf).length > 0);
    expect(claimEvents(wf).map((e) => [e.json.data.pipeline.user.uid, e.json.data.pipeline.link])).toEqual([
      [BEN.uid, { channel: 'email' }],
    ]);
    expect(requests.map((r) => r.method)).toEqual(['GET', 'POST']);
    // A page with Referrer-Policy no-referrer posts `Origin: null` (the Fetch standard), which passes.
    expect(requests[1].origin).toBe('null');
    expect(errors).toEqual([]);
    await ctx.close();
  }, 120_000);

  it('takes a group link’s claimant through the console’s sign-in and back to the link', async () => {
    // Arrange
    const marker = randomUUID();
    await reportAlarm(world.task, marker);
    const [robot] = await robotMessages(world.robot, marker, /workflow #\d+ created/);
    const token = linksIn(robot.json.markdown.text)[0];
    const wf = (await readLink(token))!.workflowId;
    const ctx = await chromium.newContext();
    const page = await pageOf(ctx, []);
    // Act: nobody signed in; sign in where the page sends us.
    await page.goto(`${baseUrl()}/claim?t=${token}`);
    await page.getByRole('link', { name: 'Sign in to claim' }).click();
    await page.getByLabel('Account').fill(BEN.user);
    await page.getByLabel('Password').fill(BEN.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    // Assert: back on the link's page, which now claims as Ben.
    await page.getByRole('button', { name: `Claim as ${BEN.username}` }).click();
    await page.getByText(new RegExp(`you claimed workflow \\[${wf}\\] at `)).waitFor();
    expect(new URL(page.url()).pathname).toBe('/claim');
    expect(await claimRecords(wf)).toEqual([
      expect.objectContaining({ created_by: BEN.uid, props: { link: { channel: 'dinggroup' } } }),
    ]);
    await ctx.close();
  }, 60_000);

  it('works with scripts off', async () => {
    // Arrange
    const marker = randomUUID();
    await reportAlarm(world.task, marker);
    const token = await mailedLink(ANN.email, marker);
    const wf = (await readLink(token))!.workflowId;
    const ctx = await chromium.newContext({ javaScriptEnabled: false });
    const page = await pageOf(ctx, []);
    // Act
    await page.goto(`${baseUrl()}/claim?t=${token}`);
    await page.getByRole('button', { name: `Claim as ${ANN.username}` }).click();
    // Assert
    await page.getByText(new RegExp(`you claimed workflow \\[${wf}\\] at `)).waitFor();
    expect(await claimRecords(wf)).toEqual([expect.objectContaining({ created_by: ANN.uid })]);
    await ctx.close();
  }, 60_000);
});
