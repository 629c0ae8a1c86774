import { beforeAll, describe, expect, it } from 'vitest';
import { resetConfig } from '../../config/env.ts';
import { isSealed } from '../auth/seal.ts';
import type { TaskConfig } from '../tasks/model.ts';
import { openRobot, openTaskRobots, sealReceiverRobots, sealRobot, sealTaskRobots } from './robots.ts';

beforeAll(() => {
  process.env.TABLE_NAME = 'unit';
  process.env.SEAL_KEY = Buffer.alloc(32, 7).toString('base64');
  resetConfig();
});

const URL_ROBOT = { webhook: 'https://oapi.dingtalk.com/robot/send?access_token=aaa111', secret: 'SECurl' };
const TOKEN_ROBOT = { webhook: 'b'.repeat(64), secret: 'SECtoken' };
const BARE_ROBOT = { webhook: 'c'.repeat(64) };

/** A configuration with robots in every place a task keeps them (and a disabled module as sent). */
function config(): Pick<TaskConfig, 'receiver' | 'workflow' | 'upgrade' | 'name'> {
  return {
    name: 'robots',
    receiver: {
      channels: { dinggroup: [URL_ROBOT], yachgroup: [TOKEN_ROBOT], email: [1] },
      dispatch: [{ conditions: [], receiver: { channels: { dinggroup: [BARE_ROBOT] } } }],
    },
    workflow: {
      enable: true,
      reminds: [
        {
          mode: 'once',
          status: 0,
          interval: 5,
          reuse_receiver: 0,
          receiver: { channels: { yachgroup: [URL_ROBOT] } },
        },
      ],
    },
    // Disabled: stored as it was sent, odd shapes included.
    upgrade: {
      enable: false,
      strategies: [
        { receiver: { channels: { dinggroup: [TOKEN_ROBOT, 'junk', { webhook: 5 }] } } },
        'junk',
      ] as never,
    },
  };
}

/** Every string of a value, at any depth. */
function strings(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) return v.flatMap(strings);
  if (v && typeof v === 'object') return Object.values(v).flatMap(strings);
  return [];
}

describe('robot seals', () => {
  it('seals every robot webhook and secret of a configuration and nothing else', () => {
    // Act
    const sealed = sealTaskRobots(config());
    // Assert: no robot credential is left in plain, anywhere.
    const text = JSON.stringify(sealed);
    for (const plain of ['aaa111', 'SECurl', 'b'.repeat(64), 'SECtoken', 'c'.repeat(64)])
      expect(text).not.toContain(plain);
    expect(isSealed(sealed.receiver.channels?.dinggroup?.[0].webhook ?? '')).toBe(true);
    expect(isSealed(sealed.workflow.reminds?.[0].receiver?.channels?.yachgroup?.[0].secret ?? '')).toBe(true);
    expect(sealed.receiver.channels?.email).toEqual([1]);
    expect(sealed.name).toBe('robots');
    // The odd entries of the disabled module are kept as they are.
    expect((sealed.upgrade.strategies as unknown[])[1]).toBe('junk');
    expect(sealed.upgrade.strategies?.[0].receiver?.channels?.dinggroup?.slice(1)).toEqual([
      'junk',
      { webhook: 5 },
    ]);
  });

  it('opens what it sealed, and is the same twice (sealed values are kept, the seal is stable)', () => {
    // Act
    const once = sealTaskRobots(config());
    const twice = sealTaskRobots(once);
    // Assert
    expect(twice).toEqual(once);
    expect(sealTaskRobots(config())).toEqual(once);
    expect(openTaskRobots(once)).toEqual(config());
  });

  it('reads a configuration written in plain before robots were sealed as it is', () => {
    expect(openTaskRobots(config())).toEqual(config());
    expect(openRobot(BARE_ROBOT)).toEqual(BARE_ROBOT);
  });

  it('keeps an empty secret empty (shown as no secret), and a robot without one without one', () => {
    expect(sealRobot({ webhook: 'w', secret: '' })).toEqual({
      webhook: expect.stringMatching(/^v1:/),
      secret: '',
    });
    expect(Object.keys(sealRobot(BARE_ROBOT))).toEqual(['webhook']);
  });

  it('seals a receiver on its own (an override, an alarm group) and leaves other shapes alone', () => {
    const sealed = sealReceiverRobots({ channels: { dinggroup: [TOKEN_ROBOT] }, alarmgroup: [2] });
    expect(strings(sealed)).not.toContain(TOKEN_ROBOT.secret);
    expect(sealed.alarmgroup).toEqual([2]);
    expect(sealReceiverRobots(undefined)).toBeUndefined();
    expect(sealReceiverRobots({ channels: [] })).toEqual({ channels: [] });
  });
});
