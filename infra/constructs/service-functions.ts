import { isAbsolute, join } from 'node:path';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { createHash } from 'node:crypto';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { type Access, accessKey, type QueueRef, type SecretName } from '../access.ts';
import type { QueueName } from '../../shared/contracts/messages.ts';
import { METRICS } from '../../shared/contracts/metrics.ts';
import { CONSOLE_ENTRY, consoleCommandHooks } from './console-bundling.ts';
import type { ServiceQueues } from './queues.ts';

/** The alias every caller (API route, SQS event source) invokes, for functions deployed gradually. */
export const LIVE_ALIAS = 'live';

/**
 * What a function is; decides its memory and default timeout. `hook`: a deployment's pre-traffic
 * check (infra/constructs/deployments.ts), which calls the new version of another function.
 */
export type FunctionKind = 'http' | 'ingest' | 'consumer' | 'schedule' | 'hook';

export const MEMORY_MB: Record<FunctionKind, number> = {
  http: 512,
  ingest: 1024,
  consumer: 512,
  schedule: 512,
  hook: 256,
};
/** HTTP API integrations time out after 30 s; our handlers are single-digit milliseconds of work. */
const DEFAULT_TIMEOUT_SECONDS: Record<FunctionKind, number> = {
  http: 10,
  ingest: 10,
  consumer: 30,
  schedule: 55,
  // A cold start of the function it checks, and the run of a due runner.
  hook: 120,
};

export interface FunctionSpec {
  /** Handler entry relative to the project root (from definitions.ts), exporting `handler`. */
  entry: string;
  kind: FunctionKind;
  /** Everything the function may do on AWS (infra/access.ts): its role grants that and nothing else. */
  access: Access;
  timeoutSeconds?: number;
  /** Variables for this function only, on top of the common environment. */
  environment?: Record<string, string>;
  /** Instances reserved for this function alone (and its ceiling); unset: the account's shared pool. */
  reservedConcurrency?: number;
  /**
   * Invoked through the alias `live` (ServiceFunctions.aliases) on a published version, so that a
   * deployment can shift traffic to a new version gradually (infra/constructs/deployments.ts).
   */
  alias?: boolean;
  /**
   * Statements beyond what `access` can say (the pre-traffic check's CodeDeploy and Lambda calls): the
   * function then gets a role of its own.
   */
  statements?: iam.PolicyStatement[];
}

/** Deployment settings that end up in every function's environment (names from shared/config/env.ts). */
export interface RuntimeSettings {
  envName: string;
  serviceVersion: string;
  legacySign: boolean;
  reportTimeZone: string;
  logLevel: string;
  /** Service tunables (SIGN_SKEW_SECONDS, ALARM_RATE_LIMIT, ...) passed through unchanged. */
  tuning?: Record<string, string>;
}

export interface ServiceFunctionsProps {
  projectRoot: string;
  table: dynamodb.ITable;
  queues: ServiceQueues;
  sealKey: secretsmanager.ISecret;
  /** Provider credentials, for the functions whose access names `notify-providers`. */
  notifySecret: secretsmanager.ISecret;
  /** Single sign-on's client secret (only in a stack with single sign-on), for `sso-client`. */
  ssoClientSecret?: secretsmanager.ISecret;
  /** The statements of `notifyProviders` access (the configured providers' actions). */
  notifyStatements: iam.PolicyStatement[];
  settings: RuntimeSettings;
  logRetention: logs.RetentionDays;
  /**
   * Assertion tests only: use a tiny inline stub instead of running esbuild. Everything else
   * (runtime, architecture, environment, role and grants) is identical.
   */
  skipBundling?: boolean;
}

/**
 * The Lambda defaults of the service in one place: Node.js 24 on arm64, ESM bundles built by the
 * local esbuild, one log group per function, the same environment everywhere (as in the local
 * runtime) and least-privilege grants derived from each function's spec.
 */
