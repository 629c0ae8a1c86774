import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Every relative link of the README and of the pages under docs/ resolves: the file (or folder)
 * exists inside the repository, and a `#fragment` names a heading of the page it points to (GitHub's
 * heading anchors). External links (http, https, mailto) are not followed.
 */
const root = resolve(import.meta.dirname, '..');
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The page's text without fenced code blocks and inline code spans (links there are not links). */
function prose(text: string): string[] {
  const lines: string[] = [];
  let fence: string | undefined;
  for (const line of text.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence) {
      if (marker && marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
      lines.push('');
      continue;
    }
    if (marker) {
      fence = marker;
      lines.push('');
      continue;
    }
    lines.push(line.replace(/(`+)(?:(?!\1).)+\1/g, ''));
  }
  return lines;
}

/** The link targets of a page: inline links and images `[text](target "title")`. */
function linksOf(text: string): string[] {
  const out: string[] = [];
  for (const line of prose(text)) {
    for (const m of line.matchAll(/\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)/g)) {
      out.push(m[1].replace(/^<|>$/g, ''));
    }
  }
  return out;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a page offers (a repeated heading gets `-1`, `-2`, ...). */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  const lines = text.split('\n');
  let fence: string | undefined;
  for (const line of lines) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence) {
      if (marker && marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
      continue;
    }
    if (marker) {
      fence = marker;
      continue;
    }
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const base = slug(h[1].replace(/`/g, ''));
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

const EXTERNAL = /^[a-z][a-z0-9+.-]*:/i;

describe.each(pages)('%s', (page) => {
  const text = readFileSync(join(root, page), 'utf8');
  const links = linksOf(text).filter((l) => !EXTERNAL.test(l));

  it('has only relative links that resolve inside the repository', () => {
    // Arrange
    const broken: string[] = [];
    // Act
    for (const link of links) {
      const [path, fragment] = link.split('#', 2) as [string, string | undefined];
      const target = path === '' ? join(root, page) : resolve(root, dirname(page), decodeURI(path));
      const inside = !relative(root, target).startsWith('..');
      if (!inside || !existsSync(target)) {
        broken.push(`${link}: ${inside ? 'no such file' : 'outside the repository'}`);
        continue;
      }
      if (fragment !== undefined && target.endsWith('.md')) {
        const anchors = anchorsOf(readFileSync(target, 'utf8'));
        if (!anchors.has(decodeURIComponent(fragment))) broken.push(`${link}: no such heading`);
      }
    }
    // Assert
    expect(broken).toEqual([]);
  });
});

describe('the link checker', () => {
  it('reads links outside code and makes GitHub anchors', () => {
    // Arrange
    const text = [
      'See [a](docs/a.md#x) and `[b](no.md)`.',
      '```',
      '[c](nope.md)',
      '```',
      '## 3.1 The `PING` event (v2)',
      '## Repeat',
      '## Repeat',
    ].join('\n');
    // Act
    const links = linksOf(text);
    const anchors = anchorsOf(text);
    // Assert
    expect(links).toEqual(['docs/a.md#x']);
    expect([...anchors]).toEqual(['31-the-ping-event-v2', 'repeat', 'repeat-1']);
  });
});
