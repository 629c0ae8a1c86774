import { describe, expect, it } from 'vitest';
import { hmacSign, md5Sign } from '../../shared/domain/auth/signature.ts';
import { api, baseUrl, call, serviceNow } from '../support/client.ts';
import { OTHER_APP, TEST_APP } from '../support/seed.ts';

describe('health and routing', () => {
  it('answers /health without auth', async () => {
    const res = await call('GET', '/health', { app: null });
    expect(res).toMatchObject({ status: 200, code: 0, msg: 'ok', data: { version: expect.any(String) } });
  });

  it('answers unknown routes with a 404 envelope', async () => {
    const res = await api.get('/nope');
    expect(res).toMatchObject({ status: 404, code: 404, msg: 'route [GET /nope] not found', data: {} });
  });

  it('refuses a body over 256 KiB with 413 before touching it', async () => {
    const res = await api.put('/user/updatephone', { uid: 2, phone: '1'.repeat(300 * 1024) });
    expect(res).toMatchObject({ status: 413, code: 413, msg: 'request body too large' });
  });

  it('refuses a body that is not JSON with 400', async () => {
    const res = await call('PUT', '/user/updatephone', {
      body: '{nope',
      headers: { 'content-type': 'application/json' },
    });
    expect(res).toMatchObject({ status: 400, code: 400, msg: 'request body is not valid JSON' });
  });
});

describe('application authentication (API guide §3.1)', () => {
  it('accepts HMAC-SHA256 and legacy MD5 signatures', async () => {
    const hmac = await api.get('/department/simple');
    const md5 = await api.get('/department/simple', { app: { ...TEST_APP, scheme: 'md5' } });
    expect(hmac.code).toBe(0);
    expect(md5.code).toBe(0);
  });

  it('checks the app first, then the skew, then the signature', async () => {
    const now = await serviceNow();
    const unknown = await api.get('/department/simple', { app: { id: 12345, token: TEST_APP.token } });
    const stale = await api.get('/department/simple', {
      app: { ...TEST_APP, timestamp: now - 301, sign: 'x' },
    });
    const bad = await api.get('/department/simple', {
      app: { ...TEST_APP, sign: md5Sign('wrong', TEST_APP.id, now) },
    });
    const wrongApp = await api.get('/department/simple', {
      app: { id: OTHER_APP.id, token: TEST_APP.token },
    });
    expect(unknown).toMatchObject({ status: 401, code: 401, msg: 'app [12345] not found' });
    expect(stale).toMatchObject({ status: 401, code: 401, msg: 'signature was expired' });
    expect(bad).toMatchObject({ status: 401, code: 401, msg: 'signature invalid' });
    expect(wrongApp).toMatchObject({ status: 401, code: 401, msg: 'signature invalid' });
  });

  it('refuses a request with no app headers', async () => {
    const res = await fetch(`${baseUrl()}/department/simple`);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { code: number }).code).toBe(401);
  });
});

describe('application timestamp format', () => {
  it('refuses a timestamp that is not plain digits, even when correctly signed', async () => {
    // Arrange: `1.7e9`-style and fractional forms of the current time, signed with the right token
    const now = await serviceNow();
    const forms = [`${now}.0`, (now / 1e9).toString().replace(/(\d)\.(\d+)/, '$1.$2e9')];
    for (const ts of forms) {
      const headers = {
        'x-app-id': String(TEST_APP.id),
        'x-app-timestamp': ts,
        'x-app-sign': hmacSign(TEST_APP.token, TEST_APP.id, ts),
      };
      // Act
      const res = await fetch(`${baseUrl()}/department/simple`, { headers });
      // Assert
      expect(res.status).toBe(401);
      expect(((await res.json()) as { msg: string }).msg).toBe('signature was expired');
    }
  });
});
