import { describe, expect, it } from 'vitest';
import { routes } from '../../infra/definitions.ts';
import { escapeHtml } from '../../shared/http/reference.ts';
import { baseUrl } from '../support/client.ts';

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
