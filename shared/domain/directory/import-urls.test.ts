import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resetConfig } from '../../config/env.ts';
import { ValidationError } from '../errors.ts';
import type { DirectoryItem } from './repository.ts';
import { importDirectory } from './service.ts';

/** Alarm groups' robot and webhook URLs go through the outbound guard at import (behaviour §4, §13). */
function recordingDeps() {
  const put: DirectoryItem[][] = [];
  return {
    put,
    deps: {
      put: async (items: DirectoryItem[]) => {
        put.push(items);
      },
      putApp: async () => undefined,
      setDeactivated: async () => undefined,
    },
  };
}

const group = (id: number, channels: Record<string, unknown>) => ({
  id,
  name: `g${id}`,
  receiver: { channels },
});

describe('importDirectory with BLOCK_PRIVATE_WEBHOOKS=1', () => {
  const saved = { ...process.env };
  beforeAll(() => {
    Object.assign(process.env, {
      TABLE_NAME: 'unit',
      SEAL_KEY: Buffer.alloc(32, 7).toString('base64'),
      BLOCK_PRIVATE_WEBHOOKS: '1',
    });
    resetConfig();
  });
  afterAll(() => {
    process.env = saved;
    resetConfig();
  });

  it('refuses an alarm group whose robot or webhook points to a private address, and writes nothing', async () => {
    // Arrange
    const { deps, put } = recordingDeps();
    const doc = {
      alarm_groups: [
        group(1, { dinggroup: [{ webhook: 'a-robot-token' }] }),
        group(2, { yachgroup: [{ webhook: 'http://127.0.0.1:9/robot/send?access_token=secret-token' }] }),
        group(3, { webhook: { url: 'http://[::ffff:a9fe:a9fe]/latest' } }),
      ],
    };
    // Act
    const err = await importDirectory(doc, deps).catch((e: unknown) => e);
    // Assert
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).errors).toEqual([
      {
        field: 'alarm_groups.1.receiver.channels.yachgroup.0.webhook',
        message: 'must not point to a private or reserved address (127.0.0.1, loopback)',
      },
      {
        field: 'alarm_groups.2.receiver.channels.webhook',
        message: 'must not point to a private or reserved address (::ffff:a9fe:a9fe, metadata)',
      },
    ]);
    expect(JSON.stringify((err as ValidationError).errors)).not.toContain('secret-token');
    expect(put).toEqual([]);
  });

  it('imports alarm groups whose robots are tokens or public URLs', async () => {
    // Arrange
    const { deps, put } = recordingDeps();
    const doc = {
      alarm_groups: [group(1, { dinggroup: [{ webhook: 'tok' }, { webhook: 'https://8.8.8.8/r' }] })],
    };
    // Act
    const summary = await importDirectory(doc, deps);
    // Assert
    expect(summary.alarm_groups).toBe(1);
    expect(put).toHaveLength(1);
  });
});