export class ServiceFunctions extends Construct {
  readonly functions: nodejs.NodejsFunction[] = [];
  /** What each function is (its alarms group HTTP routes; see observability.ts). */
  readonly kinds = new Map<lambda.IFunction, FunctionKind>();
  /**
   * Execution roles, one per distinct access: functions declared with the same access share a role
   * (each still gets exactly the permissions its own access asks for). A role per function would cost
   * two resources each (role and policy) and take the stack past CloudFormation's 500 resources.
   */
  readonly roles = new Map<string, iam.Role>();
  /** Each function's execution role (the function itself holds it without policy updates). */
  readonly roleOf = new Map<lambda.IFunction, iam.Role>();
  /** The `live` alias of each function deployed through one (FunctionSpec.alias). */
  readonly aliases = new Map<lambda.IFunction, lambda.Alias>();
  /** The handler entry each function runs. */
  readonly entries = new Map<lambda.IFunction, string>();
  /** The statements of the notification providers (granted with `notifyProviders` access). */
  readonly notifyStatements: iam.PolicyStatement[];
  private readonly props: ServiceFunctionsProps;
  private readonly environment: Record<string, string>;

  constructor(scope: Construct, id: string, props: ServiceFunctionsProps) {
    super(scope, id);
    this.props = props;
    this.notifyStatements = props.notifyStatements;
    const { queues, settings } = props;
    this.environment = {
      ...settings.tuning,
      TABLE_NAME: props.table.tableName,
      ALARM_QUEUE_URL: queues.byName.alarm.queue.queueUrl,
      WEBHOOK_QUEUE_URL: queues.byName.webhook.queue.queueUrl,
      NOTIFY_QUEUE_URL: queues.byName.notify.queue.queueUrl,
      DUE_QUEUE_URL: queues.byName.due.queue.queueUrl,
      REPLAY_QUEUE_URL: queues.byName.replay.queue.queueUrl,
      SEAL_KEY_SECRET_ARN: props.sealKey.secretArn,
      SERVICE_VERSION: settings.serviceVersion,
      ENV_NAME: settings.envName,
      LEGACY_SIGN: settings.legacySign ? '1' : '0',
      REPORT_TIME_ZONE: settings.reportTimeZone,
      BLOCK_PRIVATE_WEBHOOKS: '1',
      LOG_LEVEL: settings.logLevel,
      NODE_OPTIONS: '--enable-source-maps',
      POWERTOOLS_SERVICE_NAME: METRICS.service,
      POWERTOOLS_METRICS_NAMESPACE: METRICS.namespace,
    };
  }

  /**
   * The log group the route functions beyond the alarm path share (every line names its function:
   * `function_name`), one resource where each would cost one (the stack's resource budget). The
   * intake functions, the consumers, the runner and the pre-traffic check log on their own.
   */
  private routeLogs(): logs.LogGroup {
    this.sharedRouteLogs ??= this.logGroup('HttpRouteLogs');
    return this.sharedRouteLogs;
  }
  private sharedRouteLogs?: logs.LogGroup;

  private logGroup(id: string): logs.LogGroup {
    return new logs.LogGroup(this, id, { retention: this.props.logRetention, removalPolicy: RemovalPolicy.DESTROY });
  }

