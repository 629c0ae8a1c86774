/**
 * A small IAM policy evaluator for identity policies, enough for the statements this stack writes:
 * Allow and Deny, Action / NotAction, Resource / NotResource with `*` and `?` wildcards, and the
 * condition operators StringEquals, StringLike and their ForAllValues / ForAnyValue forms. Anything
 * else throws instead of guessing, so an unknown construct can never pass the least-privilege check.
 * Semantics as IAM's: an explicit Deny wins, otherwise some Allow must match, otherwise denied; a
 * ForAllValues condition on a key the request does not carry holds (IAM's "vacuous truth").
 */

export type Strings = string | string[];

export interface Statement {
  Effect: 'Allow' | 'Deny';
  Action?: Strings;
  NotAction?: Strings;
  Resource?: Strings;
  NotResource?: Strings;
  Condition?: Record<string, Record<string, Strings>>;
  Sid?: string;
}

/** One authorization: an action on a resource ARN, with the request's condition keys. */
export interface AccessRequest {
  action: string;
  resource: string;
  /** Condition keys of the request (`dynamodb:LeadingKeys`: the partition keys it touches). */
  context?: Record<string, string[]>;
}

const list = (v: Strings | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** IAM wildcard matching: `*` any run of characters, `?` one character; case-sensitive. */
export function globMatch(pattern: string, value: string): boolean {
  let re = '^';
  for (const ch of pattern)
    re += ch === '*' ? '.*' : ch === '?' ? '.' : ch.replace(/[.+^${}()|[\]\\/-]/g, '\\$&');
  return new RegExp(`${re}$`, 's').test(value);
}

/** Actions compare case-insensitively (`dynamodb:getitem` is `dynamodb:GetItem`), with wildcards. */
function actionMatches(pattern: string, action: string): boolean {
  return globMatch(pattern.toLowerCase(), action.toLowerCase());
}

function matchesAction(s: Statement, action: string): boolean {
  if (s.Action !== undefined) return list(s.Action).some((p) => actionMatches(p, action));
  if (s.NotAction !== undefined) return !list(s.NotAction).some((p) => actionMatches(p, action));
  throw new Error('policy statement without Action or NotAction');
}

function matchesResource(s: Statement, resource: string): boolean {
  if (s.Resource !== undefined) return list(s.Resource).some((p) => globMatch(p, resource));
  if (s.NotResource !== undefined) return !list(s.NotResource).some((p) => globMatch(p, resource));
  throw new Error('policy statement without Resource or NotResource');
}

const OPERATORS: Record<string, (pattern: string, value: string) => boolean> = {
  StringEquals: (p, v) => p === v,
  StringLike: globMatch,
};

/** Whether every condition of the statement holds for the request (all operators, all keys). */
export function conditionsHold(s: Statement, context: Record<string, string[]> = {}): boolean {
  for (const [operator, keys] of Object.entries(s.Condition ?? {})) {
    const [qualifier, base] = operator.includes(':') ? operator.split(':') : ['', operator];
    const test = OPERATORS[base];
    if (!test || !['', 'ForAllValues', 'ForAnyValue'].includes(qualifier))
      throw new Error(`unsupported condition operator ${operator}`);
    for (const [key, patterns] of Object.entries(keys)) {
      const values = context[key];
      const matches = (v: string) => list(patterns).some((p) => test(p, v));
      if (qualifier === 'ForAllValues') {
        if (!(values ?? []).every(matches)) return false;
      } else if (qualifier === 'ForAnyValue') {
        if (!values?.some(matches)) return false;
      } else if (values?.length !== 1 || !matches(values[0])) return false;
    }
  }
  return true;
}

/** Whether the statement applies to the request (action, resource and conditions). */
export function statementApplies(s: Statement, request: AccessRequest): boolean {
  return (
    matchesAction(s, request.action) &&
    matchesResource(s, request.resource) &&
    conditionsHold(s, request.context)
  );
}

/** The Allow statements that grant the request, or undefined when it is denied. */
export function evaluate(statements: Statement[], request: AccessRequest): Statement[] | undefined {
  const applying = statements.filter((s) => statementApplies(s, request));
  if (applying.some((s) => s.Effect === 'Deny')) return undefined;
  const allows = applying.filter((s) => s.Effect === 'Allow');
  return allows.length > 0 ? allows : undefined;
}

/** The actions a statement names (Action only; a NotAction statement names none). */
export function actionsOf(s: Statement): string[] {
  return list(s.Action);
}

export function resourcesOf(s: Statement): string[] {
  return list(s.Resource);
}

export { list as asList };
