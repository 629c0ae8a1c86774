import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OPENAPI_FILE } from '../../scripts/openapi/routes.ts';
import { escapeHtml, exampleRequest, markdown, renderReference } from './reference.ts';

type Json = Record<string, unknown>;

const HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>';

/** A small document whose every text is hostile. */
function hostileDoc(): Json {
  return {
    openapi: '3.1.0',
    info: {
      title: HOSTILE,
      version: '"1"',
      description: `intro ${HOSTILE}\n\n| a | b |\n|---|---|\n| ${HOSTILE} | \`x\` |`,
    },
    tags: [{ name: HOSTILE, description: HOSTILE }],
    paths: {
      '/evil/<b>': {
        put: {
          operationId: `op"><script>`,
          summary: HOSTILE,
          description: `does \`${HOSTILE}\``,
          tags: [HOSTILE],
          'x-tocsin-auth': 'app',
          parameters: [
            {
              name: HOSTILE,
              in: 'query',
              required: true,
              schema: { type: 'string', pattern: HOSTILE },
              example: HOSTILE,
            },
          ],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: [HOSTILE],
                  properties: {
                    [HOSTILE]: {
                      type: 'string',
                      description: HOSTILE,
                      'x-message': HOSTILE,
                      enum: [HOSTILE],
                    },
                  },
                },
                example: { [HOSTILE]: "it's <script>" },
              },
            },
          },
          responses: { '200': { description: HOSTILE } },
        },
      },
    },
    'x-auth-kinds': { app: HOSTILE },
  };
}

describe('the reference page', () => {
  it('escapes every text of the document: no markup comes from it', () => {
    // Arrange
    const doc = hostileDoc();
    // Act
    const html = renderReference(doc, 'https://api.example.com');
    // Assert
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/<img/i);
    expect(html).toContain('id="op&quot;&gt;&lt;script&gt;"');
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    expect(html).toContain('/evil/&lt;b&gt;');
  });

  it('renders the generated document: every path, grouped by tag, with fields, auth, errors and examples', () => {
    // Arrange
    const doc = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as Json;
    // Act
    const html = renderReference(doc, 'https://api.example.com');
    // Assert
    expect(html.startsWith('<!doctype html>')).toBe(true);
    for (const path of Object.keys(doc.paths as Json))
      expect(html).toContain(`<code>${escapeHtml(path)}</code>`);
    for (const tag of doc.tags as Json[]) expect(html).toContain(`>${escapeHtml(tag.name)}</h2>`);
    expect(html).not.toMatch(/<script|<link|src=|@import/i);
    // A body field with its type, requirement, constraints and message.
    expect(html).toMatch(
      /<code>time<\/code><\/td><td>integer<\/td><td>yes<\/td><td><code>≥ 1, ≤ 10080<\/code>/,
    );
    // Conditional fields say when they apply (an enabled module of a task).
    expect(html).toContain('when filter.enable = true');
    expect(html).toContain('Application authentication');
    expect(html).toContain('<td>4010</td>');
    expect(html).toContain(escapeHtml("curl -X PUT 'https://api.example.com/alarmtask/pause'"));
    expect(html.length).toBeLessThan(400_000);
  });

  it('writes example requests that a shell takes literally', () => {
    // Arrange
    const op = {
      'x-tocsin-auth': 'app+task',
      parameters: [{ name: 'q', in: 'query', example: "a'b" }],
      requestBody: { content: { 'application/json': { example: { name: "it's" } } } },
    };
    // Act
    const curl = exampleRequest({}, 'PUT', '/x', op, 'https://h');
    // Assert
    expect(curl).toBe(
      [
        "curl -X PUT 'https://h/x?q=a%27b'",
        "  -H 'X-App-Id: <app id>'",
        "  -H 'X-App-Timestamp: <unix seconds>'",
        "  -H 'X-App-Sign: <signature>'",
        "  -H 'Content-Type: application/json'",
        `  --data '{"name":"it'\\''s"}'`,
      ].join(' \\\n'),
    );
  });

  it('renders the markdown of descriptions: paragraphs, lists, tables, code', () => {
    // Act
    const html = markdown('one `a<b`\n\n- x\n- **y**\n\n| h |\n|---|\n| c |');
    // Assert
    expect(html).toBe(
      '<p>one <code>a&lt;b</code></p>\n<ul><li>x</li><li><strong>y</strong></li></ul>\n<table><thead><tr><th>h</th></tr></thead><tbody><tr><td>c</td></tr></tbody></table>',
    );
  });
});
