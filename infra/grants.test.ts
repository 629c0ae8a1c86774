import { beforeAll, describe, expect, it } from 'vitest';
import { type Access, accessKey } from './access.ts';
import { deployedAccess, deployedRoutes, NOT_FOUND_HANDLER } from './constructs/http-api.ts';
import { deployCheck, queues, schedule } from './consumers.ts';
import { resourceNames } from './privileges/check.ts';
import { asList, type Statement } from './privileges/policy.ts';
import { synthProductionTemplate } from './privileges/run.ts';
import { readTemplate, type TemplateJson, type TemplateView } from './privileges/template.ts';

/**
 * What each function's role grants, in the synthesized production stack: exactly the access
 * infra/definitions.ts declares for it, table actions only under their partition-key prefixes, no
 * Scan anywhere and no delete on the alarm intake. (That the grants are also all needed, and enough,
 * the integration suite proves: infra/privileges.)
 */
const ENV = { account: '123456789012', region: 'eu-west-1' };
const SYNTH_TIMEOUT_MS = 120_000;

let template: TemplateJson;
let view: TemplateView;
let names: Map<string, string>;

beforeAll(() => {
  template = synthProductionTemplate();
  view = readTemplate(template, ENV);
  names = resourceNames(view);
}, SYNTH_TIMEOUT_MS);

/**
 * Every trigger and its declared access (a trigger is how the template names a function; the routes of
 * a function group share its function, with the union of their access).
 */
function declared(): [string, Access][] {
  return [
    ...deployedRoutes().map((r): [string, Access] => [`${r.method} ${r.path}`, deployedAccess(r)]),
    ['$default', {}],
    ...queues.map((q): [string, Access] => [`queue:${q.name}`, q.access]),
    ['schedule', schedule.access],
  ];
}

const PROVIDERS = /^(ses|sns|sms-voice):/;
const XRAY = /^xray:/;

/** `action resource [key]` lines of an access, expanded one grant per line. */
function expected(a: Access): string[] {
  const out: string[] = [];
  for (const [action, prefixes] of Object.entries(a.items ?? {}))
    for (const p of prefixes) out.push(`dynamodb:${action} table ${p.endsWith('#') ? `${p}*` : p}`);
  for (const index of a.indexQueries ?? []) out.push(`dynamodb:Query table/index/${index}`);
  for (const [action, refs] of Object.entries(a.queues ?? {}))
    for (const r of refs)
      out.push(`sqs:${action} ${r.endsWith('-dlq') ? `dlq/${r.slice(0, -4)}` : `queue/${r}`}`);
  for (const s of a.secrets ?? []) out.push(`secretsmanager:GetSecretValue secret/${s}`);
  return out.sort();
}

/** The same lines from a role's statements (X-Ray's and the providers' aside). */
function granted(statements: Statement[]): string[] {
  const out: string[] = [];
  for (const s of statements) {
    expect(s.Effect).toBe('Allow');
    const keys = Object.values(s.Condition ?? {}).flatMap((c) => asList(c['dynamodb:LeadingKeys']));
    for (const action of asList(s.Action)) {
      if (XRAY.test(action) || PROVIDERS.test(action)) continue;
      for (const r of asList(s.Resource)) {
        const name = names.get(r) ?? r;
        if (keys.length) for (const k of keys) out.push(`${action} ${name} ${k}`);
        else out.push(`${action} ${name}`);
      }
    }
  }
  return out.sort();
}

const statementsOfTrigger = (trigger: string) => {
  const fn = view.functions.get(trigger);
  expect(fn, trigger).toBeDefined();
  return view.statementsOf(fn as string);
};

