import { describe, expect, it } from 'vitest';
import { phoneChannelUids, referencedGroupIds } from './references.ts';
import { parseCreateBody, receiverHasTargets } from './rules.ts';
import { base, cond } from './test-bodies.ts';

describe('directory references', () => {
  const { config } = parseCreateBody(
    base({
      receiver: {
        alarmgroup: [2],
        channels: { sms: [3], phone: [4], email: [6] },
        dispatch: [
          { conditions: [cond('eq', 'a')], receiver: { alarmgroup: [1], channels: { phone: [5] } } },
        ],
      },
      workflow: {
        enable: true,
        reminds: [
          { mode: 'once', status: 0, interval: 5, reuse_receiver: 0, receiver: { channels: { sms: [7] } } },
        ],
      },
      upgrade: {
        enable: false,
        strategies: [{ reuse_receiver: 0, receiver: { alarmgroup: [99], channels: { sms: [8] } } }],
      },
    }),
  );
  const groups = [
    { id: 1, receiver: { channels: { email: [1] } } },
    { id: 2, receiver: { channels: { sms: [6, 3] } } },
  ];

  it('collects alarm groups of every receiver in use (disabled modules excluded)', () => {
    expect(referencedGroupIds(config)).toEqual([2, 1]);
  });

  it('collects phone and sms users, alarm-group members included, de-duplicated', () => {
    expect(phoneChannelUids(config, groups)).toEqual([4, 3, 6, 5, 7]);
  });

  it('tells whether a receiver names anyone', () => {
    expect(receiverHasTargets({ channels: { webhook: { url: 'http://x' } } })).toBe(true);
    expect(receiverHasTargets({ channels: { dinggroup: [] }, alarmgroup: [] })).toBe(false);
    expect(receiverHasTargets('nope')).toBe(false);
  });
});
