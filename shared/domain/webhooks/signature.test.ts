import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { signWebhook, standardWebhookSecret, verifyWebhookSignature } from './signature.ts';

describe('Standard Webhooks signature (behavior 11)', () => {
  const secret = 'c0ffee0123456789abcdef0123456789abcdef01';
  const body = '{"event":"PING","type":"ping","data":{},"extra":{}}';

  it('is v1,base64(hmac_sha256(secret, id.timestamp.body))', () => {
    const expected = createHmac('sha256', Buffer.from(secret, 'utf8'))
      .update(`evt_1.1700000000.${body}`)
      .digest('base64');
    expect(signWebhook(secret, 'evt_1', 1700000000, body)).toBe(`v1,${expected}`);
  });

  it('verifies its own signatures and refuses tampered ones', () => {
    const sig = signWebhook(secret, 'evt_1', 1700000000, body);
    expect(verifyWebhookSignature(secret, 'evt_1', '1700000000', body, sig)).toBe(true);
    expect(verifyWebhookSignature(secret, 'evt_1', '1700000000', body, `v1,bogus ${sig}`)).toBe(true);
    expect(verifyWebhookSignature(secret, 'evt_2', '1700000000', body, sig)).toBe(false);
    expect(verifyWebhookSignature(secret, 'evt_1', '1700000001', body, sig)).toBe(false);
    expect(verifyWebhookSignature(secret, 'evt_1', '1700000000', `${body} `, sig)).toBe(false);
    expect(verifyWebhookSignature('other', 'evt_1', '1700000000', body, sig)).toBe(false);
  });
});

describe('verification with the Standard Webhooks library (behavior 11)', () => {
  const secret = 'c0ffee0123456789abcdef0123456789abcdef01';
  const body = '{"event":"ALARM","type":"compress_disable","data":{"n":12345678901234567890},"extra":{}}';
  const now = Math.floor(Date.now() / 1000);
  const headers = (b: string) => ({
    'webhook-id': 'evt_1',
    'webhook-timestamp': String(now),
    'webhook-signature': signWebhook(secret, 'evt_1', now, b),
  });

  it('accepts our signature with the whsec_ form of the task secret', () => {
    expect(standardWebhookSecret(secret)).toBe(`whsec_${Buffer.from(secret).toString('base64')}`);
    expect(() => new Webhook(standardWebhookSecret(secret)).verify(body, headers(body))).not.toThrow();
  });

  it('refuses a tampered body and another secret', () => {
    const h = headers(body);
    expect(() => new Webhook(standardWebhookSecret(secret)).verify(`${body} `, h)).toThrow();
    expect(() => new Webhook(standardWebhookSecret('another-secret')).verify(body, h)).toThrow();
  });
});
