import { randomBytes } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, pageOf } from '../support/chromium.ts';
import { advanceClock, baseUrl } from '../support/client.ts';
import { addPeople } from '../support/people.ts';
import { createTask, uniqueTaskName } from '../support/tasks.ts';

/**
 * People signing in to the console in a real browser (Debian's chromium, playwright-core): with the
 * password an operator set, seeing their own tasks and not another person's; locked out after
 * repeated wrong passwords; through single sign-on at the test provider (`oidc-provider`), as the
 * directory user with that e-mail; signed out, everywhere, and by expiry.
 */
const run = randomBytes(3).toString('hex');
const FAY = {
  uid: 8401,
  user: `fay-${run}`,
  email: `fay-${run}@example.com`,
  username: 'Fay Console',
  password: 'fay console password',
};
const GUS = {
  uid: 8402,
  user: `gus-${run}`,
  email: `gus-${run}@example.com`,
  username: 'Gus Console',
  password: 'gus console password',
};
const HAL = { uid: 8403, user: `hal-${run}`, email: `hal-${run}@example.com`, username: 'Hal Console' };

let browser: Browser;
const errors: string[] = [];
let fayTask: { id: number; name: string };
let gusTask: { id: number; name: string };

const consoleUrl = (hash = '') => `${baseUrl()}/console${hash}`;

async function fresh(): Promise<{ ctx: BrowserContext; page: Page }> {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  return { ctx, page: await pageOf(ctx, errors) };
}

/** Fills the form and signs in, waiting for the service's answer. */
async function signIn(page: Page, account: string, password: string): Promise<void> {
  await page.getByLabel('Account').fill(account);
  await page.getByLabel('Password').fill(password);
  await Promise.all([
    page.waitForResponse((r) => r.url().endsWith('/auth/signin')),
    page.getByRole('button', { name: 'Sign in', exact: true }).click(),
  ]);
}

const signInHeading = (page: Page) => page.getByRole('heading', { name: 'Sign in to the tocsin console' });