describe('each function’s role', () => {
  it('grants exactly what the function declares, nothing more', () => {
    for (const [trigger, access] of declared()) {
      const statements = statementsOfTrigger(trigger);
      expect(granted(statements), trigger).toEqual(expected(access));
      const providers = statements.flatMap((s) => asList(s.Action)).filter((a) => PROVIDERS.test(a));
      // Defaults: SMS through SNS only (SES and voice need settings: stack.test.ts).
      expect(providers, trigger).toEqual(access.notifyProviders ? ['sns:Publish'] : []);
    }
  });

  it('puts every table action under a dynamodb:LeadingKeys condition, and indexes under Query only', () => {
    const tableArn = view.arnOf('table');
    for (const [trigger] of declared()) {
      for (const s of statementsOfTrigger(trigger)) {
        const resources = asList(s.Resource);
        if (resources.includes(tableArn)) {
          expect(resources, trigger).toEqual([tableArn]);
          expect(Object.keys(s.Condition ?? {}), trigger).toEqual(['ForAllValues:StringLike']);
          expect(
            asList(s.Condition?.['ForAllValues:StringLike']['dynamodb:LeadingKeys']).length,
          ).toBeGreaterThan(0);
        }
        if (resources.some((r) => r.startsWith(`${tableArn}/`))) {
          expect(asList(s.Action), trigger).toEqual(['dynamodb:Query']);
          for (const r of resources) expect(r, trigger).toMatch(/\/index\/gsi\d$/);
        }
      }
    }
  });

  it('never allows a Scan, and the alarm intake no delete and no batch or PartiQL write', () => {
    const intake = new Set(
      deployedRoutes()
        .filter((r) => r.auth === 'alarm')
        .map((r) => `${r.method} ${r.path}`),
    );
    expect(intake.size).toBeGreaterThan(5);
    for (const [trigger] of declared()) {
      const actions = statementsOfTrigger(trigger).flatMap((s) => asList(s.Action));
      expect(
        actions.filter((a) => /^dynamodb:Scan$|\*/.test(a)),
        trigger,
      ).toEqual([]);
      if (!intake.has(trigger)) continue;
      expect(
        actions.filter((a) => /^dynamodb:(DeleteItem|BatchWriteItem|PartiQL\w+)$/.test(a)),
        trigger,
      ).toEqual([]);
    }
  });

  it('lets only a queue’s consumer receive from it or delete from it', () => {
    for (const q of queues) {
      const arn = view.arnOf(`queue/${q.name}`);
      for (const [trigger] of declared()) {
        const consumes = statementsOfTrigger(trigger).some(
          (s) =>
            asList(s.Resource).includes(arn) &&
            asList(s.Action).some((a) => a === 'sqs:ReceiveMessage' || a === 'sqs:DeleteMessage'),
        );
        expect(consumes, `${trigger} on the ${q.name} queue`).toBe(trigger === `queue:${q.name}`);
      }
    }
  });

  it('is shared by the functions with the same access and by no others', () => {
    const roles = new Map<string, Set<string>>();
    for (const [trigger, access] of declared()) {
      const role = view.roleOf(view.functions.get(trigger) as string);
      roles.set(role, new Set([...(roles.get(role) ?? []), accessKey(access)]));
    }
    for (const [role, accesses] of roles) expect(accesses.size, role).toBe(1);
    const distinct = new Set(declared().map(([, a]) => accessKey(a)));
    expect(roles.size).toBe(distinct.size);
  });

  it('keeps its whole policy inline, within IAM’s 10,240 characters per role', () => {
    const roles = Object.entries(template.Resources).filter(([, r]) => r.Type === 'AWS::IAM::Role');
    expect(Object.values(template.Resources).filter((r) => r.Type === 'AWS::IAM::Policy')).toEqual([]);
    for (const [id, r] of roles) {
      // IAM counts the policies without whitespace; the template's references stand in for ARNs of
      // about the same length.
      const size = JSON.stringify(r.Properties?.Policies ?? []).length;
      expect(size, id).toBeLessThan(10_240);
    }
    expect(roles.length).toBeGreaterThan(1);
  });

  it('reaches every function of the stack from a trigger, but the pre-traffic check CodeDeploy invokes', () => {
    const fns = Object.entries(template.Resources).filter(([, r]) => r.Type === 'AWS::Lambda::Function');
    const check = fns.filter(([, r]) => r.Properties?.Description === `tocsin ${deployCheck.handler}`);
    expect(check).toHaveLength(1);
    expect([...view.functions.values()]).not.toContain(check[0][0]);
    expect(new Set(view.functions.values()).size).toBe(fns.length - 1);
    expect(view.functions.get('$default')).toBeDefined();
    expect(NOT_FOUND_HANDLER).toMatch(/not-found/);
  });
});
