import {
  CodeDeployClient,
  GetDeploymentCommand,
  PutLifecycleEventHookExecutionStatusCommand,
} from '@aws-sdk/client-codedeploy';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { loadSealKey } from '../domain/auth/seal.ts';
import { getTaskCached } from '../domain/tasks/task-cache.ts';
import { traced } from '../tracing.ts';
import { appSpecTarget, type CheckDeps } from './pre-traffic.ts';

/**
 * The pre-traffic check's AWS side: CodeDeploy (the deployment's AppSpec, the hook's answer), Lambda
 * (the new version, invoked with its qualifier) and the check task (its token, as intake reads it).
 */
export function awsCheckDeps(taskId: number | undefined): CheckDeps {
  const codedeploy = traced(new CodeDeployClient({}));
  const lambda = traced(new LambdaClient({}));
  return {
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
      if (out.FunctionError) return { payload: undefined, error: `${out.FunctionError}: ${text.slice(0, 500)}` };
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
  };
}
