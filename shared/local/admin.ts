import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createApp } from '../domain/auth/apps.ts';
import { loadSealKey } from '../domain/auth/seal.ts';
import { importDirectory } from '../domain/directory/import.ts';
import { ValidationError } from '../domain/errors.ts';
import { AUTH_USAGE, authCommand } from './admin-auth.ts';
import { view, VIEW_OPTIONS } from './admin-views.ts';
import { useLocalStack } from './stack-env.ts';

const USAGE = `usage:
  npm run admin -- import FILE            load a directory export (behaviour §4) into the table
  npm run admin -- app create NAME        create an app; prints its id and token once
  npm run admin -- backfill               index tasks, workflows and users stored before their indexes existed
${AUTH_USAGE}

  npm run admin -- tasks [--q TEXT] [--status N] [--department N] [--tag N]
  npm run admin -- alarms TASK [--outcome notified|deferred|compressed|filtered|recovered|stored]
                        [--level 0-3] [--metric M] [--batch N] [--from T] [--to T]
  npm run admin -- trace TASK UUID        why was (or wasn't) anyone notified of an alarm
  npm run admin -- workflows TASK [--status 0|1|2|9] [--claimer UID] [--assignee UID]
  npm run admin -- deliveries TASK [--kind webhook|notify|all]
  npm run admin -- dlq [webhook|notify|alarm|due] [--task N]          list dead letters
  npm run admin -- dlq redrive QUEUE (MESSAGE_ID | --all) [--task N]  send them back

options:
  --json              the API's JSON instead of a table
  --limit N           rows (default 20; lists follow no cursor: narrow with the filters)
  --state FILE        state file of a running local stack (default: $TOCSIN_STATE_FILE, else
                      .tocsin-local.json in the project root)
  --table NAME        a deployed table instead of the local stack
  --region REGION     region of the deployed table (default: AWS_REGION)
  --seal-key-secret ARN  Secrets Manager secret with the seal key of the deployment
  Times (--from, --to) are Unix seconds. Reads run as the operator (every task is visible).`;

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
      json: { type: 'boolean' },
      all: { type: 'boolean' },
      clear: { type: 'boolean' },
      ...Object.fromEntries(VIEW_OPTIONS.map((o) => [o, { type: 'string' as const }])),
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
    await useLocalStack(values.state);
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
  } else if (command === 'backfill' && rest.length === 0) {
    const { backfillTaskIndex } = await import('../domain/tasks/list.ts');
    const { backfillWorkflowIndex } = await import('../domain/workflows/list.ts');
    const { backfillUserSignInIndex } = await import('../domain/directory/import.ts');
    const tasks = await backfillTaskIndex();
    const workflows = await backfillWorkflowIndex();
    const users = await backfillUserSignInIndex();
    console.log(
      `tasks: ${tasks.updated} indexed of ${tasks.scanned} scanned; workflows: ${workflows.counted} counted of ${workflows.scanned} scanned; users: ${users} given sign-in keys`,
    );
  } else if (await authCommand(command, rest, values)) {
    // done
  } else if (!(await view(command, rest, values))) {
    console.log(USAGE);
    process.exitCode = 2;
  }
}

main().catch((err) => {
  if (err instanceof ValidationError) {
    console.error(
      `refused, nothing was changed:\n${err.errors.map((e) => `  ${e.field}: ${e.message}`).join('\n')}`,
    );
  } else {
    console.error(`error: ${(err as Error).message}`);
  }
  process.exitCode = 1;
});
