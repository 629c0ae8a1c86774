import type { Statement } from './policy.ts';

/**
 * Reads a synthesized template the way the least-privilege check needs it: which Lambda function each
 * trigger runs (a route key, `queue:<name>`, `schedule`), the policy statements of each function's
 * execution role with CloudFormation's references resolved to ARNs, and the ARNs of the stack's named
 * resources (the table, the queues, the secrets). Physical names are unknown before a deploy, so a
 * resource's ARN is made of its logical id: `arn:aws:dynamodb:<region>:<account>:table/<logical id>`.
 */

export interface TemplateJson {
  Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
  Outputs?: Record<string, { Value: unknown }>;
}

export interface TemplateView {
  /** Trigger -> logical id of the Lambda function it invokes. */
  functions: Map<string, string>;
  /** Logical id of a function -> the inline policy statements of its role. */
  statementsOf(functionId: string): Statement[];
  /** A recorded resource name (`table`, `queue/alarm`, `secret/seal-key` ...) as an ARN. */
  arnOf(resource: string): string;
  /** The logical id of a function's execution role. */
  roleOf(functionId: string): string;
}

export interface Environment {
  account: string;
  region: string;
}

type Json = unknown;

const PASCAL = (s: string) => s[0].toUpperCase() + s.slice(1);

/** The stack output naming each secret a function may read (infra/access.ts SecretName). */
const SECRET_OUTPUTS: Record<string, string> = {
  'seal-key': 'SealKeySecretArn',
  'notify-providers': 'NotifySecretArn',
  'sso-client': 'SsoClientSecretArn',
};

