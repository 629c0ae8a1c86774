import { createHash } from 'node:crypto';
import type { Robot, RobotChannel } from '../../contracts/receivers.ts';
import { perContainer } from '../../container.ts';
import { blockRobot, leaseRobotSlots } from './repository.ts';

/**
 * Robot rate awareness (API guide §11.6). DingTalk lets one robot send 20 messages a minute and punishes
 * more with a 10-minute silence; Yach robots have a similar cap. Every container shares one counter
 * item per robot (`ROBOT#<id>` / `RATE`): the current minute and the messages sent in it, so all
 * senders together stay within the budget. A container does not write per message: it leases slots
 * of the minute (what it asked for so far this minute, doubling, up to a tenth of the budget) with
 * one conditional update and spends them from memory; slots left at the end of the minute are lost
 * (a container may send fewer than the budget, never more). A robot that answers with its rate-limit
 * code anyway (someone else uses it too) is blocked for `robotBlockSeconds` in the table, and the
 * container drops what it held: the next robot of the channel is tried, or the job waits for its
 * retry, and no container leases while the block lasts.
 */

/** Stable id of a robot that does not reveal its access token (first 96 bits of a SHA-256). */
export function robotId(channel: RobotChannel, robot: Robot): string {
  return createHash('sha256').update(`${channel}\n${robot.webhook}`).digest('hex').slice(0, 24);
}

export const minuteOf = (nowSeconds: number) => Math.floor(nowSeconds / 60);

export interface RobotThrottle {
  /** True when the robot may send now (a slot of this minute was taken). */
  take(channel: RobotChannel, robot: Robot, now: number): Promise<boolean>;
  /** The robot answered with a rate-limit code: leave it alone for a while. */
  backOff(channel: RobotChannel, robot: Robot, now: number): Promise<void>;
}

/** A container's slots of one robot in one minute. */
interface Slots {
  minute: number;
  left: number;
  /** Slots asked for this minute (this container's demand). */
  asked: number;
  /** The lease in flight, if any: takes of the same robot wait for it. */
  leasing?: Promise<void>;
}

/** A lease is at most this fraction of the budget. */
const LEASE_SHARE = 10;

export function robotThrottle(opts: { maxPerMinute: number; blockSeconds: number }): RobotThrottle {
  const slots = perContainer(() => new Map<string, Slots>());
  const chunk = Math.max(1, Math.ceil(opts.maxPerMinute / LEASE_SHARE));
  return {
    async take(channel, robot, now) {
      const id = robotId(channel, robot);
      const minute = minuteOf(now);
      const all = slots();
      let s = all.get(id);
      if (!s || s.minute !== minute) {
        s = { minute, left: 0, asked: 0 };
        all.set(id, s);
      }
      s.asked++;
      for (;;) {
        if (s.left > 0) {
          s.left--;
          return true;
        }
        if (!s.leasing) break;
        await s.leasing;
      }
      const pool = s;
      let leased = () => {};
      pool.leasing = new Promise<void>((r) => {
        leased = r;
      });
      try {
        const granted = await leaseRobotSlots(
          id,
          minute,
          Math.min(chunk, pool.asked),
          opts.maxPerMinute,
          now,
        );
        if (granted === 0) return false;
        pool.left += granted - 1;
        return true;
      } finally {
        pool.leasing = undefined;
        leased();
      }
    },
    async backOff(channel, robot, now) {
      const id = robotId(channel, robot);
      slots().delete(id);
      await blockRobot(id, now + opts.blockSeconds, now);
    },
  };
}
