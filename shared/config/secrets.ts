import { sdkClient } from '../platform.ts';

/**
 * The read of a Secrets Manager secret for the configuration (the notification consumer's provider
 * credentials: loadNotifySecrets of env.ts). Apart from env.ts, which every function imports: only the
 * function that reads a secret carries the SDK client and, through the platform port, the tracer.
 */

/**
 * The stack creates the provider secret without a value (the operator puts one): reading it then
 * fails with ResourceNotFoundException, which means "no credentials yet", not a broken consumer.
 */
export async function fetchSecret(secretId: string, region: string): Promise<string | undefined> {
  const { SecretsManagerClient, GetSecretValueCommand } = await import('@aws-sdk/client-secrets-manager');
  try {
    const secrets = sdkClient('secretsmanager', (s) => new SecretsManagerClient({ region, ...s }));
    const out = await secrets.send(new GetSecretValueCommand({ SecretId: secretId }));
    return out.SecretString;
  } catch (err) {
    if ((err as Error).name === 'ResourceNotFoundException') return undefined;
    throw err;
  }
}
