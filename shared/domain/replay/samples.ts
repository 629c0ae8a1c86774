import type { Template } from '../directory/model.ts';
import { type StoredMessage, channelMessage, storedMessage } from '../notifications/channel-message.ts';
import { buildRenderValues, renderMessage } from '../notifications/render.ts';
import type { Task } from '../tasks/model.ts';
import { resolveTemplate } from '../tasks/templates.ts';
import type { World } from './world.ts';

/**
 * One rendered message per scene the changed alarms would send under the edited configuration, as
 * its channel would send it (template, values and cut as the notification consumer's), so a change
 * of template or of who is told can be read before it is saved.
 */
export interface SampleMessage {
  scene: string;
  channel: string;
  /** The changed alarm whose message it is. */
  uuid: string;
  message: StoredMessage;
}

export function samplesOf(
  changed: ReadonlySet<string>,
  edited: World,
  predefined: Template | undefined,
  env: { env: string; timeZone: string },
): SampleMessage[] {
  const task: Task = edited.config;
  const seen = new Set<string>();
  const out: SampleMessage[] = [];
  for (const { uuid, job } of edited.collector.jobs) {
    if (!uuid || !changed.has(uuid) || seen.has(job.scene)) continue;
    seen.add(job.scene);
    const template = resolveTemplate(task.template, predefined, job.scene, job.channel);
    const rendered = renderMessage(template, buildRenderValues(job.context, task, env));
    out.push({
      scene: job.scene,
      channel: job.channel,
      uuid,
      message: storedMessage(channelMessage(job.channel, rendered)),
    });
  }
  return out;
}
