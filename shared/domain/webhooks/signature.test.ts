import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { signWebhook, standardWebhookSecret, verifyWebhookSignature } from './signature.ts';

describe('Standard Webhooks signature (API guide §12.2)', () => {
  const secret = 'c0ffee0123456789abcdef0123456789abcdef01';
  const body = '{"event":"PING","type":"ping","data":{},"extra":{}}';

  it('is v1,base64(hmac_sha256(secret, id.timestamp.body))', () => {
    // Arrange
    const expected = createHmac('sha256', Buffer.from(secret, 'utf8'))
      .update(`evt_1.1700000000.${body}`)
      .digest('base64');
    // Act + Assert
    expect(signWebhook(secret, 'evt_1', 1700000000, body)).toBe(`v1,${expected}`);
  });

  it('verifies its own signatures and refuses tampered ones', () => {
    // Arrange
    const sig = signWebhook(secret, 'evt_1', 1700000000, body);
    // Act + Assert
    expect(verifyWebhookSignature(secret, 'evt_1', '1700000000', body, sig)).toBe(true);
    expect(verifyWebhookSignature(secret, 'evt_1', '1700000000', body, `v1,bogus ${sig}`)).toBe(true);
    expect(verifyWebhookSignature(secret, 'evt_2', '1700000000', body, sig)).toBe(false);
    expect(verifyWebhookSignature(secret, 'evt_1', '1700000001', body, sig)).toBe(false);
    expect(verifyWebhookSignature(secret, 'evt_1', '1700000000', `${body} `, sig)).toBe(false);
    expect(verifyWebhookSignature('other', 'evt_1', '1700000000', body, sig)).toBe(false);
  });
});

describe('verification with the Standard Webhooks library (API guide §12.2)', () => {
  const body = '{"event":"ALARM","type":"compress_disable","data":{"ctn":{"disk":"97%","n":1}},"extra":{}}';
  const signed = (secret: string, b = body, id = 'evt_1', at = Math.floor(Date.now() / 1000)) => ({
    'webhook-id': id,
    'webhook-timestamp': String(at),
    'webhook-signature': signWebhook(secret, id, at, b),
  });

  it.each([
    ['a hex task secret (what the service issues)', 'c0ffee0123456789abcdef0123456789abcdef01'],
    ['a secret beyond ASCII (its UTF-8 bytes)', 'sécrèt-ключ-秘密'],
  ])('is whsec_ + base64 of the UTF-8 bytes, and the library accepts our signature: %s', (_n, secret) => {
    // Arrange
    const headers = signed(secret);
    // Act
    const whsec = standardWebhookSecret(secret);
    const event = new Webhook(whsec).verify(body, headers);
    // Assert
    expect(whsec).toBe(`whsec_${Buffer.from(secret, 'utf8').toString('base64')}`);
    expect(event).toEqual(JSON.parse(body));
  });

  it.each<[string, (h: Record<string, string>) => [string, Record<string, string>]]>([
    ['a tampered body', (h) => [body.replace('97%', '12%'), h]],
    ['another webhook-id', (h) => [body, { ...h, 'webhook-id': 'evt_2' }]],
    [
      'another timestamp',
      (h) => [body, { ...h, 'webhook-timestamp': String(Number(h['webhook-timestamp']) + 1) }],
    ],
    ['a signature made with another secret', () => [body, signed('another-secret')]],
  ])('the library refuses %s', (_n, tamper) => {
    // Arrange
    const secret = 'c0ffee0123456789abcdef0123456789abcdef01';
    const [b, h] = tamper(signed(secret));
    // Act
    const verify = () => new Webhook(standardWebhookSecret(secret)).verify(b, h);
    // Assert
    expect(verify).toThrow();
  });
});
