import { describe, expect, it } from 'vitest';
import { checkWebhookUrl, isBlockedAddress } from './url-guard.ts';

describe('isBlockedAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '10.0.0.1',
    '10.255.255.255',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.10',
    '169.254.169.254',
    '100.64.0.1',
    '100.127.255.255',
    '0.0.0.0',
    '0.1.2.3',
    '224.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    '0:0:0:0:0:0:0:1',
    'fe80::1',
    'fe80::1%eth0',
    'febf::1',
    'fc00::1',
    'fd00:ec2::254',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '::ffff:169.254.169.254',
    '::ffff:192.168.0.1',
    '64:ff9b::a00:1',
    '[::1]',
    'not-an-ip',
  ])('refuses %s', (ip) => {
    expect(isBlockedAddress(ip)).toBe(true);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '172.15.255.255',
    '172.32.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '169.253.0.1',
    '192.169.0.1',
    '11.0.0.1',
    '2606:4700:4700::1111',
    '2001:4860:4860::8888',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2a00:1450::1',
  ])('allows %s', (ip) => {
    expect(isBlockedAddress(ip)).toBe(false);
  });
});

describe('checkWebhookUrl', () => {
  const stub = (addresses: string[]) => ({ lookup: async () => addresses.map((address) => ({ address })) });

  it('allows anything http(s) when the guard is off', async () => {
    const r = await checkWebhookUrl('http://127.0.0.1:9/x', false, stub([]));
    expect(r.ok).toBe(true);
  });

  it('refuses other schemes and malformed URLs even when the guard is off', async () => {
    expect((await checkWebhookUrl('file:///etc/passwd', false, stub([]))).ok).toBe(false);
    expect((await checkWebhookUrl('not a url', false, stub([]))).ok).toBe(false);
  });

  it('refuses private IP literals without resolving them', async () => {
    const lookup = async () => {
      throw new Error('must not resolve');
    };
    const r = await checkWebhookUrl('http://[::ffff:169.254.169.254]/latest', true, { lookup });
    expect(r).toEqual({ ok: false, reason: 'address ::ffff:a9fe:a9fe is not public' });
    expect((await checkWebhookUrl('http://10.1.2.3/', true, { lookup })).ok).toBe(false);
  });

  it('refuses a name when any of its addresses is private', async () => {
    const r = await checkWebhookUrl(
      'https://hooks.example.com/a?token=x',
      true,
      stub(['93.184.216.34', '10.0.0.5']),
    );
    expect(r).toEqual({ ok: false, reason: 'hooks.example.com resolves to 10.0.0.5, which is not public' });
  });

  it('allows a name that resolves to public addresses only', async () => {
    const r = await checkWebhookUrl(
      'https://hooks.example.com/a',
      true,
      stub(['93.184.216.34', '2606:2800:220:1::1']),
    );
    expect(r.ok).toBe(true);
  });

  it('lets a name that does not resolve through (the attempt fails and is retried)', async () => {
    const lookup = async () => {
      throw Object.assign(new Error('nope'), { code: 'ENOTFOUND' });
    };
    expect((await checkWebhookUrl('https://nowhere.invalid/', true, { lookup })).ok).toBe(true);
  });
});
