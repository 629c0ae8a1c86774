import { beforeAll, describe, expect, it } from 'vitest';
import { resetConfig } from '../../config/env.ts';
import { isSealed } from '../auth/seal.ts';
import { openRobot, sealRobot } from '../channels/robots.ts';
import { recipientsOf } from './receivers.ts';

beforeAll(() => {
  process.env.TABLE_NAME = 'unit';
  process.env.SEAL_KEY = Buffer.alloc(32, 7).toString('base64');
  resetConfig();
});

const robot = (webhook: string) => ({ webhook });
/** The robot sets with each robot opened (they come out sealed). */
const sets = (r: ReturnType<typeof recipientsOf>) =>
  r.robotSets.map((s) => [s.key, s.robots.map((x) => openRobot(x).webhook)]);

describe('robots shared by receiver sets (API guide §9.7)', () => {
  it("a robot that is an earlier set's first robot is left out of later sets", () => {
    const r = recipientsOf(
      [
        { set: 'd0', channels: { dinggroup: [robot('S')] } },
        { set: 'default', channels: { dinggroup: [robot('S'), robot('C')] } },
      ],
      [],
    );
    expect(sets(r)).toEqual([
      ['d0', ['S']],
      ['default', ['C']],
    ]);
  });

  it('a robot that was only a fallback earlier stays in a later set, so that chat hears of the alarm', () => {
    // Item A fails over from X to Y; the defaults name Y alone. If X succeeds, Y must still hear.
    const r = recipientsOf(
      [
        { set: 'd0', channels: { dinggroup: [robot('X'), robot('Y')] } },
        { set: 'default', channels: { dinggroup: [robot('Y')] } },
      ],
      [],
    );
    expect(sets(r)).toEqual([
      ['d0', ['X', 'Y']],
      ['default', ['Y']],
    ]);
  });

  it('a set whose robots were all earlier first robots sends nothing of its own', () => {
    const r = recipientsOf(
      [
        { set: 'd0', channels: { yachgroup: [robot('A')] } },
        { set: 'd1', channels: { yachgroup: [robot('B')] } },
        { set: 'default', channels: { yachgroup: [robot('A'), robot('B')] } },
      ],
      [],
    );
    expect(sets(r)).toEqual([
      ['d0', ['A']],
      ['d1', ['B']],
    ]);
  });

  it('seals every robot, and knows a robot sealed earlier and one kept in plain as the same robot', () => {
    const r = recipientsOf(
      [
        { set: 'd0', channels: { dinggroup: [sealRobot({ webhook: 'S', secret: 'SEC1' })] } },
        { set: 'default', channels: { dinggroup: [{ webhook: 'S', secret: 'SEC1' }, robot('C')] } },
      ],
      [],
    );
    expect(sets(r)).toEqual([
      ['d0', ['S']],
      ['default', ['C']],
    ]);
    const all = r.robotSets.flatMap((s) => s.robots);
    expect(all.every((x) => isSealed(x.webhook))).toBe(true);
    expect(openRobot(r.robotSets[0].robots[0])).toEqual({ webhook: 'S', secret: 'SEC1' });
  });
});
