import type { FauxqsServer } from 'fauxqs';
import { LOOPBACK } from '../paths.ts';

/**
 * fauxqs 2.4.1 listens on every interface whatever its `host` option says (`host` only shapes queue
 * URLs), and the emulator has no authentication. patches/fauxqs+2.4.1+001+listen-host.patch gives
 * startFauxqs a `listenHost` option and the server a `listenHost` getter (the address its socket
 * reports). These are the options that make it listen on loopback only.
 */
export const LISTEN_ON_LOOPBACK = { listenHost: LOOPBACK } as const;

/**
 * Stops a server that does not listen on loopback only (fauxqs without the patch ignores the option)
 * and says why: the stack refuses to expose the emulator rather than run it on every interface.
 */
export async function refuseUnlessLoopback(server: FauxqsServer): Promise<void> {
  const host = (server as Partial<FauxqsServer>).listenHost;
  if (host === LOOPBACK) return;
  await server.stop();
  throw new Error(
    `the SQS emulator would listen on ${host ?? 'every interface'}, not ${LOOPBACK} only: fauxqs is not ` +
      'patched (`npm install` applies patches/; see docs/local-stack.md#emulator-versions-and-patches)',
  );
}