beforeAll(async () => {
  await addPeople([FAY, GUS, HAL]);
  [fayTask, gusTask, browser] = await Promise.all([
    createTask({ name: uniqueTaskName(`fay-orders-${run}`), permission: { rw: [FAY.uid], ro: [] } }),
    createTask({ name: uniqueTaskName(`gus-billing-${run}`), permission: { rw: [GUS.uid], ro: [] } }),
    launchChromium(),
  ]);
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

describe('signing in to the console', () => {
  it('signs a person in with the password an operator set; they see their tasks, not another’s', async () => {
    // Arrange
    const { ctx, page } = await fresh();
    await page.goto(consoleUrl());
    await signInHeading(page).waitFor();
    // Act
    await signIn(page, FAY.email, FAY.password);
    await page.getByRole('heading', { name: 'Tasks' }).waitFor();
    // Assert: their task is listed, the other person's is not, nor the dead letters
    await page.getByRole('link', { name: fayTask.name }).waitFor();
    expect(await page.getByRole('link', { name: gusTask.name }).count()).toBe(0);
    expect(await page.getByRole('link', { name: 'Dead letters' }).count()).toBe(0);
    expect(await page.locator('.who').textContent()).toContain('Fay Console');
    // Act: the other person's task by its address
    await page.goto(consoleUrl(`#/tasks/${gusTask.id}`));
    // Assert
    const alert = page.getByRole('alert');
    await expect
      .poll(() => alert.textContent(), { timeout: 15_000 })
      .toContain(`Not allowed: user [${FAY.uid}] has no permission on task [${gusTask.id}]`);
    await ctx.close();
  });

  it('locks the account after 5 wrong passwords: the right one is refused too', async () => {
    // Arrange
    const { ctx, page } = await fresh();
    await page.goto(consoleUrl());
    const alert = page.getByRole('alert');
    for (let i = 1; i <= 5; i++) {
      await signIn(page, GUS.user, `wrong password ${i}`);
      await expect
        .poll(() => alert.textContent(), { timeout: 15_000 })
        .toContain('account or password is wrong');
    }
    // Act
    await signIn(page, GUS.user, GUS.password);
    // Assert
    await expect
      .poll(() => alert.textContent(), { timeout: 15_000 })
      .toContain('Refused for now: too many failed sign-ins for this account: try again in 15 minutes');
    expect(await page.getByRole('heading', { name: 'Tasks' }).count()).toBe(0);
    await ctx.close();
  });

  it('signs in through single sign-on as the directory user with the provider’s e-mail', async () => {
    // Arrange
    const { ctx, page } = await fresh();
    await page.goto(consoleUrl());
    // Act: to the provider, its login page, and back
    await page.getByRole('link', { name: 'Sign in with SSO' }).click();
    await page.getByRole('heading', { name: 'Test identity provider' }).waitFor();
    await page.getByLabel('E-mail').fill(HAL.email);
    await page.getByRole('button', { name: 'Continue' }).click();
    // Assert
    await page.getByRole('heading', { name: 'Tasks' }).waitFor();
    expect(await page.locator('.who').textContent()).toContain('Hal Console');
    expect(page.url()).toBe(consoleUrl());
    await ctx.close();
  });

  it('refuses single sign-on clearly when no directory user has the e-mail', async () => {
    const { ctx, page } = await fresh();
    await page.goto(consoleUrl());
    await page.getByRole('link', { name: 'Sign in with SSO' }).click();
    await page.getByLabel('E-mail').fill(`nobody-${run}@example.com`);
    await page.getByRole('button', { name: 'Continue' }).click();
    await signInHeading(page).waitFor();
    await expect
      .poll(() => page.getByRole('alert').textContent(), { timeout: 15_000 })
      .toContain('no person in the tocsin directory has that e-mail address');
    // The reason is not left in the address bar.
    expect(page.url()).toBe(consoleUrl());
    await ctx.close();
  });

  it('signs out, and signs out everywhere: the other browser is told its session ended', async () => {
    // Arrange: Fay in two browsers
    const a = await fresh();
    const b = await fresh();
    for (const { page } of [a, b]) {
      await page.goto(consoleUrl());
      await signIn(page, FAY.user, FAY.password);
      await page.getByRole('heading', { name: 'Tasks' }).waitFor();
    }
    // Act: sign out everywhere in the first
    await a.page.getByRole('button', { name: 'Sign out everywhere' }).click();
    // Assert: the first is signed out (and stays so after a reload)
    await signInHeading(a.page).waitFor();
    expect(await a.page.getByRole('status').textContent()).toContain('You are signed out.');
    await a.page.reload();
    await signInHeading(a.page).waitFor();
    // Act: the second opens a task
    await b.page.goto(consoleUrl(`#/tasks/${fayTask.id}`));
    // Assert
    await signInHeading(b.page).waitFor();
    expect(await b.page.getByRole('status').textContent()).toContain('Your session has ended');
    await a.ctx.close();
    await b.ctx.close();
  });

  it('ends a session left unused past the idle limit', async () => {
    // Arrange
    const { ctx, page } = await fresh();
    await page.goto(consoleUrl());
    await signIn(page, FAY.user, FAY.password);
    await page.getByRole('link', { name: fayTask.name }).waitFor();
    // Act: the stack's idle limit (2 days) passes; then the person opens the task
    await advanceClock(2880 * 60 + 60);
    await page.goto(consoleUrl(`#/tasks/${fayTask.id}`));
    // Assert
    await signInHeading(page).waitFor();
    expect(await page.getByRole('status').textContent()).toContain('Your session has ended');
    // And a new sign-in goes on where the person was
    await signIn(page, FAY.user, FAY.password);
    await page.getByRole('heading', { name: fayTask.name }).waitFor();
    await ctx.close();
    expect(errors).toEqual([]);
  });
});
