import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

/** Debian's chromium (apt-get install chromium): no browser is downloaded. */
export const CHROMIUM = '/usr/bin/chromium';

/** Debian's chromium, headless; playwright gives it a fresh profile (--user-data-dir) of its own. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/**
 * A page whose script errors (and console errors other than the refusals the console shows on
 * purpose: 401, 403, 409, 429) are collected in `errors`.
 */
export async function pageOf(ctx: BrowserContext, errors: string[]): Promise<Page> {
  const p = await ctx.newPage();
  p.setDefaultTimeout(15_000);
  p.on('pageerror', (e) => errors.push(e.message));
  p.on('console', (m) => {
    if (m.type() === 'error' && !/status of (40[139]|429)/.test(m.text())) errors.push(m.text());
  });
  return p;
}
