import { readFileSync } from 'node:fs';

/**
 * The CPU the local stack has used, told apart the way `npm run bench:*` needs it: the service's own
 * process (the API, the queue consumers' threads, the schedule) against the local stand-ins of AWS,
 * which on AWS cost nothing of the service's. Read on `GET /_local/cpu` (TOCSIN_STATS=1).
 *
 * An emulator that runs inside the service's process cannot be told apart from it by the operating
 * system: its CPU is counted in `service` (the side that makes the service look heavier, never
 * lighter) and it is named in `inService`. Today that is the SQS emulator (fauxqs), which runs in the
 * stack's main thread and partly answers the API's requests in the API's own thread; DynamoDB Local
 * is a JVM of its own.
 */
export interface StackCpu {
  /** CPU seconds of the stack's node process, all its threads. */
  service: number;
  /** CPU seconds of each emulator that runs apart (0 for one counted in `service`). */
  emulators: { dynamodb: number; sqs: number };
  /** Emulators whose CPU is inside `service`. */
  inService: ('dynamodb' | 'sqs')[];
}

/** CPU seconds a process has used, all its threads (user + system), from /proc; 0 when it is gone. */
export function processCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) S ppid ...": utime and stime are the 14th and 15th fields; comm may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** This process's CPU seconds (every thread), from the kernel's accounting of it. */
function ownCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** The stack's CPU accessor: the JVM by its pid; fauxqs inside this process. */
export function stackCpu(javaPid: number): () => StackCpu {
  return () => ({
    service: ownCpuSeconds(),
    emulators: { dynamodb: processCpuSeconds(javaPid), sqs: 0 },
    inService: ['sqs'],
  });
}

/** What a stack spent between two readings. */
export function cpuSpent(before: StackCpu, after: StackCpu): StackCpu {
  return {
    service: after.service - before.service,
    emulators: {
      dynamodb: after.emulators.dynamodb - before.emulators.dynamodb,
      sqs: after.emulators.sqs - before.emulators.sqs,
    },
    inService: after.inService,
  };
}
