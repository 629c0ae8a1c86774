import { RemovalPolicy, SecretValue } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { table as tableDef } from '../definitions.ts';
import { NOTIFY_SECRET_VARIABLES } from './notify-providers.ts';

/**
 * The stateful core: the single table (from `definitions.table`), the seal key secret and the
 * notification provider credentials. All are retained when the stack is deleted: losing the seal key
 * would make every sealed token and secret in the table unreadable, so it is never rotated either.
 */
export class ServiceData extends Construct {
  readonly table: dynamodb.Table;
  readonly sealKey: secretsmanager.Secret;
  /** Provider credentials (NOTIFY_SECRET_VARIABLES) as a JSON object, set by the operator. */
  readonly notifySecret: secretsmanager.Secret;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: { name: tableDef.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: tableDef.sortKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: tableDef.ttlAttribute,
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const gsi of tableDef.globalSecondaryIndexes) {
      this.table.addGlobalSecondaryIndex({
        indexName: gsi.indexName,
        partitionKey: { name: gsi.partitionKey, type: dynamodb.AttributeType.STRING },
        sortKey: { name: gsi.sortKey, type: dynamodb.AttributeType.STRING },
        projectionType: dynamodb.ProjectionType.ALL,
      });
    }

    // Secrets Manager cannot generate 32 raw bytes; the runtime stretches this string with sha256
    // (shared/domain/auth/seal.ts sealKeyFromSecretString).
    this.sealKey = new secretsmanager.Secret(this, 'SealKey', {
      description: 'tocsin seal key (AES-256-GCM key material for stored tokens/secrets). Never rotate.',
      generateSecretString: { passwordLength: 64, excludePunctuation: true, includeSpace: false },
      removalPolicy: RemovalPolicy.RETAIN,
    });

    // Created with every key empty (nothing secret in the template); the operator sets the values with
    // `aws secretsmanager put-secret-value`. CloudFormation rewrites the value only when this template
    // changes, which would wipe the operator's values: leave it as it is.
    this.notifySecret = new secretsmanager.Secret(this, 'NotifyProviderSecret', {
      description: 'tocsin notification provider credentials (JSON object), read by the notify consumer.',
      secretObjectValue: Object.fromEntries(
        NOTIFY_SECRET_VARIABLES.map((name) => [name, SecretValue.unsafePlainText('')]),
      ),
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }
}