  add(id: string, spec: FunctionSpec): nodejs.NodejsFunction {
    const { props } = this;
    if (isAbsolute(spec.entry)) throw new Error(`${id}: handler entry must be relative to the project root`);
    const logGroup = spec.kind === 'http' ? this.routeLogs() : this.logGroup(`${id}Logs`);
    const fn = new nodejs.NodejsFunction(this, id, {
      description: `tocsin ${spec.entry}`,
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: MEMORY_MB[spec.kind],
      timeout: Duration.seconds(spec.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS[spec.kind]),
      environment: { ...spec.environment, ...this.accessEnvironment(spec.access), ...this.environment },
      logGroup,
      // The role's policy is the function's access and nothing else: grants CDK would add on its own
      // (an event source's, tracing's, a secret's grantRead) are not taken (withoutPolicyUpdates), so
      // whatever a function needs is declared in its access; tracing's is in the policy.
      role: this.roleFor(spec).withoutPolicyUpdates(),
      // X-Ray segments of every invocation (init, invoke, SQS event source), with a subsegment per AWS SDK
      // and outbound HTTP call (shared/tracing.ts).
      tracing: lambda.Tracing.ACTIVE,
      ...(spec.reservedConcurrency ? { reservedConcurrentExecutions: spec.reservedConcurrency } : {}),
      ...(props.skipBundling
        ? { code: lambda.Code.fromInline('exports.handler = async () => ({});'), handler: 'index.handler' }
        : {
            entry: join(props.projectRoot, spec.entry),
            handler: 'handler',
            projectRoot: props.projectRoot,
            depsLockFilePath: join(props.projectRoot, 'package-lock.json'),
            bundling: bundlingOptions(props.projectRoot, spec.entry),
          }),
    });
    this.functions.push(fn);
    this.kinds.set(fn, spec.kind);
    this.entries.set(fn, spec.entry);
    this.roleOf.set(fn, this.roleFor(spec));
    if (spec.alias) {
      this.aliases.set(
        fn,
        new lambda.Alias(this, `${id}Live`, { aliasName: LIVE_ALIAS, version: fn.currentVersion }),
      );
    }
    return fn;
  }

  /** What invokes `fn`: its `live` alias when it has one, else the function itself. */
  invocable(fn: lambda.IFunction): lambda.IFunction {
    return this.aliases.get(fn) ?? fn;
  }

  /**
   * The role of the functions with `spec`'s access (created on first use), its whole policy inline:
   * one resource per role, not two (the stack's resource budget).
   */
  private roleFor(spec: FunctionSpec): iam.Role {
    const own = spec.statements ? `+${spec.entry}` : '';
    const key = accessKey(spec.access) + own;
    let role = this.roles.get(key);
    if (role) return role;
    role = new iam.Role(this, `Role${createHash('sha1').update(key).digest('hex').slice(0, 8)}`, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      managedPolicies: [
        iam.ManagedPolicy.fromAwsManagedPolicyName('service-role/AWSLambdaBasicExecutionRole'),
      ],
      inlinePolicies: {
        Access: new iam.PolicyDocument({
          statements: [...this.statementsOf(spec.access), ...(spec.statements ?? []), XRAY_WRITES],
        }),
      },
    });
    this.roles.set(key, role);
    return role;
  }

  /**
   * The statements of an access: table actions grouped by the key prefixes they may touch (one
   * `dynamodb:LeadingKeys` condition each), index queries, SQS actions grouped by the queues they
   * apply to, secret reads and the providers' statements.
   */
  statementsOf(a: Access): iam.PolicyStatement[] {
    const { table, queues, sealKey, notifySecret, ssoClientSecret, notifyStatements } = this.props;
    const statements: iam.PolicyStatement[] = [];
    for (const [prefixes, actions] of groupBy(a.items ?? {})) {
      statements.push(
        new iam.PolicyStatement({
          actions: actions.map((x) => `dynamodb:${x}`),
          resources: [table.tableArn],
          conditions: {
            'ForAllValues:StringLike': {
              'dynamodb:LeadingKeys': prefixes.map((p) => (p.endsWith('#') ? `${p}*` : p)),
            },
          },
        }),
      );
    }
    if (a.indexQueries?.length) {
      statements.push(
        new iam.PolicyStatement({
          actions: ['dynamodb:Query'],
          resources: a.indexQueries.map((i) => `${table.tableArn}/index/${i}`),
        }),
      );
    }
    const queueArn = (ref: QueueRef) => {
      const [name, dlq] = ref.split('-') as [QueueName, string | undefined];
      return (dlq ? queues.byName[name].deadLetterQueue : queues.byName[name].queue).queueArn;
    };
    for (const [refs, actions] of groupBy(a.queues ?? {})) {
      statements.push(
        new iam.PolicyStatement({ actions: actions.map((x) => `sqs:${x}`), resources: refs.map(queueArn) }),
      );
    }
    const arns: Record<SecretName, string | undefined> = {
      'seal-key': sealKey.secretArn,
      'notify-providers': notifySecret.secretArn,
      // Without single sign-on there is no such secret, and nothing reads it.
      'sso-client': ssoClientSecret?.secretArn,
    };
    const secretArns = (a.secrets ?? []).flatMap((s) => arns[s] ?? []);
    if (secretArns.length) {
      statements.push(
        new iam.PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: secretArns }),
      );
    }
    if (a.notifyProviders) statements.push(...notifyStatements);
    return statements;
  }

  /**
   * The variables naming what the function may use beyond the common ones (DLQ URLs, the provider
   * secret, single sign-on's client secret).
   */
  private accessEnvironment(a: Access): Record<string, string> {
    const { byName } = this.props.queues;
    const env: Record<string, string> = {};
    const refs = new Set(Object.values(a.queues ?? {}).flat());
    for (const name of Object.keys(byName) as QueueName[]) {
      if (refs.has(`${name}-dlq`))
        env[`${name.toUpperCase()}_DLQ_URL`] = byName[name].deadLetterQueue.queueUrl;
    }
    if (a.secrets?.includes('notify-providers')) env.NOTIFY_SECRETS_ARN = this.props.notifySecret.secretArn;
    const sso = this.props.ssoClientSecret;
    if (sso && a.secrets?.includes('sso-client')) env.OIDC_CLIENT_SECRET_ARN = sso.secretArn;
    return env;
  }
}

