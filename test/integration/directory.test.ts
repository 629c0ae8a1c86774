import { describe, expect, it } from 'vitest';
import { getUser } from '../../shared/domain/directory/repository.ts';
import { api } from '../support/client.ts';

describe('GET /department/simple', () => {
  it('lists every department with id, pinyin, name and remark only', async () => {
    const res = await api.get('/department/simple');
    expect(res.code).toBe(0);
    const byId = new Map(res.data.departments.map((d: { id: number }) => [d.id, d]));
    expect(byId.get(2)).toEqual({ id: 2, pinyin: 'rizhizhongxin', name: '日志中心', remark: 'logging' });
    expect(byId.get(1)).toEqual({ id: 1, pinyin: 'Infra', name: 'Infra', remark: '' });
  });
});

describe('GET /department/show', () => {
  it('returns the detail view with creator, updator and business unit', async () => {
    const res = await api.get('/department/show', { query: { id: 2 } });
    expect(res.code).toBe(0);
    const d = res.data.department;
    expect(d).toMatchObject({
      id: 2,
      bu_id: 2,
      name: '日志中心',
      pinyin: 'rizhizhongxin',
      remark: 'logging',
      created_by: 1,
      updated_by: 2,
      creator: {
        uid: 1,
        username: 'Ann Lee',
        user: 'annlee',
        email: 'annlee@example.com',
        department: 'Online School-Infra',
      },
      updator: {
        uid: 2,
        username: '张三',
        user: 'zhangsan',
        email: 'zhangsan@example.com',
        department: '基础架构-日志中心',
      },
      business_unit: { id: 2, name: '基础架构', remark: 'infrastructure', pinyin: 'jichujiagou' },
    });
    expect(typeof d.created_at).toBe('number');
    expect(typeof d.updated_at).toBe('number');
  });

  it('404s an unknown department and 422s a missing or non-numeric id', async () => {
    expect(await api.get('/department/show', { query: { id: 999 } })).toMatchObject({
      status: 404,
      code: 404,
      msg: 'department [999] not found',
    });
    expect(await api.get('/department/show')).toMatchObject({
      status: 422,
      code: 422,
      msg: 'id is required',
    });
    expect(await api.get('/department/show', { query: { id: 'abc' } })).toMatchObject({
      status: 422,
      msg: 'id must be an integer',
    });
  });

  it('422s ids beyond a safe integer (API guide §1.4) instead of looking them up', async () => {
    const huge = '1' + '0'.repeat(23);
    const msg = (f: string) => `${f} must be at most ${Number.MAX_SAFE_INTEGER}`;
    expect(await api.get('/department/show', { query: { id: huge } })).toMatchObject({
      status: 422,
      msg: msg('id'),
    });
    expect(await api.get('/user/profile', { query: { uid: huge } })).toMatchObject({
      status: 422,
      msg: msg('uid'),
    });
    expect(await api.put('/user/updatephone', { uid: 2 ** 60, phone: '13512345678' })).toMatchObject({
      status: 422,
      msg: msg('uid'),
    });
  });
});

describe('GET /user/profile', () => {
  it('returns the user and the permission object', async () => {
    const res = await api.get('/user/profile', { query: { uid: 3 } });
    expect(res.code).toBe(0);
    expect(res.data.user).toMatchObject({
      uid: 3,
      username: '吕布',
      pinyin: 'lvbu',
      user: 'lvbu',
      email: 'lvbu@example.com',
      department: '基础架构-日志中心',
      phone: '',
      wechatid: '',
      role: 0,
    });
    expect(res.data.permission).toEqual({ role: 0, read: expect.any(Array), write: expect.any(Array) });
  });

  it('gives super administrators empty lists', async () => {
    const res = await api.get('/user/profile', { query: { uid: 1 } });
    expect(res.data.permission).toEqual({ role: 9, read: [], write: [] });
  });

  it('404s an unknown user', async () => {
    expect(await api.get('/user/profile', { query: { uid: 4242 } })).toMatchObject({
      status: 404,
      msg: 'user [4242] not found',
    });
  });
});

describe('PUT /user/updatephone', () => {
  it('updates the phone and updated_at, and returns the user', async () => {
    // Arrange
    const before = await getUser(5);
    // Act
    const res = await api.put('/user/updatephone', { uid: 5, phone: '13512345678' });
    // Assert
    expect(res.code).toBe(0);
    expect(res.data.user).toMatchObject({ uid: 5, phone: '13512345678', username: 'Cy Noperm' });
    expect(res.data.user.updated_at).toBeGreaterThanOrEqual(before?.updated_at ?? 0);
    expect((await getUser(5))?.phone).toBe('13512345678');
  });

  it('refuses a phone that is not a mainland mobile number and changes nothing', async () => {
    const res = await api.put('/user/updatephone', { uid: 4, phone: '12345' });
    expect(res).toMatchObject({ status: 422, code: 422, msg: 'phone must be a mainland mobile number' });
    expect(res.data.errors).toEqual([{ field: 'phone', message: 'must be a mainland mobile number' }]);
    expect((await getUser(4))?.phone).toBe('13700000004');
  });

  it('refuses a uid sent as a string (JSON keeps its types)', async () => {
    const res = await api.put('/user/updatephone', { uid: '4', phone: '13512345678' });
    expect(res).toMatchObject({ status: 422, msg: 'uid must be an integer' });
  });

  it('404s an unknown uid', async () => {
    const res = await api.put('/user/updatephone', { uid: 777, phone: '13512345678' });
    expect(res).toMatchObject({ status: 404, msg: 'user [777] not found' });
  });

  it('refuses a body that is not JSON-typed', async () => {
    const res = await api.put('/user/updatephone', undefined, {
      body: 'uid=4&phone=13512345678',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res).toMatchObject({ status: 400, code: 400, msg: 'content type must be application/json' });
  });
});
