import { isObject } from '../../json.ts';
import { isSealed, sealStable, unseal } from '../auth/seal.ts';
import { ROBOT_CHANNELS, type Robot } from '../../contracts/receivers.ts';

/**
 * Group robots' access tokens (`webhook`, a token or a whole URL) and signing secrets are sealed
 * wherever they are kept or queued (task items, alarm groups, a report's receiver override on the
 * alarm queue and in its alarm record, notification jobs), and opened only where a robot is called
 * or a configuration is shown or edited. In between, the alarm path carries them sealed and never
 * opens one.
 *
 * Each value is sealed on its own with `sealStable` (AES-256-GCM, the task secrets' key and format,
 * an IV derived from the value), so the same robot seals to the same text: receivers de-duplicate
 * robots by their sealed webhook without opening them. A value without the seal's marker was
 * written before robots were sealed: it is read as plain, and sealed when it next passes a sealing
 * step (a job is queued, the task or group is saved).
 */

const sealValue = (v: string): string => (v === '' || isSealed(v) ? v : sealStable(v));
const openValue = (v: string): string => (isSealed(v) ? unseal(v) : v);

function mapRobot(r: Robot, f: (v: string) => string): Robot {
  return {
    ...r,
    webhook: typeof r.webhook === 'string' ? f(r.webhook) : r.webhook,
    ...(typeof r.secret === 'string' ? { secret: f(r.secret) } : {}),
  };
}

/** A robot with its webhook and secret sealed (sealed and empty values are kept as they are). */
export const sealRobot = (r: Robot): Robot => mapRobot(r, sealValue);

/** A robot with its webhook and secret in plain, to call it or to show it. */
export const openRobot = (r: Robot): Robot => mapRobot(r, openValue);

/**
 * A receiver (its channels, and the receivers of its dispatch items) with every robot mapped. Read
 * defensively: a disabled module is stored as it was sent, whatever its shape.
 */
function mapReceiver<T>(receiver: T, f: (r: Robot) => Robot): T {
  if (!isObject(receiver)) return receiver;
  const out: Record<string, unknown> = { ...receiver };
  const channels = receiver.channels;
  if (isObject(channels) && ROBOT_CHANNELS.some((ch) => Array.isArray(channels[ch]))) {
    const mapped: Record<string, unknown> = { ...channels };
    for (const ch of ROBOT_CHANNELS) {
      const robots = channels[ch];
      if (Array.isArray(robots))
        mapped[ch] = robots.map((r) =>
          isObject(r) && typeof r.webhook === 'string' ? f(r as unknown as Robot) : r,
        );
    }
    out.channels = mapped;
  }
  if (Array.isArray(receiver.dispatch))
    out.dispatch = receiver.dispatch.map((d) =>
      isObject(d) && 'receiver' in d ? { ...d, receiver: mapReceiver(d.receiver, f) } : d,
    );
  return out as T;
}

/** Items of a module list (reminders, upgrade strategies) with their receivers mapped. */
function mapItems(module: unknown, list: string, f: (r: Robot) => Robot): unknown {
  if (!isObject(module) || !Array.isArray(module[list])) return module;
  return {
    ...module,
    [list]: (module[list] as unknown[]).map((item) =>
      isObject(item) && 'receiver' in item ? { ...item, receiver: mapReceiver(item.receiver, f) } : item,
    ),
  };
}

/** Where a task's configuration holds receivers: its own, its reminders', its upgrade strategies'. */
interface WithReceivers {
  receiver?: unknown;
  workflow?: unknown;
  upgrade?: unknown;
}

function mapConfig<T extends WithReceivers>(config: T, f: (r: Robot) => Robot): T {
  return {
    ...config,
    ...('receiver' in config ? { receiver: mapReceiver(config.receiver, f) } : {}),
    ...('workflow' in config ? { workflow: mapItems(config.workflow, 'reminds', f) } : {}),
    ...('upgrade' in config ? { upgrade: mapItems(config.upgrade, 'strategies', f) } : {}),
  };
}

/** Every robot of a receiver sealed (a report's override, an alarm group's receiver). */
export const sealReceiverRobots = <T>(receiver: T): T => mapReceiver(receiver, sealRobot);
/** Every robot of a receiver in plain. */
export const openReceiverRobots = <T>(receiver: T): T => mapReceiver(receiver, openRobot);
/** Every robot of a task's configuration sealed (what the task item stores). */
export const sealTaskRobots = <T extends WithReceivers>(config: T): T => mapConfig(config, sealRobot);
/** Every robot of a task's configuration in plain (to show it, or to edit it). */
export const openTaskRobots = <T extends WithReceivers>(config: T): T => mapConfig(config, openRobot);
