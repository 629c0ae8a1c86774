import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../shared/local/paths.ts';
import { launchChromium, pageOf } from '../support/chromium.ts';
import { api, baseUrl } from '../support/client.ts';
import { addPeople } from '../support/people.ts';
import { createSchedule } from '../support/schedules.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';

/**
 * The console's schedule page in a real browser (Debian's chromium, playwright-core): a person with
 * read-write permission on a schedule sees who is on call now, the layers and the final rotation of
 * the next 14 days on a timeline, adds an override by dragging across a span of it, and sees who is
 * on call now on the page of a task that names the schedule. `npm run screenshots` saves the page to
 * docs/console/schedule.png.
 */
const SHOTS = process.env.CONSOLE_SCREENSHOTS === '1';
const run = randomUUID().slice(0, 8);
const IVY = {
  uid: 8501,
  user: `ivy-${run}`,
  email: `ivy-${run}@example.com`,
  username: 'Ivy Oncall',
  password: 'ivy console password',
};

let browser: Browser;
let page: Page;
const errors: string[] = [];
let schedule: { id: number; body: Record<string, unknown> };
let task: CreatedTask;

beforeAll(async () => {
  await addPeople([IVY]);
  schedule = await createSchedule({
    name: `primary-${run}`,
    permission: { rw: [IVY.uid] },
    layers: [
      {
        name: 'nights',
        start: '2026-01-01T20:00',
        turn: { every: 1, unit: 'week' },
        users: [3],
        restrictions: [{ days: [1, 2, 3, 4, 5, 6, 7], from: '20:00', to: '08:00' }],
      },
      {
        name: 'days',
        start: '2026-01-01T08:00',
        turn: { every: 1, unit: 'day' },
        users: [2, IVY.uid],
        restrictions: [{ days: [1, 2, 3, 4, 5], from: '08:00', to: '20:00' }],
      },
    ],
  });
  [task, browser] = await Promise.all([
    createTask({
      receiver: { oncall: [{ schedule_id: schedule.id, channels: ['email'] }] },
      permission: { rw: [], ro: [IVY.uid] },
    }),
    launchChromium(),
  ]);
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await pageOf(ctx, errors);
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

describe('the schedule page', () => {
  it('shows who is on call, the layers and 14 days of shifts, and adds an override for a span dragged on the timeline', async () => {
    // Arrange: signed in as a person with read-write permission on the schedule
    await page.goto(`${baseUrl()}/console`);
    await page.getByLabel('Account').fill(IVY.user);
    await page.getByLabel('Password').fill(IVY.password);
    await page.getByLabel('Password').press('Enter');
    await page.getByRole('link', { name: 'Schedules' }).click();
    await page.getByRole('link', { name: `primary-${run}` }).click();
    await page.getByRole('heading', { name: `primary-${run}` }).waitFor();
    // Assert: who is on call now, the layers, the next 14 days
    const now = page.locator('section', { has: page.getByRole('heading', { name: 'On call now' }) });
    expect(await now.textContent()).toMatch(/吕布|张三|Ivy Oncall|Nobody/);
    const layers = page.locator('section', {
      has: page.getByRole('heading', { name: 'Layers (top first)' }),
    });
    expect(await layers.locator('tbody tr').allTextContents()).toEqual([
      expect.stringContaining('days'),
      expect.stringContaining('nights'),
    ]);
    const segments = page.locator('.timeline .seg');
    expect(await segments.count()).toBeGreaterThan(14);
    expect(await page.locator('.timeline .seg.gap').count()).toBeGreaterThan(0);
    if (SHOTS)
      await page.screenshot({ path: join(projectRoot, 'docs/console/schedule.png'), fullPage: true });

    // Act: drag across a fifth of the bar, then add the override for Ivy
    const bar = page.getByTestId('timeline-bar');
    const box = (await bar.boundingBox()) as { x: number; y: number; width: number; height: number };
    await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2, { steps: 5 });
    await page.mouse.up();
    const start = await page.getByLabel('From').inputValue();
    const end = await page.getByLabel('To').inputValue();
    expect(start).toMatch(/^\d{4}-\d\d-\d\dT\d\d:(00|15|30|45)$/);
    await page.getByLabel('Person on call').selectOption(String(IVY.uid));
    await page.getByRole('button', { name: 'Add override' }).click();

    // Assert: saved for that span (about 1.4 days of the 14), shown on the page
    await page.getByRole('button', { name: /^Remove override \d+$/ }).waitFor();
    const shown = await api.get('/schedule/show', { query: { uid: 1, id: schedule.id } });
    const [o] = shown.data.schedule.overrides;
    expect(o.user).toBe(IVY.uid);
    expect(o.end - o.start).toBeGreaterThan(1.2 * 86_400);
    expect(o.end - o.start).toBeLessThan(1.6 * 86_400);
    expect(end > start).toBe(true);
    const overridden = page.locator('.timeline .shifts li', { hasText: `override ${o.id}` });
    expect(await overridden.count()).toBe(1);
    expect(await overridden.textContent()).toContain('Ivy Oncall');
  });

  it('shows who is on call now on the page of a task that names the schedule', async () => {
    await page.goto(`${baseUrl()}/console#/tasks/${task.id}`);
    const card = page.locator('section.oncall-now');
    await card.waitFor();
    expect(await card.getByRole('link', { name: `primary-${run}` }).count()).toBe(1);
    expect(await card.textContent()).toMatch(/by email · receiver/);
    expect(errors).toEqual([]);
  });
});
