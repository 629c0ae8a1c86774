/**
 * The console's deployment artifact: the function CDK bundles for `GET /console` carries the page
 * beside its code, and that bundle serves it with its CSP. A real (local esbuild) bundling of that one
 * function, then its handler called as Lambda would.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { App, Stack } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import { afterAll, describe, expect, it } from 'vitest';
import { routes } from '../definitions.ts';
import { PROJECT_ROOT } from '../stack.ts';
import { CONSOLE_ENTRY, consoleCommandHooks } from './console-bundling.ts';
import { LAMBDA_BUNDLING } from './service-functions.ts';

const outdir = mkdtempSync(join(tmpdir(), 'tocsin-console-cdk-'));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

describe('the console function bundle', () => {
  it('is the handler of GET /console, a public route without table access', () => {
    // Arrange / Act
    const route = routes.find((r) => r.method === 'GET' && r.path === '/console');
    // Assert
    expect(route).toMatchObject({ handler: CONSOLE_ENTRY, auth: 'none', access: {} });
  });

  it('holds console.html beside index.mjs, and the bundled handler serves it with a hash-only CSP', async () => {
    // Arrange: bundle the one function as the stack does
    const app = new App({ outdir });
    const stack = new Stack(app, 'ConsoleBundle');
    new nodejs.NodejsFunction(stack, 'Console', {
      entry: join(PROJECT_ROOT, CONSOLE_ENTRY),
      handler: 'handler',
      runtime: lambda.Runtime.NODEJS_24_X,
      projectRoot: PROJECT_ROOT,
      depsLockFilePath: join(PROJECT_ROOT, 'package-lock.json'),
      bundling: {
        ...LAMBDA_BUNDLING,
        tsconfig: join(PROJECT_ROOT, 'tsconfig.json'),
        commandHooks: consoleCommandHooks(),
      },
    });
    // Act
    app.synth();
    const assets = readdirSync(outdir).filter((d) => d.startsWith('asset.'));
    const bundle = assets.map((d) => join(outdir, d)).find((d) => existsSync(join(d, 'index.mjs')));
    // Assert: the page is there, self-contained
    expect(bundle).toBeDefined();
    const dir = bundle as string;
    const html = readFileSync(join(dir, 'console.html'), 'utf8');
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+stylesheet/);
    // ... and the bundled handler (as Lambda loads it) answers it
    const mod = (await import(pathToFileURL(join(dir, 'index.mjs')).href)) as {
      handler: (
        e: unknown,
        c: unknown,
      ) => Promise<{ statusCode: number; headers: Record<string, string>; body: string }>;
    };
    const res = await mod.handler(
      { rawPath: '/console', headers: {}, requestContext: { http: { method: 'GET' } } },
      { awsRequestId: 'test', functionName: 'console' },
    );
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['content-security-policy']).toMatch(
      /script-src 'sha256-[A-Za-z0-9+/=]+'; style-src 'sha256-/,
    );
    expect(res.headers['content-security-policy']).not.toContain('unsafe-inline');
    expect(res.body).toContain('<div id="app">');
  }, 120_000);
});
