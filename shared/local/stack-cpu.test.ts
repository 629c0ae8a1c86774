import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { stackCpu } from './stack.ts';

/** Spins until this process has used `ms` more CPU (whatever else the machine runs). */
function burn(ms: number): void {
  const start = process.cpuUsage();
  for (;;) {
    const used = process.cpuUsage(start);
    if ((used.user + used.system) / 1000 >= ms) return;
  }
}

/** stackCpu: the CPU of the service's process and of each emulator's, read from /proc. */
describe('stackCpu', () => {
  it('counts each process apart, and a process that is gone as 0', async () => {
    // Arrange: this process stands for the service; a child that uses 200 ms of CPU, then waits for
    // its standard input to close, for the SQS emulator
    const child = spawn(
      process.execPath,
      [
        '-e',
        `const s = process.cpuUsage(); for (;;) { const u = process.cpuUsage(s); if (u.user + u.system >= 200000) break; }
         process.stdout.write('spun'); process.stdin.resume(); process.stdin.on('end', () => process.exit(0));`,
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    await once(child.stdout, 'data');
    const sqsPid = child.pid ?? 0;
    const before = stackCpu({ pid: process.pid, javaPid: 0, sqsPid });

    // Act
    burn(200);
    const during = stackCpu({ pid: process.pid, javaPid: 0, sqsPid });
    child.stdin.end();
    await once(child, 'exit');
    const after = stackCpu({ pid: process.pid, javaPid: 0, sqsPid });

    // Assert (/proc counts in hundredths of a second)
    expect(during.service - before.service).toBeGreaterThanOrEqual(0.19);
    expect(during.emulators.sqs).toBeGreaterThanOrEqual(0.19);
    expect(during.emulators.dynamodb).toBe(0);
    expect(after.emulators.sqs).toBe(0);
  });
});
