import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A Secrets Manager endpoint for the test stack (GetSecretValue only, on 127.0.0.1): the stack reads
 * its seal key and the notification provider credentials from it as it does on AWS, with the SDK's
 * own endpoint variable (AWS_ENDPOINT_URL_SECRETS_MANAGER) pointing here. Signatures are not checked.
 */
export interface FakeSecrets {
  url: string;
  /** Sets (or replaces) the string a secret holds. */
  set(arn: string, value: string): void;
  /** How many times each secret was read. */
  reads(arn: string): number;
  stop(): Promise<void>;
}

export async function startFakeSecrets(): Promise<FakeSecrets> {
  const secrets = new Map<string, string>();
  const readCount = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString('utf8');
    });
    req.on('end', () => {
      const answer = (status: number, json: unknown) => {
        res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' });
        res.end(JSON.stringify(json));
      };
      if (req.headers['x-amz-target'] !== 'secretsmanager.GetSecretValue')
        return answer(400, { __type: 'InvalidRequestException', message: 'only GetSecretValue' });
      const id = String((JSON.parse(body || '{}') as { SecretId?: string }).SecretId);
      const value = secrets.get(id);
      if (value === undefined)
        return answer(400, { __type: 'ResourceNotFoundException', message: 'no such secret' });
      readCount.set(id, (readCount.get(id) ?? 0) + 1);
      answer(200, { ARN: id, Name: id.split(':').at(-1), SecretString: value, VersionId: 'v1' });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    set: (arn, value) => void secrets.set(arn, value),
    reads: (arn) => readCount.get(arn) ?? 0,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
