import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestReceiver } from '../support/receiver.ts';
import {
  admin,
  type ChildStack,
  createApp,
  requestWebhookTask,
  startChildStack,
  waitGone,
} from './local-child-stack.ts';

/**
 * What the local stack exposes and leaves behind: every listener on 127.0.0.1 only (DynamoDB Local
 * included), the outbound URL guard on when BLOCK_PRIVATE_WEBHOOKS=1, one stack per data directory,
 * and no DynamoDB Local JVM outliving a stack killed with -9. One real stack in a child process.
 */
let dir: string;
let stack: ChildStack;
let receiver: TestReceiver;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tocsin-isolation-'));
  receiver = await new TestReceiver().start();
  stack = await startChildStack({
    dataDir: join(dir, 'data'),
    stateFile: join(dir, 'state.json'),
    env: { BLOCK_PRIVATE_WEBHOOKS: '1', WEBHOOK_BACKOFF_SECONDS: '1,1,1,1,1,1' },
  });
});

afterAll(async () => {
  if (stack.child.exitCode === null && stack.child.signalCode === null) {
    stack.child.kill('SIGKILL');
    await stack.exited;
  }
  await waitGone(stack.javaPid, 5_000);
  await receiver.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A /proc/net/tcp{,6} address ("0100007F" or 32 hex digits, each 32-bit word in host order) as bytes. */
function addressBytes(hex: string): number[] {
  const bytes: number[] = [];
  for (let w = 0; w < hex.length; w += 8) {
    const word = hex.slice(w, w + 8);
    for (let b = 6; b >= 0; b -= 2) bytes.push(Number.parseInt(word.slice(b, b + 2), 16));
  }
  return bytes;
}

function isLoopback(bytes: number[]): boolean {
  if (bytes.length === 4) return bytes[0] === 127;
  const zeros = (from: number, to: number) => bytes.slice(from, to).every((b) => b === 0);
  if (zeros(0, 15) && bytes[15] === 1) return true; // ::1
  return zeros(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff && bytes[12] === 127; // ::ffff:127.x.x.x
}

/** The local addresses listening on `port` (TCP, IPv4 and IPv6), from the kernel's socket tables. */
function listeners(port: number): { address: string; loopback: boolean }[] {
  const out: { address: string; loopback: boolean }[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (!local || state !== '0A') continue; // 0A = LISTEN
      const [addr, portHex] = local.split(':');
      if (Number.parseInt(portHex, 16) !== port) continue;
      const bytes = addressBytes(addr);
      out.push({ address: bytes.join('.'), loopback: isLoopback(bytes) });
    }
  }
  return out;
}

/** The outcomes of the webhook attempts the child stack recorded, once there is one (bounded wait). */
async function attemptOutcomes(): Promise<string[]> {
  const ddb = new DynamoDBClient({
    endpoint: stack.dynamoEndpoint,
    region: stack.region,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  let outcomes: string[] = [];
  const deadline = Date.now() + 20_000;
  while (outcomes.length === 0 && Date.now() < deadline) {
    const scan = await ddb.send(
      new ScanCommand({
        TableName: stack.tableName,
        FilterExpression: 'entity = :e',
        ExpressionAttributeValues: { ':e': { S: 'webhook_attempt' } },
      }),
    );
    outcomes = (scan.Items ?? []).map((i) => i.outcome?.S ?? '');
    if (outcomes.length === 0) await new Promise((r) => setTimeout(r, 100));
  }
  ddb.destroy();
  return outcomes;
}

/** Whether a TCP connection to host:port succeeds. */
function connects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 2_000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

describe('local stack isolation', () => {
  it('listens on 127.0.0.1 only: API, SQS emulator and DynamoDB Local', async () => {
    // Arrange
    const ports = [stack.url, stack.sqsEndpoint, stack.dynamoEndpoint].map((u) => Number(new URL(u).port));
    const external = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

    // Act
    const found = ports.map((port) => listeners(port));
    const fromOutside = external ? await Promise.all(ports.map((port) => connects(external, port))) : [];
    const fromLoopback = await Promise.all(ports.map((port) => connects('127.0.0.1', port)));

    // Assert
    for (const socks of found) {
      expect(socks.length).toBeGreaterThan(0);
      expect(socks.filter((s) => !s.loopback)).toEqual([]);
    }
    expect(fromOutside.every((ok) => !ok)).toBe(true);
    expect(fromLoopback).toEqual([true, true, true]);
  });

  it('turns the outbound URL guard on with BLOCK_PRIVATE_WEBHOOKS=1: a webhook on 127.0.0.1 is refused', async () => {
    // Arrange
    const stateFile = join(dir, 'state.json');
    const imported = await admin(stateFile, 'import', 'test/fixtures/directory.json');
    expect(imported.code).toBe(0);
    const app = await createApp(stateFile);

    // Act: the guard refuses the URL when the task is stored, or else the task's PING when it is sent
    const created = await requestWebhookTask(stack.url, app, `${receiver.url}/hook`);
    const outcomes = created.task ? await attemptOutcomes() : [];

    // Assert
    const refusedAtStore = created.code !== 0 && /private or reserved address/.test(created.msg);
    const refusedAtDelivery = outcomes.includes('refused') && !outcomes.includes('delivered');
    expect({ refusedAtStore, refusedAtDelivery, msg: created.msg }).toMatchObject({
      refusedAtStore: !created.task,
      refusedAtDelivery: !!created.task,
    });
    expect(receiver.received).toEqual([]);
  });

  it('refuses a second stack on the same data directory', async () => {
    // Act
    const second = await startChildStack({
      dataDir: join(dir, 'data'),
      stateFile: join(dir, 'second-state.json'),
    }).catch((err: Error) => err);

    // Assert
    expect(second).toBeInstanceOf(Error);
    expect((second as Error).message).toContain(`is in use by another local stack (pid ${stack.pid})`);
  });

  it('ends its DynamoDB Local JVM when the stack is killed with -9', async () => {
    // Arrange
    expect(await waitGone(stack.javaPid, 0)).toBe(false);

    // Act: only the node process is killed; nothing else tells the JVM
    process.kill(stack.pid, 'SIGKILL');
    await stack.exited;
    const gone = await waitGone(stack.javaPid, 10_000);

    // Assert
    expect(gone).toBe(true);
  });
});
