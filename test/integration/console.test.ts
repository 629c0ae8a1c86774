import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setPasswordByOperator } from '../../shared/domain/signin/signin.ts';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { projectRoot } from '../../shared/local/paths.ts';
import { launchChromium, pageOf } from '../support/chromium.ts';
import { advanceClock, api, baseUrl, call, serviceNow } from '../support/client.ts';
import { TestReceiver } from '../support/receiver.ts';
import { ADMIN_APP } from '../support/seed.ts';
import { type CreatedTask, createTask, uniqueTaskName } from '../support/tasks.ts';

/**
 * The web console (docs/console.md) in a real browser: Debian's chromium driven by playwright-core against
 * the shared local stack. Sign-in (a wrong password, then the right one), a task found by search,
 * alarms appearing live, a decision trace, two workflows claimed and finished at once (and a 409
 * explained), a dead letter redriven, the charts. (Sign-in itself, lockout, single sign-on, expiry and
 * sign out: console-sign-in.test.ts.)
 *
 * `npm run screenshots` runs this file with CONSOLE_SCREENSHOTS=1 and saves the main pages to
 * docs/console/*.png.
 */
const SHOTS = process.env.CONSOLE_SCREENSHOTS === '1';
const SHOTS_DIR = join(projectRoot, 'docs/console');
const ADMIN = 1;
/** The sample directory's super administrator signs in with the password the operator set. */
const ADMIN_ACCOUNT = 'annlee';
const ADMIN_PASSWORD = 'console test password';

// biome-ignore lint/suspicious/noExplicitAny: response rows of arbitrary shape
type Row = Record<string, any>;

let browser: Browser;
let context: BrowserContext;
let page: Page;
const pageErrors: string[] = [];
/** Every refused request the browser made (it logs each in its console): `401 GET /auth/session`. */
const refused: string[] = [];
const hook = new TestReceiver();
const deadHook = new TestReceiver();
let deadFailing = true;
let task: CreatedTask;
let deadTask: CreatedTask;

const launch = launchChromium;
const newPage = (ctx: BrowserContext) => pageOf(ctx, pageErrors);

const consoleUrl = (hash = '') => `${baseUrl()}/console${hash}`;

async function shot(name: string): Promise<void> {
  if (!SHOTS) return;
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(SHOTS_DIR, `${name}.png`), fullPage: true });
}

