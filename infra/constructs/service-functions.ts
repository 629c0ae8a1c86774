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
import type { QueueName, RouteDef, TableAccess } from '../definitions.ts';
import { METRICS } from '../metrics.ts';
import { CONSOLE_ENTRY, consoleCommandHooks } from './console-bundling.ts';
import { pascal, type ServiceQueues } from './queues.ts';

/** The alias every caller (API route, SQS event source) invokes, for functions deployed gradually. */
export const LIVE_ALIAS = 'live';

/** What a function is; decides its memory and default timeout. */
export type FunctionKind = 'http' | 'ingest' | 'consumer' | 'schedule';

export const MEMORY_MB: Record<FunctionKind, number> = {
  http: 512,
  ingest: 1024,
  consumer: 512,
  schedule: 512,
};
/** HTTP API integrations time out after 30 s; our handlers are single-digit milliseconds of work. */
const DEFAULT_TIMEOUT_SECONDS: Record<FunctionKind, number> = {
  http: 10,
  ingest: 10,
  consumer: 30,
  schedule: 55,
};

export interface FunctionSpec {
  /** Handler entry relative to the project root (from definitions.ts), exporting `handler`. */
  entry: string;
  kind: FunctionKind;
  table: TableAccess;
  publishes?: readonly QueueName[];
  /** Whether the function may need the seal key (anything that authenticates or reads sealed values). */
  readsSealKey: boolean;
  timeoutSeconds?: number;
  /** Variables for this function only, on top of the common environment. */
  environment?: Record<string, string>;
  /** Further permissions this function alone needs. */
  statements?: iam.PolicyStatement[];
  /** Access to the queues' dead-letter queues (and, to redrive, sending to the source queues). */
  deadLetters?: RouteDef['deadLetters'];
  /** Instances reserved for this function alone (and its ceiling); unset: the account's shared pool. */
  reservedConcurrency?: number;
  /**
   * Invoked through the alias `live` (ServiceFunctions.aliases) on a published version, so that a
   * deployment can shift traffic to a new version gradually (infra/constructs/deployments.ts).
   */
  alias?: boolean;
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
   * Execution roles, one per distinct set of grants: functions whose specs grant the same access share
   * a role (each still gets exactly the permissions its own spec asks for). A role per function would
   * cost two resources each (role and policy) and take the stack past CloudFormation's 500 resources.
   */
  readonly roles = new Map<string, iam.Role>();
  /** The `live` alias of each function deployed through one (FunctionSpec.alias). */
  readonly aliases = new Map<lambda.IFunction, lambda.Alias>();
  private readonly props: ServiceFunctionsProps;
  private readonly environment: Record<string, string>;

  constructor(scope: Construct, id: string, props: ServiceFunctionsProps) {
    super(scope, id);
    this.props = props;
    const { queues, settings } = props;
    this.environment = {
      ...settings.tuning,
      TABLE_NAME: props.table.tableName,
      ALARM_QUEUE_URL: queues.byName.alarm.queue.queueUrl,
      WEBHOOK_QUEUE_URL: queues.byName.webhook.queue.queueUrl,
      NOTIFY_QUEUE_URL: queues.byName.notify.queue.queueUrl,
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

  add(id: string, spec: FunctionSpec): nodejs.NodejsFunction {
    const { props } = this;
    if (isAbsolute(spec.entry)) throw new Error(`${id}: handler entry must be relative to the project root`);
    const logGroup = new logs.LogGroup(this, `${id}Logs`, {
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const fn = new nodejs.NodejsFunction(this, id, {
      description: `tocsin ${spec.entry}`,
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: MEMORY_MB[spec.kind],
      timeout: Duration.seconds(spec.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS[spec.kind]),
      environment: { ...spec.environment, ...this.deadLetterEnvironment(spec), ...this.environment },
      logGroup,
      role: this.roleFor(id, spec),
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
   * The role of the functions granted what `spec` grants (created, with those grants, on first use).
   * Queue consumers and the scheduled runner get a role of their own: the stack grants them more
   * after creation (consuming their queue, the provider secret), which must reach no other function.
   */
  private roleFor(id: string, spec: FunctionSpec): iam.Role {
    const statements = (spec.statements ?? []).map((st) => st.toStatementJson());
    const publishes = [...new Set(spec.publishes ?? [])].sort();
    const own = spec.kind === 'consumer' || spec.kind === 'schedule';
    const key = JSON.stringify([
      own ? id : '',
      spec.table,
      publishes,
      spec.readsSealKey,
      spec.deadLetters ?? '',
      statements,
    ]);
    let role = this.roles.get(key);
    if (role) return role;
    const name = [
      own ? `${id}Role` : 'Role',
      pascal(spec.table),
      ...publishes.map(pascal),
      spec.readsSealKey ? 'Seal' : '',
      spec.deadLetters ? `DeadLetter${pascal(spec.deadLetters)}` : '',
      statements.length
        ? `X${createHash('sha1').update(JSON.stringify(statements)).digest('hex').slice(0, 8)}`
        : '',
    ].join('');
    role = new iam.Role(this, name, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      managedPolicies: [
        iam.ManagedPolicy.fromAwsManagedPolicyName('service-role/AWSLambdaBasicExecutionRole'),
      ],
    });
    this.grant(role, spec);
    this.roles.set(key, role);
    return role;
  }

  private grant(
    fn: iam.IGrantable & { addToPrincipalPolicy(s: iam.PolicyStatement): unknown },
    spec: FunctionSpec,
  ): void {
    const { table, queues, sealKey } = this.props;
    if (spec.table === 'read') table.grantReadData(fn);
    if (spec.table === 'write') table.grantReadWriteData(fn);
    for (const name of new Set(spec.publishes ?? [])) queues.byName[name].queue.grantSendMessages(fn);
    if (spec.readsSealKey) sealKey.grantRead(fn);
    for (const statement of spec.statements ?? []) fn.addToPrincipalPolicy(statement);
    if (spec.deadLetters) {
      // Listing receives and releases (visibility 0); a redrive also deletes, after sending to the source.
      const actions = ['sqs:ReceiveMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueAttributes'];
      if (spec.deadLetters === 'redrive') actions.push('sqs:DeleteMessage');
      for (const { queue, deadLetterQueue } of queues.all) {
        deadLetterQueue.grant(fn, ...actions);
        if (spec.deadLetters === 'redrive') queue.grantSendMessages(fn);
      }
    }
  }

  /** The dead-letter queue URLs, only for the functions that read them. */
  private deadLetterEnvironment(spec: FunctionSpec): Record<string, string> {
    if (!spec.deadLetters) return {};
    const { byName } = this.props.queues;
    return {
      ALARM_DLQ_URL: byName.alarm.deadLetterQueue.queueUrl,
      WEBHOOK_DLQ_URL: byName.webhook.deadLetterQueue.queueUrl,
      NOTIFY_DLQ_URL: byName.notify.deadLetterQueue.queueUrl,
    };
  }
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