/** Active tracing's writes, as CDK grants them (X-Ray has no resource-level permissions). */
const XRAY_WRITES = new iam.PolicyStatement({
  actions: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'],
  resources: ['*'],
});

/** Keys grouped by identical value lists: `{Get: [A], Put: [A], Query: [B]}` -> `[[A], [Get, Put]], [[B], [Query]]`. */
function groupBy<K extends string, V extends string>(record: Partial<Record<K, readonly V[]>>): [V[], K[]][] {
  const groups = new Map<string, [V[], K[]]>();
  for (const [k, values] of Object.entries(record) as [K, readonly V[]][]) {
    if (!values?.length) continue;
    const vs = [...new Set(values)].sort();
    const id = vs.join(' ');
    const group = groups.get(id) ?? [vs, []];
    group[1].push(k);
    groups.set(id, group);
  }
  return [...groups.values()].map(([vs, ks]) => [vs, ks.sort()]);
}

/**
 * ESM for Node 24. The AWS SDK is bundled (pinned to the version the tests ran against) instead of
 * taking whatever v3 the runtime ships. Some dependencies are CommonJS and `require` Node built-ins,
 * which ESM output cannot do without a `require` in scope: the banner provides one.
 * Shared with `npm run bench:coldstart`, which builds every entry with these same settings.
 */
export const LAMBDA_BUNDLING = {
  format: nodejs.OutputFormat.ESM,
  target: 'node24',
  minify: true,
  sourceMap: true,
  sourceMapMode: nodejs.SourceMapMode.DEFAULT,
  sourcesContent: false,
  mainFields: ['module', 'main'],
  bundleAwsSDK: true,
  externalModules: [],
  charset: nodejs.Charset.UTF8,
  banner:
    "import { createRequire as __tocsinCreateRequire } from 'node:module';" +
    'const require = __tocsinCreateRequire(import.meta.url);',
} satisfies nodejs.BundlingOptions;

function bundlingOptions(projectRoot: string, entry: string): nodejs.BundlingOptions {
  return {
    ...LAMBDA_BUNDLING,
    tsconfig: join(projectRoot, 'tsconfig.json'),
    // The console's function also carries the page it serves.
    ...(entry === CONSOLE_ENTRY ? { commandHooks: consoleCommandHooks() } : {}),
  };
}
