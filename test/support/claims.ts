import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import { config } from '../../shared/config/env.ts';
import { type ClaimLink, linkKey, readClaimToken } from '../../shared/domain/auth/claim-token.ts';
import { loadSealKey } from '../../shared/domain/auth/seal.ts';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { importDirectory } from '../../shared/domain/directory/service.ts';
import { call, serviceNow } from './client.ts';
import { FakeClient, type FakeMail } from './fakes.ts';
import { type Answer, addPeople, type Send, send, type TestPerson } from './people.ts';
import type { TestReceiver } from './receiver.ts';
import { type CreatedTask, createTask, uniqueTaskName } from './tasks.ts';

/**
 * Claim links in tests (API guide §11.7): a task whose notices carry them (two people by e-mail, a
 * group robot, a webhook, an alarm group), the links read out of the messages the provider fakes got,
 * and the link's page and claim over HTTP from any loopback address.
 */
export const fakes = () => new FakeClient(inject('fakes').url);

/** The tokens of every claim link in a text (an e-mail's HTML, a robot's markdown). */
export function linksIn(text: string): string[] {
  return [...text.matchAll(/\/claim\?t=([A-Za-z0-9_-]+)/g)].map((m) => m[1]);
}

/** What a token says, read with the stack's own key (the worker shares the stack's seal key). */
export async function readLink(token: string): Promise<ClaimLink | undefined> {
  const seal = await loadSealKey();
  const keys = new Map(config().claimLink.keyIds.map((id) => [id, linkKey(seal, id)]));
  return readClaimToken(token, (id) => keys.get(id));
}

/** People of one test file: uids from `base`, e-mail addresses unique to the run. */
export function people(base: number, names: string[]): (TestPerson & { password: string })[] {
  const run = randomUUID().slice(0, 8);
  return names.map((name, i) => ({
    uid: base + i,
    user: `${name.toLowerCase()}-${run}`,
    email: `${name.toLowerCase()}-${run}@example.com`,
    username: `${name} Claim`,
    password: `${name} claims ${run}`,
  }));
}

export interface ClaimWorld {
  task: CreatedTask;
  robot: string;
  group: number;
}

/**
 * A task with workflows whose notices go by e-mail to `mailed` (with a permission on the task each),
 * to a DingTalk group robot (signed), to an alarm group (by e-mail to its members) and to `hook`.
 * Every alarm with a new content opens a workflow.
 */
export async function claimTask(
  hook: TestReceiver,
  mailed: TestPerson[],
  opts: { readers?: number[]; groupMembers?: number[] } = {},
): Promise<ClaimWorld> {
  const robot = `tok${randomUUID().replace(/-/g, '')}`;
  const secret = `SEC${randomUUID().replace(/-/g, '')}`;
  await fakes().robot(robot, { secret });
  const group = 880_000 + Math.floor(Math.random() * 100_000);
  await importDirectory({
    alarm_groups: [
      {
        id: group,
        name: `claim-${group}`,
        remark: '',
        receiver: { channels: { email: opts.groupMembers ?? [] } },
      },
    ],
  } as never);
  const task = await createTask({
    name: uniqueTaskName('claim'),
    workflow: { enable: true, reminds: [] },
    // Workflows are opened by compressed alarms: one metric per content, so each new alarm opens one.
    compress: { enable: true, method: 3, strategy: 1, strategy_cycle: 10 },
    permission: { rw: mailed.map((p) => p.uid), ro: opts.readers ?? [] },
    receiver: {
      alarmgroup: [group],
      channels: { email: mailed.map((p) => p.uid), dinggroup: [{ webhook: robot, secret }], webhook: hook.url },
    },
  });
  return { task, robot, group };
}

export { addPeople };

/** Reports an alarm carrying `marker` (signed with the task token); its uuid. */
export async function reportAlarm(task: CreatedTask, marker: string, level = 2): Promise<string> {
  const timestamp = await serviceNow();
  const res = await call('POST', '/alarm/report', {
    app: null,
    json: {
      taskid: task.id,
      timestamp,
      sign: hmacSign(task.token, task.id, timestamp),
      level,
      ctn: { marker },
    },
  });
  if (res.code !== 0) throw new Error(`report refused: ${res.code} ${res.msg}`);
  return res.data.uuid as string;
}

/** The mails to `to` holding `marker` whose subject says `subject` (at least `min` of them). */
export async function mailsTo(to: string, marker: string, subject: RegExp, min = 1): Promise<FakeMail[]> {
  return fakes().waitFor(
    `mail to ${to} (${subject})`,
    async () =>
      (await fakes().mails()).filter(
        (m) => m.to.includes(to) && m.html.includes(marker) && subject.test(m.subject),
      ),
    min,
    30_000,
  );
}

/** The robot messages to `robot` holding `marker` whose title says `title`. */
export async function robotMessages(robot: string, marker: string, title: RegExp, min = 1) {
  return fakes().waitFor(
    `robot message (${title})`,
    async () =>
      (await fakes().requests('dinggroup')).filter(
        (r) =>
          r.query.access_token === robot &&
          r.body.includes(marker) &&
          title.test(r.json?.markdown?.title ?? ''),
      ),
    min,
    30_000,
  );
}

/** The one claim link of the `generated` mail to a person for the alarm holding `marker`. */
export async function mailedLink(to: string, marker: string): Promise<string> {
  const [mail] = await mailsTo(to, marker, /workflow #\d+ created/);
  const [token] = linksIn(mail.html);
  if (!token) throw new Error(`no claim link in the mail to ${to}`);
  return token;
}

/** The link's page (or its JSON) from a source address, as a browser, a scanner or an API client asks. */
export function getClaim(
  token: string,
  opts: Send & { json?: undefined; head?: boolean } = {},
): Promise<Answer> {
  return send(`/claim?t=${encodeURIComponent(token)}`, { ...opts, method: opts.head ? 'HEAD' : 'GET' });
}

/** `POST /claim` with the form fields, as the page's form posts them. */
export function postClaim(fields: Record<string, string>, opts: Send = {}): Promise<Answer> {
  return send('/claim', {
    ...opts,
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...opts.headers },
    body: new URLSearchParams(fields).toString(),
  });
}

const JSON_ACCEPT = { accept: 'application/json' };

/** The page nonce of a fresh page of the link (its JSON). */
export async function pageNonceOf(token: string, from?: string): Promise<string> {
  const page = await getClaim(token, { headers: JSON_ACCEPT, from });
  const nonce = page.json.data?.offer?.page_nonce;
  if (typeof nonce !== 'string') throw new Error(`no form on the page: ${page.status} ${page.json.msg}`);
  return nonce;
}

/** A claim as an API client makes it: a fresh page's nonce, then the POST, both as JSON. */
export async function claimAsJson(token: string, opts: Send = {}): Promise<Answer> {
  const n = await pageNonceOf(token, opts.from);
  return postClaim({ t: token, n }, { ...opts, headers: { ...JSON_ACCEPT, ...opts.headers } });
}

export { JSON_ACCEPT };
