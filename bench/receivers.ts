import { type FakeMail, type FakeRequest, type Fakes, startFakes } from '../test/support/fakes.ts';
import { type Received, TestReceiver } from '../test/support/receiver.ts';
import { type Arrival, type Channel, markOf } from './load.ts';

/**
 * The outside world the stack delivers to, all real servers on 127.0.0.1 in this process: webhook
 * receivers (test/support/receiver.ts), and the provider fakes of the test suites
 * (test/support/fakes.ts: the DingTalk robot API and an SMTP server). Each is read as a `Channel`:
 * what arrived, by the run mark of the report it came from.
 */

/**
 * A channel over a list that only grows: each look reads what came since the last one, so a long
 * run's waiting does not re-read tens of thousands of entries every few milliseconds.
 */
export function growing<T>(
  name: string,
  targets: number,
  list: () => readonly T[],
  read: (entry: T) => (Arrival & { run: string }) | undefined,
): Channel {
  let seen = 0;
  const byRun = new Map<string, Arrival[]>();
  return {
    name,
    targets,
    arrivals(run) {
      const all = list();
      // Emptied by its owner between runs: start again from its beginning.
      if (all.length < seen) seen = 0;
      for (; seen < all.length; seen++) {
        const a = read(all[seen]);
        if (!a) continue;
        const found = byRun.get(a.run);
        if (found) found.push(a);
        else byRun.set(a.run, [a]);
      }
      return byRun.get(run) ?? [];
    },
  };
}

/** ALARM events at a webhook receiver (one per report). */
export function webhookChannel(receiver: TestReceiver, name = 'webhook', event = 'ALARM'): Channel {
  return growing(
    name,
    1,
    () => receiver.received,
    (r: Received) => {
      if (r.json?.event !== event) return undefined;
      const mark = markOf(String(r.json.data?.history?.ctn?.hostname ?? ''));
      return mark && { ...mark, target: '', at: r.at };
    },
  );
}

/** Messages at the fake DingTalk robot API (one per report). */
export function robotChannel(fakes: Fakes): Channel {
  return growing(
    'robot',
    1,
    () => fakes.requests,
    (r: FakeRequest) => {
      if (r.kind !== 'dinggroup') return undefined;
      const mark = markOf(r.body);
      return mark && { ...mark, target: '', at: r.at };
    },
  );
}

/** Mails at the SMTP server, one per recipient (`recipients` of each report). */
export function emailChannel(fakes: Fakes, recipients: number): Channel {
  return growing(
    'e-mail',
    recipients,
    () => fakes.mails,
    (m: FakeMail) => {
      const mark = markOf(`${m.subject}\n${m.text}\n${m.html}`);
      return mark && { ...mark, target: m.to.join(','), at: m.at };
    },
  );
}

export interface Receivers {
  webhook: TestReceiver;
  /** A receiver that takes 50 ms per request. */
  slow: TestReceiver;
  fakes: Fakes;
  stop(): Promise<void>;
}

export async function startReceivers(): Promise<Receivers> {
  const webhook = await new TestReceiver().start();
  const slow = await new TestReceiver().start();
  slow.behaviour = { status: 200, delayMs: 50 };
  const fakes = await startFakes();
  return {
    webhook,
    slow,
    fakes,
    async stop() {
      await Promise.all([webhook.stop(), slow.stop(), fakes.stop()]);
    },
  };
}
