import {
  CodeDeployClient,
  GetDeploymentCommand,
  PutLifecycleEventHookExecutionStatusCommand,
} from '@aws-sdk/client-codedeploy';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { loadSealKey } from '#shared/domain/auth/seal.ts';
import { getTaskCached } from '#shared/domain/tasks/task-cache.ts';
import {
  appSpecTarget,
  type CheckTarget,
  type HookEvent,
  preTrafficCheck,
} from '#shared/deploy/pre-traffic.ts';
import { logger } from '#shared/log.ts';
import { observed } from '#shared/observe.ts';
import { traced } from '#shared/tracing.ts';

const codedeploy = traced(new CodeDeployClient({}));
const lambda = traced(new LambdaClient({}));

/** CodeDeploy's pre-traffic hook of every gradual deployment (shared/deploy/pre-traffic.ts). */
export const handler = observed(
  async (event: HookEvent) => {
    const targets = JSON.parse(process.env.DEPLOY_CHECK_TARGETS ?? '[]') as CheckTarget[];
    const taskId = Number(process.env.DEPLOY_CHECK_TASK) || undefined;
    const failures = await preTrafficCheck(event, targets, {
      deploymentOf: async (id) => {
        const out = await codedeploy.send(new GetDeploymentCommand({ deploymentId: id }));
        return appSpecTarget(out.deploymentInfo?.revision?.appSpecContent?.content);
      },
      invoke: async (functionName, version, payload) => {
        const out = await lambda.send(
          new InvokeCommand({
            FunctionName: functionName,
            Qualifier: version,
            Payload: new TextEncoder().encode(JSON.stringify(payload)),
          }),
        );
        const text = out.Payload ? new TextDecoder().decode(out.Payload) : '';
        if (out.FunctionError)
          return { payload: undefined, error: `${out.FunctionError}: ${text.slice(0, 500)}` };
        return { payload: text ? JSON.parse(text) : undefined };
      },
      report: async (e, status) => {
        await codedeploy.send(
          new PutLifecycleEventHookExecutionStatusCommand({
            deploymentId: e.DeploymentId,
            lifecycleEventHookExecutionId: e.LifecycleEventHookExecutionId,
            status,
          }),
        );
      },
      checkTask: async () => {
        if (!taskId) return undefined;
        await loadSealKey();
        const task = await getTaskCached(taskId);
        if (!task) throw new Error(`the deploy check task ${taskId} does not exist`);
        return { id: task.id, token: task.token };
      },
    });
    if (failures.length > 0)
      logger.error('pre-traffic check failed', { deploymentId: event.DeploymentId, failures });
    else logger.info('pre-traffic check passed', { deploymentId: event.DeploymentId });
  },
  () => ({ items: 0, failures: 0 }),
);
