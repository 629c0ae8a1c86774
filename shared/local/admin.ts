import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createApp } from '../domain/auth/apps.ts';
import { loadSealKey } from '../domain/auth/seal.ts';
import { importDirectory } from '../domain/directory/service.ts';
import { ValidationError } from '../domain/errors.ts';
import { useLocalStack } from './stack-env.ts';

const USAGE = `usage:
  npm run admin -- import FILE            load a directory export (behavior 4) into the table
  npm run admin -- app create NAME        create an app; prints its id and token once

options:
  --state FILE        state file of a running local stack (default: $TOCSIN_STATE_FILE, else
                      .tocsin-local.json in the project root)
  --table NAME        a deployed table instead of the local stack
  --region REGION     region of the deployed table (default: AWS_REGION)
  --seal-key-secret ARN  Secrets Manager secret with the seal key of the deployment`;

/**
 * The admin command. By default it talks to the running local stack (found through the state file
 * `npm start` writes); with --table it talks to a deployed table.
 */
async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      state: { type: 'string' },
      table: { type: 'string' },
      region: { type: 'string' },
      'seal-key-secret': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || positionals.length === 0) {
    console.log(USAGE);
    return;
  }
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  if (values.table) {
    process.env.TABLE_NAME = values.table;
    if (values.region) process.env.AWS_REGION = values.region;
    if (values['seal-key-secret']) process.env.SEAL_KEY_SECRET_ARN = values['seal-key-secret'];
  } else {
    useLocalStack(values.state);
  }
  await loadSealKey();
  const [command, ...rest] = positionals;
  if (command === 'import' && rest.length === 1) {
    const file = resolve(rest[0]);
    let doc: unknown;
    try {
      doc = JSON.parse(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new Error(`${file}: ${(err as Error).message}`);
    }
    const summary = await importDirectory(doc);
    console.log(
      `imported ${Object.entries(summary)
        .map(([k, n]) => `${n} ${k}`)
        .join(', ')}`,
    );
  } else if (command === 'app' && rest[0] === 'create' && rest.length === 2) {
    const app = await createApp(rest[1]);
    console.log(
      `app created (the token is shown only this once)\n  id:    ${app.id}\n  name:  ${app.name}\n  token: ${app.token}`,
    );
  } else {
    console.log(USAGE);
    process.exitCode = 2;
  }
}

main().catch((err) => {
  if (err instanceof ValidationError) {
    console.error(
      `import refused, nothing was written:\n${err.errors.map((e) => `  ${e.field}: ${e.message}`).join('\n')}`,
    );
  } else {
    console.error(`error: ${(err as Error).message}`);
  }
  process.exitCode = 1;
});
