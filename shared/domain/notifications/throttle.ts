import { createHash } from 'node:crypto';
import type { Robot, RobotChannel } from '../../contracts/receivers.ts';
import { blockRobot, takeRobotSlot } from './repository.ts';

/**
 * Robot rate awareness (API guide §11.6). DingTalk lets one robot send 20 messages a minute and punishes
 * more with a 10-minute silence; Yach robots have a similar cap. Every container shares one counter
 * item per robot (`ROBOT#<id>` / `RATE`): the current minute and the messages sent in it, taken with a
 * conditional update (`sent < limit`), so all senders together stay within the budget. A robot that
 * answers with its rate-limit code anyway (someone else uses it too) is blocked for
 * `robotBlockSeconds`: the next robot of the channel is tried, or the job waits for its retry.
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

export function robotThrottle(opts: { maxPerMinute: number; blockSeconds: number }): RobotThrottle {
  return {
    take: (channel, robot, now) =>
      takeRobotSlot(robotId(channel, robot), minuteOf(now), opts.maxPerMinute, now),
    backOff: (channel, robot, now) => blockRobot(robotId(channel, robot), now + opts.blockSeconds, now),
  };
}