async function report(t: CreatedTask, ctn: Record<string, unknown>, level: number): Promise<string> {
  const timestamp = await serviceNow();
  const res = await call('POST', '/alarm/report', {
    app: null,
    json: { taskid: t.id, timestamp, sign: hmacSign(t.token, t.id, timestamp), ctn, level },
  });
  if (res.code !== 0) throw new Error(`report refused: ${res.code} ${res.msg}`);
  return res.data.uuid as string;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Screenshots only (this file alone, `npm run screenshots`): alarms over several minutes of the
 * service clock, so the charts have something to show.
 */
async function busyMinutes(t: CreatedTask, minutes: number): Promise<void> {
  for (let m = 0; m < minutes; m++) {
    const n = 1 + ((m * 7) % 5);
    for (let i = 0; i < n; i++) {
      await report(
        t,
        { service: 'checkout', host: `web-${(m + i) % 4}`, error: 'HTTP 502 from payments' },
        (m + i) % 4,
      );
    }
    await advanceClock(60);
  }
  await new Promise((r) => setTimeout(r, 2000));
}

async function signIn(p: Page, password = ADMIN_PASSWORD): Promise<void> {
  await p.getByLabel('Account').fill(ADMIN_ACCOUNT);
  await p.getByLabel('Password').fill(password);
  // Enter submits the form.
  await p.getByLabel('Password').press('Enter');
}

beforeAll(async () => {
  if (SHOTS) mkdirSync(SHOTS_DIR, { recursive: true });
  await hook.start();
  // A receiver that fails until told otherwise: the PING of its task dies (7 attempts, ~10 s).
  deadHook.behaviour = () => ({ status: deadFailing ? 503 : 200 });
  await deadHook.start();
  await setPasswordByOperator(ADMIN, ADMIN_PASSWORD);
  [deadTask, task, browser] = await Promise.all([
    createTask({
      name: uniqueTaskName('billing-webhook'),
      receiver: { channels: { email: [1], webhook: `${deadHook.url}/hook` } },
    }),
    createTask({
      name: uniqueTaskName('checkout-api'),
      receiver: { channels: { email: [1], webhook: `${hook.url}/tocsin?token=not-for-the-console` } },
      // Content compression: each distinct alarm opens its own window, notified, with its workflow.
      compress: { enable: true, method: 3, strategy: 1, strategy_cycle: 600, not_match: 1 },
      workflow: { enable: true },
      permission: { rw: [4], ro: [] },
    }),
    launch(),
  ]);
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await newPage(context);
  page.on('response', (r) => {
    if (r.status() >= 400) refused.push(`${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`);
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await Promise.all([hook.stop(), deadHook.stop()]);
});

describe('the web console in a browser', () => {
  it('refuses a wrong password with a clear message, signs in, and finds the task by search', async () => {
    // Arrange
    await page.goto(consoleUrl());
    await page.getByRole('heading', { name: 'Sign in to the tocsin console' }).waitFor();
    await shot('sign-in');

    // Act: a wrong password
    await signIn(page, 'not the password');

    // Assert: what went wrong and what to do
    const refused = page.getByRole('alert');
    // (a password check takes a slow hash: a few hundred milliseconds on a busy machine)
    await expect
      .poll(() => refused.textContent(), { timeout: 15_000 })
      .toContain('Sign-in refused: account or password is wrong');
    expect(await refused.textContent()).toContain('Check the account');

    // Act: the right one, then a search
    await signIn(page);
    await page.getByRole('heading', { name: 'Tasks' }).waitFor();
    await page.getByLabel('Search').fill(task.name.slice(0, 18));
    await page.getByLabel('Search').press('Enter');

    // Assert
    const link = page.getByRole('link', { name: task.name });
    await link.waitFor();
    // Nothing a script could read: the session is an HttpOnly cookie, nothing is kept in storage.
    const stored = (await page.evaluate(
      '({ session: sessionStorage.length, local: localStorage.length, cookie: document.cookie })',
    )) as { session: number; local: number; cookie: string };
    expect(stored).toEqual({ session: 0, local: 0, cookie: '' });
    const [cookie] = (await context.cookies()).filter((c) => c.name === 'tocsin_session');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
    expect(page.url()).not.toContain(cookie.value);
    await shot('tasks');
  });

  it('shows a task, its configuration without credentials, and new alarms live without a reload', async () => {
    // Arrange
    await page.getByRole('link', { name: task.name }).click();
    await page.getByRole('heading', { name: task.name }).waitFor();
    const receivers = page.locator('section', { has: page.getByRole('heading', { name: 'Receivers' }) });
    expect(await receivers.textContent()).toContain(`${hook.url}/tocsin?…`);
    expect(await receivers.textContent()).toMatch(/E-mail\S/);
    const compression = page.locator('section', {
      has: page.getByRole('heading', { name: /^Compression/ }),
    });
    expect(await compression.textContent()).toContain('content method, cycle strategy');
    expect(await page.content()).not.toContain('not-for-the-console');
    // Every channel's templates, each row inside the card (none behind a scroll)
    const templates = page.locator('section', { has: page.getByRole('heading', { name: 'Templates' }) });
    expect(await templates.locator('tbody tr').count()).toBe(8);
    expect(await templates.locator('tbody th').allTextContents()).toContain('Yach robots');
    const fits = await page.evaluate(`(() => {
      const table = document.querySelector('table.templates');
      return table.getBoundingClientRect().right <= table.closest('section').getBoundingClientRect().right;
    })()`);
    expect(fits).toBe(true);
    await page.getByRole('link', { name: 'Alarms', exact: true }).click();
    await page.getByText(/No alarm in the last 31 days/).waitFor();
    await page.evaluate('window.marker = 42');

    // Act: alarms arrive while the page is open
    await report(task, { service: 'checkout', host: 'web-1', error: 'HTTP 502 from payments' }, 2);
    await page.locator('tr', { hasText: 'web-1' }).waitFor();
    await report(task, { service: 'checkout', host: 'web-2', error: 'disk full' }, 3);
    await page.locator('tr', { hasText: 'web-2' }).waitFor();

    // Assert: newest first, on the same page (no reload)
    const rows = page.locator('tbody tr');
    expect(await rows.first().textContent()).toContain('web-2');
    expect(await rows.nth(1).textContent()).toContain('web-1');
    expect(await rows.first().textContent()).toContain('urgent');
    expect(await page.evaluate('window.marker')).toBe(42);
    // "sent" is the decision, not a delivery: not the green of a delivered message
    const sent = rows.first().locator('.badge.outcome-notified');
    expect(await sent.textContent()).toBe('sent');
    const [sentColour, goodColour] = (await page.evaluate(`(() => {
      const good = document.createElement('span');
      good.className = 'badge good';
      document.body.append(good);
      const colours = [document.querySelector('.badge.outcome-notified'), good].map((e) => getComputedStyle(e).color);
      good.remove();
      return colours;
    })()`)) as string[];
    expect(sentColour).not.toBe(goodColour);
    await shot('alarms');
  });

  it('opens the decision trace of an alarm as a timeline', async () => {
    // Arrange
    const row = page.locator('tr', { hasText: 'web-1' });
    const uuid = await row.getAttribute('data-uuid');
    const trace = await until('the trace with its webhook attempt and workflow', async () => {
      const res = await api.get<Row>('/alarmtask/alarm/trace', {
        query: { uid: ADMIN, task_id: task.id, uuid: String(uuid) },
      });
      // Every delivery settled: the summary the page shows names what they came to.
      const settled = (res.data.notifications ?? []).every((n: Row) => n.status !== 'pending');
      return res.data.webhooks?.[0]?.attempts?.length && res.data.workflow && settled ? res.data : undefined;
    });

    // Act
    await row.getByRole('link', { name: 'Trace' }).click();

    // Assert
    await page.getByRole('heading', { name: `Alarm trace: ${task.name}` }).waitFor();
    await page.getByText(trace.summary).waitFor();
    const timeline = page.locator('ol.timeline');
    const text = await timeline.textContent();
    expect(text).toContain('Stage: compress');
    // The compressed alarm's window, from the compress stage's details.
    expect(text).toMatch(/window \d{4}-\d\d-\d\d \d\d:\d\d:\d\d – \d{4}-/);
    expect(text).toContain('Receivers selected');
    expect(text).toContain('Notification: email (compressed)');
    expect(text).toContain('Webhook event: ALARM (compressed)');
    expect(text).toContain('delivered');
    // The outcome says whether a person was reached (the e-mail provider fake took the message)
    expect(trace.delivery.reach).toBe('notified');
    expect(text).toContain('Deliverednotified');
    expect(await page.locator('main .badge[data-reach]').getAttribute('class')).toContain('good');
    for (const c of trace.delivery.channels) expect(text).toContain(`${c.channel}: ${c.result}`);
    // People are named, as the rest of the console names them
    expect(text).toContain('Ann Lee (uid 1)');
    expect(text).not.toMatch(/email\s*uid 1\b/);
    expect(text).toContain(`Workflow #${trace.workflow.id} opened`);
    expect(text).not.toContain('not-for-the-console');
    await shot('trace');
  });

  it('claims two workflows at once, finishes them, and explains a 409', async () => {
    // Arrange: a third alarm, so three pending workflows
    await report(task, { service: 'checkout', host: 'web-3', error: 'timeout' }, 1);
    const pending = await until('three pending workflows', async () => {
      const res = await api.get<Row>('/workflow/list', {
        query: { uid: ADMIN, task_id: task.id, status: 0 },
      });
      return res.data.workflows.length === 3 ? (res.data.workflows as Row[]) : undefined;
    });
    const [third, second, first] = pending.map((w) => w.id as number);
    await page.getByRole('link', { name: 'Workflows', exact: true }).click();
    const column = (name: string) =>
      page.locator('section.column', { has: page.getByRole('heading', { name }) });
    const card = (status: string, id: number) =>
      column(status).getByRole('link', { name: `#${id}`, exact: true });
    await card('pending', third).waitFor();
    // Nothing selected: the operations cannot be pressed, and look it (the primary one too)
    const look = (name: string) =>
      page.evaluate(`(() => {
        const b = [...document.querySelectorAll('button')].find((x) => x.textContent === '${name}');
        const s = getComputedStyle(b);
        return { disabled: b.disabled, cursor: s.cursor, border: s.borderStyle, bg: s.backgroundColor };
      })()`) as Promise<Row>;
    const [claim, finish] = [await look('Claim'), await look('Finish')];
    expect(claim).toMatchObject({ disabled: true, cursor: 'not-allowed', border: 'dashed' });
    expect(finish).toMatchObject({ disabled: true, cursor: 'not-allowed', border: 'dashed', bg: claim.bg });
    // A card sums its alarm up (the naming keys), never raw JSON cut mid-word
    const content = column('pending')
      .locator('.wf-card', { hasText: `#${third}` })
      .locator('.content');
    expect(await content.textContent()).toBe('host web-3');

    // Act: claim the first two together
    await page.getByLabel(`Select workflow #${first}`).check();
    await page.getByLabel(`Select workflow #${second}`).check();
    await page.getByRole('button', { name: 'Claim' }).click();

    // Assert
    await page.getByText(`2 workflows claimed: #${first}, #${second}.`).waitFor();
    await card('processing', second).waitFor();
    await shot('workflows');

    // Act: finish both, with a remark
    await page.getByLabel(`Select workflow #${first}`).check();
    await page.getByLabel(`Select workflow #${second}`).check();
    await page.getByLabel('Remark').fill('restarted web-1 and web-2');
    await page.getByRole('button', { name: 'Finish' }).click();

    // Assert
    await page.getByText(`2 workflows finished: #${first}, #${second}.`).waitFor();
    await card('done', first).waitFor();
    const done = await api.get<Row>('/workflow/show', { query: { id: first } });
    expect(done.data.workflow.status).toBe(2);
    expect(done.data.workflow.pipelines.map((p: Row) => [p.status, p.created_by, p.remark])).toEqual([
      [0, 0, ''],
      [1, ADMIN, ''],
      [2, ADMIN, 'restarted web-1 and web-2'],
    ]);

    // Act: the third is claimed elsewhere while this page still shows it pending
    await page.getByLabel(`Select workflow #${third}`).check();
    const elsewhere = await api.put('/workflow/claim', { ids: [third], created_by: 4 });
    expect(elsewhere.code).toBe(0);
    await page.getByRole('button', { name: 'Claim' }).click();

    // Assert: the conflict, and what to do
    const alert = page.getByRole('alert');
    await expect.poll(() => alert.textContent()).toContain(`Conflict: workflow [${third}] is processing`);
    expect(await alert.textContent()).toContain('refresh, check it, then try again');

    // Act / Assert: its pipeline history
    await page.getByRole('link', { name: `#${first}`, exact: true }).click();
    await page.getByRole('heading', { name: `Workflow #${first}` }).waitFor();
    const history = await page.locator('ol.timeline').textContent();
    expect(history).toContain('claimed');
    expect(history).toContain('restarted web-1 and web-2');
  });

  it('redrives a dead letter from the deliveries page', async () => {
    // Arrange: the dead task's PING is in the webhook dead-letter queue
    const dead = await until(
      'the dead PING',
      async () => {
        const res = await api.get<Row>('/delivery/dlq', {
          query: { uid: ADMIN, queue: 'webhook', task_id: deadTask.id },
          app: ADMIN_APP,
        });
        return res.data.dead_letters?.[0] as Row | undefined;
      },
      45_000,
    );
    deadFailing = false;
    await page.goto(consoleUrl(`#/tasks/${deadTask.id}/deliveries`));
    const row = page.locator(`tr[data-message-id="${dead.message_id}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain('HTTP 503');
    expect(await page.locator('.note-leve').textContent()).toContain('also as leve');
    await shot('deliveries');

    // Act
    const sentBefore = deadHook.received.filter((r) => r.headers['webhook-id'] === dead.event_id).length;
    await row.getByRole('button', { name: 'Redrive' }).click();

    // Assert: moved back, then sent again at once (whatever its task's circuit says) and delivered as
    // its 8th attempt
    await page.getByText('1 dead letter redriven to the webhook queue.').waitFor();
    await deadHook.waitFor(
      (all) => all.filter((r) => r.headers['webhook-id'] === dead.event_id).length === sentBefore + 1,
    );
    const left = await api.get<Row>('/delivery/dlq', {
      query: { uid: ADMIN, queue: 'webhook', task_id: deadTask.id },
      app: ADMIN_APP,
    });
    expect(left.data.dead_letters.map((d: Row) => d.message_id)).not.toContain(dead.message_id);
    await page.getByRole('button', { name: 'Refresh' }).first().click();
    await page.locator('tr', { hasText: 'delivered' }).first().waitFor();
    const attempts = await api.get<Row>('/alarmtask/deliveries', {
      query: { uid: ADMIN, task_id: deadTask.id },
      app: ADMIN_APP,
    });
    expect(attempts.data.deliveries.find((d: Row) => d.id === dead.event_id)).toMatchObject({
      attempt: 8,
      outcome: 'delivered',
    });
  });

  it('draws alarms per minute by level and by outcome', async () => {
    // Arrange: the hour around the urgent alarm (other suites move the service clock by hours)
    if (SHOTS) await busyMinutes(task, 12);
    const alarms = (
      await api.get<Row>('/alarmtask/alarms', { query: { uid: ADMIN, task_id: task.id, limit: 100 } })
    ).data.alarms as Row[];
    const urgent = alarms.find((a) => a.level === 3) as Row;
    const to = urgent.created_at + 1800;
    const stats = await api.get<Row>('/alarmtask/alarms/stats', {
      query: { uid: ADMIN, task_id: task.id, from: to - 3600, to },
    });
    const sum = (pick: (m: Row) => number) => (stats.data.minutes as Row[]).reduce((n, m) => n + pick(m), 0);
    const [urgentCount, notifiedCount] = [sum((m) => m.levels[3]), sum((m) => m.outcomes.notified ?? 0)];

    // Act
    await page.goto(consoleUrl(`#/tasks/${task.id}/charts?minutes=60&to=${to}`));

    // Assert: the service's counts, drawn
    const figure = (name: string) => page.locator('figure', { has: page.getByRole('heading', { name }) });
    await figure('Alarms per minute by level').locator('rect').first().waitFor();
    expect(urgentCount).toBeGreaterThanOrEqual(1);
    expect(await figure('Alarms per minute by level').locator('.legend').textContent()).toContain(
      `urgent ${urgentCount}`,
    );
    expect(await figure('Alarms per minute by outcome').locator('.legend').textContent()).toContain(
      `sent ${notifiedCount}`,
    );
    expect(
      await figure('Alarms per minute by outcome').locator('rect.s-outcome-notified').count(),
    ).toBeGreaterThan(0);
    if (SHOTS) {
      await page.goto(consoleUrl(`#/tasks/${task.id}/charts`));
      await figure('Alarms per minute by level').locator('rect').first().waitFor();
      await shot('charts');
      await page.goto(consoleUrl(`#/tasks/${task.id}`));
      await page.getByRole('heading', { name: 'Configuration' }).waitFor();
      await shot('task');
    }
  });

  it('shows what a configuration change would do before it is saved', async () => {
    // Arrange: keep urgent alarms only (the task's others are errors and warnings), as the API answers
    const change = {
      filter_fields: ['filter'],
      filter: {
        enable: true,
        mode: 1,
        not_match: 0,
        conditions: [{ rule: [{ field: 'level', operator: 'gte', threshold: '3' }], level: 9 }],
      },
    };
    const expected = (
      await api.post<Row>('/alarmtask/replay', { uid: ADMIN, task_id: task.id, config: change, last: 500 })
    ).data;
    expect(expected.changes_total).toBeGreaterThan(0);
    await page.goto(consoleUrl(`#/tasks/${task.id}`));
    await page.getByRole('heading', { name: 'Configuration' }).waitFor();

    // Act
    await page.getByRole('button', { name: 'What would this change do?' }).click();
    await page.getByLabel('Change').fill(JSON.stringify(change));
    await page.getByRole('button', { name: 'Replay', exact: true }).click();

    // Assert: the summary, the per-person table and the changed alarms, as the service counted them
    const summary = page.locator('table.what-if-summary');
    await summary.waitFor();
    const row = (table: string, name: string) =>
      page.locator(`table.${table} tr`, { has: page.getByRole('rowheader', { name, exact: true }) });
    const cells = async (table: string, name: string) => row(table, name).locator('td').allTextContents();
    expect(await cells('what-if-summary', 'Notified')).toEqual([
      String(expected.summary.recorded.notified),
      String(expected.summary.current.notified),
      String(expected.summary.edited.notified),
    ]);
    expect(await cells('what-if-summary', 'Filtered')).toEqual([
      String(expected.summary.recorded.filtered),
      String(expected.summary.current.filtered),
      String(expected.summary.edited.filtered),
    ]);
    const ann = expected.people.find((p: Row) => p.uid === ADMIN);
    expect(await cells('what-if-people', 'Ann Lee')).toEqual([
      `email ${ann.before.email}`,
      ann.after.email ? `email ${ann.after.email}` : '—',
    ]);
    const changed = page.locator('table.what-if-changes tbody tr');
    expect(await changed.count()).toBe(expected.changes.length);
    expect(await changed.first().textContent()).toContain('filter');
    expect(await changed.first().textContent()).toContain('whitelist');
    expect(await page.locator('.save-hint').textContent()).toContain('replay_id');
  });

  it('keeps the session across a reload, without a script error', async () => {
    await page.goto(consoleUrl('#/tasks'));
    await page.reload();
    await page.getByRole('heading', { name: 'Tasks' }).waitFor();
    expect(await page.locator('.who').textContent()).toContain('Ann Lee');
    expect(pageErrors).toEqual([]);
    // The only refusal of the whole visit is the wrong password: asking who is signed in, before
    // signing in or on a reload, is never refused (the browser would log it as an error)
    expect(refused.filter((r) => r.startsWith('401') || r.includes('/auth/session'))).toEqual([
      '401 POST /auth/signin',
    ]);
  });
});