export function readTemplate(t: TemplateJson, env: Environment): TemplateView {
  const { Resources: resources } = t;
  const outputRef = (name: string): string => {
    const value = t.Outputs?.[name]?.Value as { Ref?: string } | undefined;
    if (!value?.Ref) throw new Error(`template: output ${name} is not a reference`);
    return value.Ref;
  };

  /** The ARN (or, for Ref of a queue, its URL stands in as the ARN) of a resource by logical id. */
  const arnOfId = (id: string): string => {
    const type = resources[id]?.Type;
    const base = `${env.region}:${env.account}`;
    switch (type) {
      case 'AWS::DynamoDB::Table':
        return `arn:aws:dynamodb:${base}:table/${id}`;
      case 'AWS::SQS::Queue':
        return `arn:aws:sqs:${base}:${id}`;
      case 'AWS::SecretsManager::Secret':
        return `arn:aws:secretsmanager:${base}:secret:${id}`;
      case 'AWS::SNS::Topic':
        return `arn:aws:sns:${base}:${id}`;
      case 'AWS::Lambda::Function':
        return `arn:aws:lambda:${base}:function:${id}`;
      default:
        return `arn:aws:unknown:${base}:${id}`;
    }
  };

  const resolve = (v: Json): string => {
    if (typeof v === 'string') return v;
    if (Array.isArray(v)) throw new Error(`template: cannot resolve a list ${JSON.stringify(v)}`);
    const o = v as Record<string, Json>;
    if ('Ref' in o) {
      const ref = o.Ref as string;
      if (ref === 'AWS::Partition') return 'aws';
      if (ref === 'AWS::Region') return env.region;
      if (ref === 'AWS::AccountId') return env.account;
      if (ref === 'AWS::URLSuffix') return 'amazonaws.com';
      if (resources[ref]) return arnOfId(ref);
    }
    if ('Fn::GetAtt' in o) {
      const [id, attribute] = o['Fn::GetAtt'] as [string, string];
      if (attribute === 'Arn') return arnOfId(id);
    }
    if ('Fn::Join' in o) {
      const [sep, parts] = o['Fn::Join'] as [string, Json[]];
      return parts.map(resolve).join(sep);
    }
    throw new Error(`template: cannot resolve ${JSON.stringify(v)}`);
  };
  const resolveAll = (v: Json): string | string[] => (Array.isArray(v) ? v.map(resolve) : resolve(v));

  const statementOf = (raw: Record<string, Json>): Statement => {
    const s = { ...raw } as Record<string, Json>;
    if (s.Resource !== undefined) s.Resource = resolveAll(s.Resource);
    if (s.NotResource !== undefined) s.NotResource = resolveAll(s.NotResource);
    if (s.Condition !== undefined)
      s.Condition = Object.fromEntries(
        Object.entries(s.Condition as Record<string, Record<string, Json>>).map(([op, keys]) => [
          op,
          Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, resolveAll(v)])),
        ]),
      );
    return s as unknown as Statement;
  };

  /**
   * The function a target names: a function itself, or the function of an alias or a version. An event
   * source mapping names an alias by `<function name>:<alias>`, joined from the alias's ARN: the one
   * Lambda resource the expression refers to.
   */
  const functionOfTarget = (v: Json): string => {
    const o = v as Record<string, Json>;
    const referred = () => {
      const ids = [...JSON.stringify(v).matchAll(/"Ref":"([^"]+)"/g)]
        .map((m) => m[1])
        .filter((ref) => resources[ref]?.Type.startsWith('AWS::Lambda::'));
      return new Set(ids).size === 1 ? ids[0] : '';
    };
    const id =
      'Ref' in o
        ? (o.Ref as string)
        : 'Fn::GetAtt' in o
          ? (o['Fn::GetAtt'] as string[])[0]
          : 'Fn::Join' in o
            ? referred()
            : '';
    const r = resources[id];
    if (!r) throw new Error(`template: target ${JSON.stringify(v)} is no resource`);
    if (r.Type === 'AWS::Lambda::Function') return id;
    if (r.Type === 'AWS::Lambda::Alias' || r.Type === 'AWS::Lambda::Version')
      return functionOfTarget(r.Properties?.FunctionName);
    throw new Error(`template: target ${id} is a ${r.Type}, not a function`);
  };

  const functions = new Map<string, string>();
  const queueNames = new Map<string, string>();
  for (const name of Object.keys(t.Outputs ?? {})) {
    const m = /^([A-Z][a-z]+)QueueUrl$/.exec(name);
    if (m) queueNames.set(outputRef(name), m[1].toLowerCase());
  }
  for (const [, r] of Object.entries(resources)) {
    const p = r.Properties ?? {};
    if (r.Type === 'AWS::ApiGatewayV2::Route') {
      const integrationId = /"Ref":"([^"]+)"/.exec(JSON.stringify(p.Target))?.[1] ?? '';
      const uri = resources[integrationId]?.Properties?.IntegrationUri;
      functions.set(String(p.RouteKey), functionOfTarget(uri));
    } else if (r.Type === 'AWS::Lambda::EventSourceMapping') {
      const queueId = (p.EventSourceArn as { 'Fn::GetAtt': string[] })['Fn::GetAtt'][0];
      const name = queueNames.get(queueId);
      if (name) functions.set(`queue:${name}`, functionOfTarget(p.FunctionName));
    } else if (r.Type === 'AWS::Events::Rule' && p.ScheduleExpression) {
      for (const target of (p.Targets ?? []) as { Arn: Json }[])
        functions.set('schedule', functionOfTarget(target.Arn));
    }
  }

  const roleOf = (functionId: string): string => {
    const role = resources[functionId]?.Properties?.Role as { 'Fn::GetAtt': [string, string] } | undefined;
    if (!role?.['Fn::GetAtt']) throw new Error(`template: function ${functionId} has no role of the stack`);
    return role['Fn::GetAtt'][0];
  };

  const statementsOf = (functionId: string): Statement[] => {
    const role = roleOf(functionId);
    const inline = (
      (resources[role].Properties?.Policies ?? []) as { PolicyDocument: { Statement: Json[] } }[]
    ).flatMap((p) => p.PolicyDocument.Statement);
    const attached = Object.values(resources)
      .filter(
        (r) =>
          r.Type === 'AWS::IAM::Policy' &&
          ((r.Properties?.Roles ?? []) as { Ref?: string }[]).some((x) => x.Ref === role),
      )
      .flatMap((r) => (r.Properties?.PolicyDocument as { Statement: Json[] } | undefined)?.Statement ?? []);
    return [...inline, ...attached].map((s) => statementOf(s as Record<string, Json>));
  };

  const arnOf = (resource: string): string => {
    const [kind, ...rest] = resource.split('/');
    const name = rest.join('/');
    const base = `${env.region}:${env.account}`;
    switch (kind) {
      case 'table':
        return arnOfId(outputRef('TableName')) + (name ? `/${name}` : '');
      case 'queue':
        return arnOfId(outputRef(`${PASCAL(name)}QueueUrl`));
      case 'dlq':
        return arnOfId(outputRef(`${PASCAL(name)}DeadLetterQueueUrl`));
      case 'secret':
        return arnOfId(outputRef(SECRET_OUTPUTS[name] ?? `${name} (no such secret)`));
      case 'sns':
        // SMS goes to a phone number, which has no ARN.
        return '*';
      case 'ses':
        return `arn:aws:ses:${base}:identity/${name}`;
      case 'sms-voice':
        return `arn:aws:sms-voice:${base}:phone-number/${name}`;
      default:
        return resource;
    }
  };

  return { functions, statementsOf, arnOf, roleOf };
}
