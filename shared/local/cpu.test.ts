import { describe, expect, it } from 'vitest';
import { cpuSpent, processCpuSeconds, stackCpu } from './cpu.ts';

describe('the stack CPU accessor', () => {
  it('counts this process in the service, an emulator apart by its pid, and tells what it left inside', () => {
    // Arrange: this process stands for the stack, and (reading its own pid) for a JVM beside it
    const cpu = stackCpu(process.pid);
    const before = cpu();
    let x = 0;
    for (let i = 0; i < 2e7; i++) x += i % 7;
    // Act
    const spent = cpuSpent(before, cpu());
    // Assert
    expect(x).toBeGreaterThan(0);
    expect(spent.service).toBeGreaterThan(0);
    expect(spent.emulators.dynamodb).toBeGreaterThanOrEqual(0);
    expect(spent.emulators.sqs).toBe(0);
    expect(spent.inService).toEqual(['sqs']);
  });

  it('reads 0 for a process that is gone', () => {
    expect(processCpuSeconds(2 ** 22 + 12_345)).toBe(0);
  });
});
