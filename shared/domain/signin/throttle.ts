import { audit } from '../auth/audit.ts';
import {
  addressSubject,
  clearSlot,
  type Limits,
  lock,
  returnSlot,
  type Slot,
  type Subject,
  takeSlot,
} from '../auth/lockout.ts';
import { signInSettings } from '../auth/settings.ts';
import { keys } from '../../db/keys.ts';
import { AppError } from '../errors.ts';

/**
 * The counters one password try takes (auth/lockout.ts says what each is): the source address, the
 * account at that address, and, from an address not known to the account, the account itself. A
 * wrong password locks each counter it filled; a right one clears the account's counters (the
 * address becomes known to it) and gives the address its slot back.
 */
export class SignInLockedError extends AppError {
  constructor(what: 'account' | 'address', retryAfter: number) {
    const minutes = Math.max(1, Math.ceil(retryAfter / 60));
    super(
      429,
      429,
      `too many failed sign-ins ${what === 'account' ? 'for this account' : 'from this address'}: try again in ${minutes} minute${minutes === 1 ? '' : 's'}`,
      {},
      { 'retry-after': String(Math.max(1, retryAfter)) },
    );
  }
}

export interface ThrottleDeps {
  takeSlot: typeof takeSlot;
  lock: typeof lock;
  clearSlot: typeof clearSlot;
  returnSlot: typeof returnSlot;
}

export const throttleDeps: ThrottleDeps = { takeSlot, lock, clearSlot, returnSlot };

type Taken = Slot & { taken: true };

export interface Tries {
  account: Subject;
  address?: Taken;
  at: Taken;
  /** Absent when the address is known to the account. */
  wide?: Taken;
}

export function limits(kind: 'address' | 'at' | 'wide'): Limits {
  const s = signInSettings();
  return {
    max:
      kind === 'address'
        ? s.addressMaxFailures
        : kind === 'at'
          ? s.accountMaxFailures
          : s.accountWideMaxFailures,
    windowSeconds: s.windowSeconds,
    lockSeconds: s.lockSeconds,
    maxLockSeconds: s.maxLockSeconds,
  };
}

function taken(slot: Slot, what: 'account' | 'address', now: number): Taken {
  if (!slot.taken) throw new SignInLockedError(what, slot.until - now);
  return slot;
}

/**
 * Takes the slots of one try of `account` from `ip` (`countAddress`: whether the source address
 * counts too, as it does for sign-in), or throws 429 with Retry-After.
 */
export async function takeTries(
  account: Subject,
  ip: string,
  now: number,
  countAddress: boolean,
  deps: ThrottleDeps = throttleDeps,
): Promise<Tries> {
  const address = countAddress
    ? taken(
        await deps.takeSlot(keys.signInThrottle(addressSubject(ip)), limits('address'), now),
        'address',
        now,
      )
    : undefined;
  const at = taken(
    await deps.takeSlot(keys.signInThrottleFrom(account, ip.slice(0, 64)), limits('at'), now),
    'account',
    now,
  );
  const wide =
    at.counter.known_until > now
      ? undefined
      : taken(await deps.takeSlot(keys.signInThrottle(account), limits('wide'), now), 'account', now);
  return { account, address, at, wide };
}

/** A wrong password: each counter it filled is locked. Whether a lock was set. */
export async function failedTry(
  tries: Tries,
  now: number,
  deps: ThrottleDeps = throttleDeps,
): Promise<boolean> {
  const full = (
    [
      [tries.address, 'address'],
      [tries.at, 'at'],
      [tries.wide, 'wide'],
    ] as const
  ).filter((e): e is [Taken, 'address' | 'at' | 'wide'] => !!e[0] && e[0].counter.tries >= limits(e[1]).max);
  const ends = await Promise.all(full.map(([slot, kind]) => deps.lock(slot, limits(kind), now)));
  full.forEach(([slot, kind], i) => {
    audit('lockout', {
      counter: kind === 'address' ? 'address' : kind === 'at' ? 'account at address' : 'account',
      ...(tries.account.startsWith('uid#') ? { uid: Number(tries.account.slice(4)) } : {}),
      until: ends[i],
      key: kind === 'address' ? slot.key.pk.slice('SIGNIN#'.length) : undefined,
    });
  });
  return full.length > 0;
}

/** A right password: the account's counters start afresh, the address is known to it from now. */
export async function goodTry(tries: Tries, now: number, deps: ThrottleDeps = throttleDeps): Promise<void> {
  await Promise.all([
    deps.clearSlot(tries.at.key, now, true),
    tries.wide ? deps.clearSlot(tries.wide.key, now, false) : undefined,
    tries.address ? deps.returnSlot(tries.address.key) : undefined,
  ]);
}
