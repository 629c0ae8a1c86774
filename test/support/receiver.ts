import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';

/** What a test receiver got. */
export interface Received {
  at: number;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  // biome-ignore lint/suspicious/noExplicitAny: parsed JSON of arbitrary shape
  json: any;
}

export interface ReceiverBehaviour {
  status?: number;
  delayMs?: number;
  /** Response body (JSON-encoded when not a string). */
  body?: unknown;
}

/**
 * A real HTTP server on 127.0.0.1 standing in for a webhook receiver or a provider API. Its
 * behaviour can change while a test runs (slow, failing, down and back up).
 */
export class TestReceiver {
  readonly received: Received[] = [];
  behaviour: ReceiverBehaviour | ((r: Received) => ReceiverBehaviour) = { status: 200 };
  private server: Server | undefined;
  private port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(port = 0): Promise<this> {
    this.server = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = body ? JSON.parse(body) : undefined;
      } catch {
        json = undefined;
      }
      const rec: Received = {
        at: Date.now(),
        method: req.method ?? '',
        path: req.url ?? '/',
        headers: req.headers,
        body,
        json,
      };
      this.received.push(rec);
      const b = typeof this.behaviour === 'function' ? this.behaviour(rec) : this.behaviour;
      if (b.delayMs) await new Promise((r) => setTimeout(r, b.delayMs));
      if (res.destroyed) return;
      res.writeHead(b.status ?? 200, { 'content-type': 'application/json' });
      res.end(typeof b.body === 'string' ? b.body : JSON.stringify(b.body ?? { ok: true }));
    });
    await new Promise<void>((r) => this.server?.listen(port, '127.0.0.1', () => r()));
    this.port = (this.server.address() as { port: number }).port;
    return this;
  }

  /** Stops listening (the port is kept, so `start(sameport)` brings the receiver "back up"). */
  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }

  async restart(): Promise<void> {
    await this.start(this.port);
  }

  /** Waits until `predicate` holds for the received list (polling), or fails after `timeoutMs`. */
  async waitFor(predicate: (all: Received[]) => boolean, timeoutMs = 15_000): Promise<Received[]> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.received)) {
      if (Date.now() > deadline) {
        throw new Error(
          `receiver: condition not met within ${timeoutMs} ms; got ${this.received.length} request(s)`,
        );
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return this.received;
  }

  /** Received JSON bodies matching an event (and type). */
  events(event?: string, type?: string): Received[] {
    return this.received.filter(
      (r) => (!event || r.json?.event === event) && (!type || r.json?.type === type),
    );
  }
}
