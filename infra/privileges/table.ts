import { type Access, access as canonical, accessKey } from '../access.ts';
import { deployedAccess, deployedRoutes, NOT_FOUND_HANDLER } from '../constructs/http-api.ts';
import { deployCheck, queues, schedule } from '../consumers.ts';

/**
 * The privileges of every function as a Markdown table (docs/aws-operations.md, "Least privilege"),
 * functions with the same access on one row (the routes of a function group with their function's). A unit test keeps the page equal to this;
 * `npx tsx infra/privileges/table.ts` prints it.
 */
export function privilegesTable(): string {
  const rows = new Map<string, { triggers: string[]; access: Access }>();
  const add = (trigger: string, access: Access) => {
    const key = accessKey(access);
    const row = rows.get(key) ?? { triggers: [], access: canonical(access) };
    row.triggers.push(trigger);
    rows.set(key, row);
  };
  for (const r of deployedRoutes()) add(`\`${r.method} ${r.path}\``, deployedAccess(r));
  add(`\`$default\` (${NOT_FOUND_HANDLER.split('/').at(-1)})`, {});
  for (const q of queues) add(`${q.name} queue consumer`, q.access);
  add('scheduled due work', schedule.access);
  add("deployments' pre-traffic check (and its CodeDeploy and Lambda calls)", deployCheck.access);
  const lines = [
    '| function | table items (action: partition-key prefixes) | index queries | queues | secrets, providers |',
    '|---|---|---|---|---|',
  ];
  for (const { triggers, access } of rows.values()) {
    const items = Object.entries(access.items ?? {})
      .map(([action, prefixes]) => `${action}: ${prefixes.map((p) => `\`${p}\``).join(' ')}`)
      .join('<br>');
    const indexes = (access.indexQueries ?? []).join(', ');
    const queueGrants = Object.entries(access.queues ?? {})
      .map(([action, refs]) => `${action}: ${refs.join(', ')}`)
      .join('<br>');
    const other = [...(access.secrets ?? []), ...(access.notifyProviders ? ['providers'] : [])].join(', ');
    lines.push(
      `| ${triggers.join(', ')} | ${items || '—'} | ${indexes || '—'} | ${queueGrants || '—'} | ${other || '—'} |`,
    );
  }
  return lines.join('\n');
}

if (process.argv[1]?.endsWith('infra/privileges/table.ts')) console.log(privilegesTable());
