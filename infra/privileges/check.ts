import type { CallRecord } from '../../shared/local/call-record.ts';
import { table } from '../../shared/contracts/table.ts';
import { queues } from '../consumers.ts';
import { type AccessRequest, asList, evaluate, globMatch, type Statement } from './policy.ts';
import type { TemplateView } from './template.ts';

/**
 * The least-privilege proof: the AWS calls recorded while the integration suite ran, against the
 * policies of the synthesized stack. Every call must be allowed by the role of the function it was
 * made under; and (for a complete run) every grant of every function's role must have been used by
 * that function: each action on each resource, and on the table each partition-key prefix of its
 * `dynamodb:LeadingKeys` condition. A grant the suite cannot reach is listed in EXCEPTIONS with why.
 */

/** A grant the suite cannot show in use, and why. */
export interface Exception {
  /** IAM action (wildcards allowed). */
  action: string;
  /** The resource's name as recorded (`queue/*`, `table`), wildcards allowed; any when absent. */
  resource?: string;
  reason: string;
}

export interface CheckOptions {
  /** Check that every grant was used (only meaningful after the whole suite). */
  unused: boolean;
  exceptions: readonly Exception[];
}

export interface CheckReport {
  /** Functions of the template, and those the recorded calls reached. */
  functions: number;
  reached: number;
  calls: number;
  /** Distinct IAM actions called, and grants (action x resource x key prefix) in the roles. */
  actions: number;
  grants: number;
  excepted: number;
  denied: string[];
  unused: string[];
  ok: boolean;
  summary: string;
}

const LEADING_KEYS = 'dynamodb:LeadingKeys';

/**
 * A recorded key prefix as a value of the request's LeadingKeys: `TASK#` stands for any key of that
 * partition (`TASK#…`), a constant (`DEPTS`) for itself.
 */
export function leadingKeyValue(prefix: string): string {
  return prefix.endsWith('#') ? `${prefix}…` : prefix;
}

/** The IAM request a recorded call made. */
export function requestOf(r: CallRecord, view: Pick<TemplateView, 'arnOf'>): AccessRequest {
  return {
    action: r.action,
    resource: view.arnOf(r.resource),
    ...(r.keys ? { context: { [LEADING_KEYS]: r.keys.map(leadingKeyValue) } } : {}),
  };
}

/** One grant of a statement: an action on a resource (or NotResource), and a key pattern if it has one. */
interface Grant {
  action: string;
  resource: string;
  key?: string;
}

function grantsOf(s: Statement): Grant[] {
  const resources =
    s.Resource !== undefined ? asList(s.Resource) : [`not ${asList(s.NotResource).join(',')}`];
  const keys = Object.values(s.Condition ?? {}).flatMap((c) => asList(c[LEADING_KEYS]));
  return asList(s.Action).flatMap((action) =>
    resources.flatMap((resource) =>
      keys.length ? keys.map((key) => ({ action, resource, key })) : [{ action, resource }],
    ),
  );
}

const grantId = (g: Grant) => `${g.action}|${g.resource}|${g.key ?? ''}`;

/** The grants of `s` the request used: its action, the resource it named, the key patterns its keys met. */
function usedGrants(s: Statement, request: AccessRequest): Grant[] {
  const values = request.context?.[LEADING_KEYS] ?? [];
  return grantsOf(s).filter(
    (g) =>
      globMatch(g.action.toLowerCase(), request.action.toLowerCase()) &&
      (g.resource.startsWith('not ') || globMatch(g.resource, request.resource)) &&
      (g.key === undefined || values.some((v) => globMatch(g.key as string, v))),
  );
}

