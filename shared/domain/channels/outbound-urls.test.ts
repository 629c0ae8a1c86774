import { describe, expect, it } from 'vitest';
import {
  alarmGroupOutboundUrlErrors,
  isRobotUrl,
  namedUrls,
  outboundUrlErrors,
  taskOutboundUrlErrors,
} from './outbound-urls.ts';

const LOOPBACK_ROBOT = 'http://127.0.0.1:9/robot/send?access_token=tok0123456789secret';
const MAPPED_WEBHOOK = 'http://[::ffff:7f00:1]/';
const cond = [{ rule: [{ field: 'ctn.host', operator: 'eq', threshold: 'a' }] }];

/** A lookup that must not be asked (IP literals and robot tokens need no DNS). */
const noLookup = async (): Promise<{ address: string }[]> => {
  throw new Error('must not resolve');
};
const on = { blockPrivate: true, lookup: noLookup };

describe('isRobotUrl', () => {
  it.each([
    ['https://oapi.dingtalk.com/robot/send?access_token=x', true],
    ['HTTP://127.0.0.1/x', true],
    ['0123456789abcdef', false],
    ['ftp://x/y', false],
    [' http://x/', false],
  ])('%s -> %s', (webhook, expected) => {
    // Act / Assert
    expect(isRobotUrl(webhook)).toBe(expected);
  });
});

describe('namedUrls', () => {
  it('lists the webhook (string or {url}), robots given as URLs and dispatch receivers, not robot tokens', () => {
    // Arrange
    const receiver = {
      channels: {
        webhook: { url: 'https://hooks.example/a' },
        email: [1],
        dinggroup: [
          { webhook: 'token-only', secret: 's' },
          { webhook: 'https://r.example/send?access_token=t' },
        ],
        yachgroup: [{ webhook: 'http://y.example/x' }],
      },
      dispatch: [{ conditions: cond, receiver: { channels: { webhook: 'https://d.example/' } } }],
    };
    // Act
    const named = namedUrls(receiver, 'receiver');
    // Assert
    expect(named).toEqual([
      { field: 'receiver.channels.webhook', url: 'https://hooks.example/a' },
      { field: 'receiver.channels.dinggroup.1.webhook', url: 'https://r.example/send?access_token=t' },
      { field: 'receiver.channels.yachgroup.0.webhook', url: 'http://y.example/x' },
      { field: 'receiver.dispatch.0.receiver.channels.webhook', url: 'https://d.example/' },
    ]);
  });

  it('reads anything without failing (disabled modules are stored as sent)', () => {
    // Act / Assert
    expect(namedUrls(undefined, 'r')).toEqual([]);
    expect(namedUrls({ channels: [], dispatch: 'x' }, 'r')).toEqual([]);
    expect(namedUrls({ channels: { dinggroup: [null, 3, { webhook: 7 }] } }, 'r')).toEqual([]);
  });
});

