import { describe, expect, it } from 'vitest';
import { routes } from '../../infra/definitions.ts';
import { escapeHtml } from '../../shared/http/reference.ts';
import { baseUrl } from '../support/client.ts';
import { type Answer, checkingFetch, mismatchOf } from '../support/openapi-check.ts';

type Json = Record<string, unknown>;

const deployed = routes.filter((r) => !r.localOnly);

describe('GET /openapi.json', () => {
  it('serves the OpenAPI 3.1 document of every route, without auth, with this server', async () => {
    // Act
    const res = await fetch(`${baseUrl()}/openapi.json`);
    const doc = (await res.json()) as Json;
    // Assert
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(doc.openapi).toBe('3.1.0');
    const paths = doc.paths as Record<string, Json>;
    for (const r of deployed)
      expect(paths[r.path]?.[r.method.toLowerCase()], `${r.method} ${r.path}`).toBeDefined();
    expect(paths['/_local/clock']).toBeUndefined();
    expect(doc.servers).toEqual([{ url: baseUrl().replace(/\/$/, ''), description: 'This deployment.' }]);
  });

  it('names a server the API answers on', async () => {
    // Arrange
    const doc = (await (await fetch(`${baseUrl()}/openapi.json`)).json()) as { servers: { url: string }[] };
    // Act
    const health = await fetch(`${doc.servers[0].url}/health`);
    // Assert
    expect(health.status).toBe(200);
    expect(((await health.json()) as Json).msg).toBe('ok');
  });
});

describe('GET /docs', () => {
  it('serves a self-contained reference page that mentions every route and runs no script', async () => {
    // Act
    const res = await fetch(`${baseUrl()}/docs`);
    const html = await res.text();
    // Assert
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(html.startsWith('<!doctype html>')).toBe(true);
    for (const r of deployed) {
      expect(html, `${r.method} ${r.path}`).toContain(
        `${escapeHtml(r.method)}</span> <code>${escapeHtml(r.path)}</code>`,
      );
    }
    // No script and nothing loaded from elsewhere: no tag from a description, no CDN.
    expect(html).not.toMatch(/<script|<iframe|<link|<img|\son[a-z]+=|javascript:/i);
    expect(html).not.toMatch(/https?:\/\/(?!127\.0\.0\.1|localhost)[^'"<\s]*\.(js|css)\b/);
    // The example requests are addressed to this server.
    expect(html).toContain(escapeHtml(`curl -X GET '${baseUrl().replace(/\/$/, '')}/health'`));
  });

  it('answers a refused method on its path with the 404 envelope, like any unknown route', async () => {
    // Act
    const res = await fetch(`${baseUrl()}/docs`, { method: 'POST' });
    // Assert
    expect(res.status).toBe(404);
    expect(((await res.json()) as Json).msg).toBe('route [POST /docs] not found');
  });
});

describe('the check of every answer against the document (test/support/openapi-check.ts)', () => {
  const answer = (over: Partial<Answer> = {}): Answer => ({
    method: 'GET',
    url: `${baseUrl().replace(/\/$/, '')}/health`,
    status: 200,
    contentType: 'application/json; charset=utf-8',
    body: JSON.stringify({ code: 0, msg: 'ok', data: { version: '1.0.0' } }),
    ...over,
  });

  it('passes a real answer and refuses one whose data differs, naming the operation, status and field', async () => {
    // Arrange: a real answer, and the same with a field the type does not have.
    const res = await fetch(`${baseUrl()}/health`);
    const real = await res.text();
    const extra = JSON.parse(real) as { data: Record<string, unknown> };
    extra.data.uptime = 1;
    // Act
    const ok = mismatchOf(answer({ body: real }));
    const drift = mismatchOf(answer({ body: JSON.stringify(extra) }));
    const wrongType = mismatchOf(
      answer({ body: JSON.stringify({ code: 0, msg: 'ok', data: { version: 1 } }) }),
    );
    // Assert
    expect(ok).toBeUndefined();
    expect(drift).toContain('GET /health answered HTTP 200');
    expect(drift).toContain('/data must NOT have additional properties (uptime)');
    expect(wrongType).toContain('/data/version must be string');
  });

  it('refuses a status the operation does not list, a wrong envelope code and an unknown route answered otherwise than 404', () => {
    // Act
    const unlisted = mismatchOf(
      answer({ status: 409, body: JSON.stringify({ code: 409, msg: 'x', data: {} }) }),
    );
    const code = mismatchOf(
      answer({
        url: `${baseUrl().replace(/\/$/, '')}/alarmtask/list`,
        status: 404,
        body: JSON.stringify({ code: 422, msg: 'x', data: {} }),
      }),
    );
    const unknown = mismatchOf(answer({ url: `${baseUrl().replace(/\/$/, '')}/nowhere`, status: 200 }));
    const notFound = mismatchOf(
      answer({
        url: `${baseUrl().replace(/\/$/, '')}/nowhere`,
        status: 404,
        body: JSON.stringify({ code: 404, msg: 'route [GET /nowhere] not found', data: {} }),
      }),
    );
    // Assert
    expect(unlisted).toContain('GET /health answered HTTP 409, which the document does not list');
    expect(code).toContain(
      'GET /alarmtask/list answered HTTP 404 with a body the document does not describe',
    );
    expect(code).toContain('/code must be equal to one of the allowed values');
    expect(unknown).toContain('GET /nowhere (no such operation) answered HTTP 200');
    expect(notFound).toBeUndefined();
  });

  it('makes the tests fetch through the check: a drifting answer fails the call', async () => {
    // Arrange: a fetch whose answer has a field the document does not describe.
    const drifting = checkingFetch(
      async () =>
        new Response(JSON.stringify({ code: 0, msg: 'ok', data: { version: '1', extra: true } }), {
          status: 200,
          headers: { 'content-type': 'application/json' },
        }),
    );
    // Act / Assert
    await expect(drifting(`${baseUrl()}/health`)).rejects.toThrow(/OpenAPI document and answer differ/);
    // The tests' fetch is the checking one (test/support/worker-env.ts).
    expect((globalThis.fetch as { checksAnswers?: boolean }).checksAnswers).toBe(true);
  });
});