export function checkLeastPrivilege(
  records: readonly CallRecord[],
  view: TemplateView,
  options: CheckOptions,
): CheckReport {
  // Identical records are one request to evaluate.
  const distinct = new Map<string, { record: CallRecord; count: number }>();
  for (const r of records) {
    const id = JSON.stringify([r.fn, r.action, r.resource, r.keys ?? null]);
    const seen = distinct.get(id);
    if (seen) seen.count++;
    else distinct.set(id, { record: r, count: 1 });
  }

  const triggersOf = new Map<string, string[]>();
  for (const [trigger, fn] of view.functions) triggersOf.set(fn, [...(triggersOf.get(fn) ?? []), trigger]);
  const label = (fn: string) => (triggersOf.get(fn) ?? [fn]).join(', ');
  const names = resourceNames(view);
  const nameOf = (arn: string) => names.get(arn) ?? arn;

  const denied: string[] = [];
  const used = new Map<string, Set<string>>();
  const reached = new Set<string>();
  for (const { record: r, count } of distinct.values()) {
    const keys = r.keys ? ` for keys ${r.keys.join(', ')}` : '';
    const fn = view.functions.get(r.fn);
    if (!fn) {
      denied.push(`${r.fn}: no deployed function runs it (${r.action} on ${r.resource}${keys}, ${count}x)`);
      continue;
    }
    reached.add(fn);
    const request = requestOf(r, view);
    const allowing = evaluate(view.statementsOf(fn), request);
    if (!allowing) {
      denied.push(`${r.fn}: ${r.action} on ${r.resource}${keys} is not allowed by its role (${count}x)`);
      continue;
    }
    const set = used.get(fn) ?? new Set<string>();
    for (const s of allowing) for (const g of usedGrants(s, request)) set.add(grantId(g));
    used.set(fn, set);
  }

  const unused: string[] = [];
  let grants = 0;
  let excepted = 0;
  const fns = [...triggersOf.keys()].sort((a, b) => label(a).localeCompare(label(b)));
  for (const fn of fns) {
    const all = new Map<string, Grant>();
    for (const s of view.statementsOf(fn)) {
      if (s.Effect !== 'Allow') continue;
      for (const g of grantsOf(s)) all.set(grantId(g), g);
    }
    const missing: string[] = [];
    for (const [id, g] of all) {
      grants++;
      if (used.get(fn)?.has(id)) continue;
      const resource = g.resource.startsWith('not ') ? g.resource : nameOf(g.resource);
      if (options.exceptions.some((e) => exceptionCovers(e, g.action, resource))) {
        excepted++;
        continue;
      }
      missing.push(`${g.action} on ${resource}${g.key ? ` for keys ${g.key}` : ''}`);
    }
    if (!options.unused || missing.length === 0) continue;
    if (!reached.has(fn))
      unused.push(`${label(fn)}: never ran in the suite, so none of its grants is proven`);
    else for (const m of missing) unused.push(`${label(fn)}: ${m} is granted but never used`);
  }

  const actions = new Set([...distinct.values()].map((d) => d.record.action)).size;
  const resources = new Set([...distinct.values()].map((d) => d.record.resource)).size;
  const ok = denied.length === 0 && unused.length === 0;
  const summary =
    `least privilege: ${reached.size} of ${fns.length} functions ran; ${records.length} AWS calls ` +
    `(${actions} actions on ${resources} resources) checked against their roles: ${denied.length} denied; ` +
    (options.unused
      ? `${grants - excepted - unused.length} of ${grants} grants used, ${excepted} excepted, ${unused.length} unused`
      : 'unused grants not checked (a partial run)');
  return {
    functions: fns.length,
    reached: reached.size,
    calls: records.length,
    actions,
    grants,
    excepted,
    denied,
    unused,
    ok,
    summary,
  };
}

function exceptionCovers(e: Exception, action: string, resource: string): boolean {
  return globMatch(e.action, action) && (e.resource === undefined || globMatch(e.resource, resource));
}

/** ARN -> recorded name, for the resources the recorder names (table, indexes, queues, secrets). */
export function resourceNames(view: TemplateView): Map<string, string> {
  const names = new Map<string, string>();
  const tryName = (name: string) => {
    try {
      names.set(view.arnOf(name), name);
    } catch {
      // not in this stack
    }
  };
  for (const name of ['table', 'secret/seal-key', 'secret/notify-providers', 'secret/sso-client'])
    tryName(name);
  for (const q of queues) for (const k of ['queue', 'dlq']) tryName(`${k}/${q.name}`);
  for (const i of table.globalSecondaryIndexes) tryName(`table/index/${i.indexName}`);
  return names;
}