describe('outboundUrlErrors (the report override)', () => {
  it('names each refused field and the kind of address, never the token', async () => {
    // Arrange
    const receiver = {
      channels: {
        webhook: MAPPED_WEBHOOK,
        dinggroup: [{ webhook: 'a-token' }, { webhook: LOOPBACK_ROBOT, secret: 'SECxyz' }],
        yachgroup: [{ webhook: 'http://169.254.169.254/latest/meta-data' }],
      },
    };
    // Act
    const errors = await outboundUrlErrors(receiver, 'receiver', on);
    // Assert
    expect(errors).toEqual([
      {
        field: 'receiver.channels.webhook',
        message: 'must not point to a private or reserved address (::ffff:7f00:1, loopback)',
      },
      {
        field: 'receiver.channels.dinggroup.1.webhook',
        message: 'must not point to a private or reserved address (127.0.0.1, loopback)',
      },
      {
        field: 'receiver.channels.yachgroup.0.webhook',
        message: 'must not point to a private or reserved address (169.254.169.254, metadata)',
      },
    ]);
    expect(JSON.stringify(errors)).not.toMatch(/tok0123|SECxyz|robot\/send|meta-data/);
  });

  it('refuses a name that resolves to a blocked address, and resolves each name once', async () => {
    // Arrange
    const asked: string[] = [];
    const lookup = async (host: string) => {
      asked.push(host);
      return host === 'inside.example'
        ? [{ address: '93.184.216.34' }, { address: '10.0.0.7' }]
        : [{ address: '93.184.216.34' }];
    };
    const receiver = {
      channels: {
        webhook: 'https://inside.example/hook',
        dinggroup: [{ webhook: 'https://inside.example/robot' }, { webhook: 'https://public.example/robot' }],
      },
    };
    // Act
    const errors = await outboundUrlErrors(receiver, 'receiver', { blockPrivate: true, lookup });
    // Assert
    expect(errors).toEqual([
      {
        field: 'receiver.channels.webhook',
        message: 'must not point to a private or reserved address (resolves to 10.0.0.7, private)',
      },
      {
        field: 'receiver.channels.dinggroup.0.webhook',
        message: 'must not point to a private or reserved address (resolves to 10.0.0.7, private)',
      },
    ]);
    expect(asked.sort()).toEqual(['inside.example', 'public.example']);
  });

  it('accepts a name that does not resolve (as at send time), and public addresses', async () => {
    // Arrange
    const lookup = async (): Promise<{ address: string }[]> => {
      throw Object.assign(new Error('nope'), { code: 'ENOTFOUND' });
    };
    const receiver = {
      channels: { webhook: 'https://nowhere.invalid/', dinggroup: [{ webhook: 'https://8.8.8.8/x' }] },
    };
    // Act / Assert
    expect(await outboundUrlErrors(receiver, 'receiver', { blockPrivate: true, lookup })).toEqual([]);
  });

  it('reads a report override as sent (webhook as a list of URLs, the Go SDK form)', async () => {
    // Act
    const errors = await outboundUrlErrors(
      { channels: { webhook: ['https://8.8.8.8/a', MAPPED_WEBHOOK] } },
      'receiver',
      on,
    );
    // Assert
    expect(errors.map((e) => e.field)).toEqual(['receiver.channels.webhook.1']);
  });

  it('refuses a URL the guard cannot read', async () => {
    // Act
    const errors = await outboundUrlErrors({ channels: { webhook: 'http://[::1' } }, 'receiver', on);
    // Assert
    expect(errors).toEqual([{ field: 'receiver.channels.webhook', message: 'must be an http(s) URL' }]);
  });

  it('checks nothing when the guard is off', async () => {
    // Act
    const errors = await outboundUrlErrors({ channels: { webhook: MAPPED_WEBHOOK } }, 'receiver', {
      blockPrivate: false,
      lookup: noLookup,
    });
    // Assert
    expect(errors).toEqual([]);
  });
});

describe('taskOutboundUrlErrors', () => {
  it('looks in disabled modules too (they can be enabled by a later partial update)', async () => {
    // Arrange
    const config = {
      receiver: { channels: { email: [1] } },
      upgrade: {
        enable: false,
        strategies: [{ receiver: { channels: { dinggroup: [{ webhook: LOOPBACK_ROBOT }] } } }],
      },
    };
    // Act
    const errors = await taskOutboundUrlErrors(config, on);
    // Assert
    expect(errors.map((e) => e.field)).toEqual([
      'upgrade.strategies.0.receiver.channels.dinggroup.0.webhook',
    ]);
  });
});

describe('alarmGroupOutboundUrlErrors', () => {
  it('names the alarm group entry and the field', async () => {
    // Arrange
    const groups = [
      { id: 1, name: 'ok', receiver: { channels: { dinggroup: [{ webhook: 'token' }] } } },
      {
        id: 2,
        name: 'bad',
        receiver: { channels: { email: [1], yachgroup: [{ webhook: LOOPBACK_ROBOT }] } },
      },
    ];
    // Act
    const errors = await alarmGroupOutboundUrlErrors(groups, on);
    // Assert
    expect(errors).toEqual([
      {
        field: 'alarm_groups.1.receiver.channels.yachgroup.0.webhook',
        message: 'must not point to a private or reserved address (127.0.0.1, loopback)',
      },
    ]);
  });
});
