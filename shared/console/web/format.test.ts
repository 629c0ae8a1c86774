import { beforeAll, describe, expect, it, vi } from 'vitest';

// format.ts reads the page's clock through api.ts, which reads the page's location when loaded.
let format: typeof import('./format.ts');
beforeAll(async () => {
  vi.stubGlobal('location', { pathname: '/console', origin: 'http://127.0.0.1' });
  vi.stubGlobal('document', { querySelector: () => null });
  format = await import('./format.ts');
});

describe('summary: an alarm content in a line', () => {
  it.each([
    [
      'the naming keys, in order',
      '{"msg":"disk full","host":"web-1","alertname":"DiskFull"}',
      'alertname DiskFull · host web-1',
    ],
    [
      "an Alertmanager alert's labels",
      { labels: { alertname: 'HighLoad', instance: 'db-1:9100', job: 'node' }, annotations: {} },
      'alertname HighLoad · instance db-1:9100',
    ],
    ['else the first keys', { disk: '97%', mount: '/var' }, 'disk 97% · mount /var'],
    ['text that is no JSON', 'disk full on web-1', 'disk full on web-1'],
    ['an empty object', '{}', '{}'],
  ])('%s', (_, ctn, text) => {
    expect(format.summary(ctn)).toBe(text);
  });

  it('cuts a long value at a word and drops whole pairs past the limit, never mid-word', () => {
    const ctn = {
      message: 'the replication of the primary database fell behind by more than forty five seconds',
      a: 'x',
      b: 'y',
      c: 'z',
    };
    const text = format.summary(ctn, 60);
    expect(text).toBe('message the replication of the primary database… · a x · …');
    expect(format.summary(ctn, 50)).toBe('message the replication of the primary database… · …');
    expect(format.cut('abcdefghij', 5)).toBe('abcd…');
  });
});
