import { openLoop } from './load.ts';
import { emailChannel, robotChannel } from './receivers.ts';
import { account, cpuOf, describeRun, fmt, note, target, writesOf } from './report.ts';
import type { Bench } from './webhook-scenarios.ts';

/**
 * `people`: how fast a person hears of an alarm. One task whose receivers are a DingTalk group robot
 * (the fake robot API on 127.0.0.1) and two users by e-mail (the SMTP server on 127.0.0.1), 100
 * alarms/s for 60 s, measured from each report to its robot message and to each e-mail accepted.
 */
export async function people({ stack, receivers, scale }: Bench) {
  const t = await stack.createTask({
    dinggroup: [{ webhook: 'bench-robot', secret: 'SECbench-robot-secret' }],
    email: [1, 2],
  });
  const channels = [robotChannel(receivers.fakes), emailChannel(receivers.fakes, 2)];
  const r = await openLoop(stack, [t], channels, 100, 60 * scale, { queues: ['alarm', 'notify'] });
  const a = account(r.stats, r.delivered);
  describeRun('people', r, a);
  for (const c of r.channels) {
    target(
      `people at 100/s: p99 report->${c.name === 'robot' ? 'robot message' : 'e-mail accepted'} <= 500 ms, 0 lost, 0 duplicates`,
      `${fmt(c.p99)} ms, ${c.lost} lost, ${c.duplicates} duplicates`,
      c.p99 <= 500 && c.lost === 0 && c.duplicates === 0,
    );
  }
  target('people: CPU per alarm (the service itself) <= 8 ms', cpuOf(r), r.serviceMs <= 8);
  target('people: table writes per alarm <= 3 WCU', writesOf(a), a.wcuPerAlarm <= 3);
  note(`people: AWS cost per 1M alarms $${fmt(a.costPerMillion, 2)} (${a.costLines.join(', ')})`);
}
