import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { table as tableDef } from '../../shared/contracts/table.ts';
import { NOTIFY_SECRET_VARIABLES } from './notify-providers.ts';

/**
 * The stateful core: the single table (from `definitions.table`), the seal key secret and the
 * notification provider credentials. All are retained when the stack is deleted: losing the seal key
 * would make every sealed token and secret in the table unreadable, so it is never rotated either.
 */
export class ServiceData extends Construct {
  readonly table: dynamodb.Table;
  readonly sealKey: secretsmanager.Secret;
  /** Provider credentials (NOTIFY_SECRET_VARIABLES) as a JSON object, put by the operator (no value until then). */
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

    // Created without a value: CloudFormation never writes one (no literal in the template, nothing to
    // wipe on a later deploy); the operator puts the JSON object with `aws secretsmanager
    // put-secret-value`. Until then the notification consumer runs with no provider credentials.
    this.notifySecret = new secretsmanager.Secret(this, 'NotifyProviderSecret', {
      description: `tocsin notification provider credentials: a JSON object of ${NOTIFY_SECRET_VARIABLES.join(', ')}, read by the notify consumer.`,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    // The Secret construct generates a value unless it is given one: neither, so the secret stays empty.
    (this.notifySecret.node.defaultChild as secretsmanager.CfnSecret).generateSecretString = undefined;
  }
}
