import { awsCheckDeps } from '#shared/deploy/aws-deps.ts';
import { type CheckTarget, type HookEvent, preTrafficCheck } from '#shared/deploy/pre-traffic.ts';
import { logger } from '#shared/log.ts';
import { observed } from '#shared/observe.ts';

const deps = awsCheckDeps(Number(process.env.DEPLOY_CHECK_TASK) || undefined);

/** CodeDeploy's pre-traffic hook of every gradual deployment (shared/deploy/pre-traffic.ts). */
export const handler = observed(
  async (event: HookEvent) => {
    const targets = JSON.parse(process.env.DEPLOY_CHECK_TARGETS ?? '[]') as CheckTarget[];
    const failures = await preTrafficCheck(event, targets, deps);
    if (failures.length > 0)
      logger.error('pre-traffic check failed', { deploymentId: event.DeploymentId, failures });
    else logger.info('pre-traffic check passed', { deploymentId: event.DeploymentId });
  },
  () => ({ items: 0, failures: 0 }),
);
