/**
 * The single table (shared/db/KEY-DESIGN.md): its key attributes, its TTL attribute and its indexes.
 * The CDK stack deploys it, the local runtime creates it in DynamoDB Local, and the runtime's code
 * names its keys by it. Part of the contracts floor (shared/contracts): pure data.
 *
 * Generic keys; sparse GSIs for reverse lookups: gsi1, and gsi2 for the listings that need a second
 * entry per item (tasks by name beside gsi1's by pinyin, workflows by task and status). A deployed
 * table gains one GSI per update (DynamoDB's rule): add them one release apart.
 */
export const table = {
  partitionKey: 'pk',
  sortKey: 'sk',
  ttlAttribute: 'ttl',
  globalSecondaryIndexes: [
    { indexName: 'gsi1', partitionKey: 'gsi1pk', sortKey: 'gsi1sk' },
    { indexName: 'gsi2', partitionKey: 'gsi2pk', sortKey: 'gsi2sk' },
  ],
} as const;
