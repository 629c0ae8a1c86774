/** A task's configuration in readable form (GET /alarmtask/view: credentials already masked by the service). */
import type { ComponentChildren } from 'preact';
import { TEMPLATE_SCENES as SCENES } from '../../../domain/tasks/model.ts';
import { LEVELS, safeUrl } from '../format.ts';
import { href } from '../router.ts';
import type { Rule, TaskDetail } from '../types.ts';
import { Person, type PersonLike } from '../ui.tsx';
import { WhatIf } from './what-if.tsx';

type Receiver = TaskDetail['receiver'];
/** A dispatch item's receiver: channels and groups, no dispatch of its own. */
type ReceiverLike = Pick<Receiver, 'alarmgroup' | 'channels'> & Partial<Pick<Receiver, 'dispatch' | 'mode'>>;
type ChannelName = keyof Receiver['channels'];
/** A condition; the filter's carry the level they set. */
type Condition = { rule: Rule[]; level?: number };

const COMPRESS_METHOD: Record<number, string> = { 1: 'condition', 3: 'content', 4: 'full' };
const STRATEGY: Record<number, [string, (n: number) => string]> = {
  1: ['cycle', () => 'the first alarm of each window is notified'],
  2: ['delay', () => "the window's first alarm is notified when the window ends"],
  3: ['cycle-count', (n) => `the first alarm of a window is notified, and the ${n}th (which closes it)`],
  4: ['count-cycle', (n) => `the ${n}th alarm of a window is notified (and closes it)`],
  5: ['count', (n) => `only the ${n}th alarm of a window is notified`],
};
const CHANNEL_NAMES: Record<string, string> = {
  sms: 'SMS',
  email: 'E-mail',
  phone: 'Phone call',
  dingworker: 'DingTalk work notice',
  yachworker: 'Yach work notice',
  wechat: 'WeChat',
  dinggroup: 'DingTalk robots',
  yachgroup: 'Yach robots',
  webhook: 'Webhook',
};
const TEMPLATE_TYPES = ['default', 'predefined', 'custom'];

function Section({ title, on, children }: { title: string; on?: boolean; children: ComponentChildren }) {
  return (
    <section class="card config">
      <h3>
        {title}
        {on !== undefined && <span class={`badge ${on ? 'good' : 'neutral'}`}>{on ? 'on' : 'off'}</span>}
      </h3>
      {children}
    </section>
  );
}

function RuleText({ rule }: { rule: Rule }) {
  return (
    <code>
      {rule.field} {rule.operator}
      {rule.threshold !== undefined ? ` ${JSON.stringify(rule.threshold)}` : ''}
    </code>
  );
}

/** Conditions: any one matches; within one, every rule must hold. */
export function Conditions({ list, levels }: { list?: Condition[]; levels?: boolean }) {
  if (!list?.length) return <p class="muted">no conditions</p>;
  return (
    <ol class="conds">
      {list.map((c, i) => (
        <li key={i}>
          {c.rule.map((r, j) => (
            <span key={j}>
              {j > 0 && ' and '}
              <RuleText rule={r} />
            </span>
          ))}
          {levels && c.level !== undefined && (
            <span class="muted">
              {' '}
              → {c.level === 9 ? 'level kept' : `level ${LEVELS[c.level] ?? c.level}`}
            </span>
          )}
        </li>
      ))}
    </ol>
  );
}

function people(list: PersonLike[]) {
  return list.map((u, i) => (
    <span key={i}>
      {i > 0 && ', '}
      <Person user={u} />
    </span>
  ));
}

/** Whether a receiver names anyone on a channel. */
function names(channels: Receiver['channels'], ch: ChannelName): boolean {
  if (ch === 'webhook') return channels.webhook.url !== '';
  return (channels[ch] ?? []).length > 0;
}

/** Who a channel goes to: people, robots (masked) or the webhook. */
function ChannelTargets({ channels, ch }: { channels: Receiver['channels']; ch: ChannelName }) {
  if (ch === 'webhook') return <code>{safeUrl(channels.webhook.url)}</code>;
  if (ch === 'dinggroup' || ch === 'yachgroup') {
    return (
      <>
        {channels[ch].map((robot) => (
          <code key={robot.webhook} class="block">
            {robot.webhook}
            {robot.secret ? ' (signed)' : ''}
          </code>
        ))}
      </>
    );
  }
  return <>{people(channels[ch] ?? [])}</>;
}

/** A receiver set: channels with their people, robots (masked), the webhook, alarm groups, dispatch. */
export function Receiver({ r }: { r?: ReceiverLike }) {
  if (!r) return <p class="muted">none</p>;
  const channels = (Object.keys(r.channels) as ChannelName[]).filter((ch) => names(r.channels, ch));
  const groups = r.alarmgroup;
  return (
    <div class="receiver">
      <dl class="facts">
        {channels.map((ch) => (
          <div key={ch}>
            <dt>{CHANNEL_NAMES[ch] ?? ch}</dt>
            <dd>
              <ChannelTargets channels={r.channels} ch={ch} />
            </dd>
          </div>
        ))}
        {groups.length > 0 && (
          <div>
            <dt>Alarm groups</dt>
            <dd>{people(groups)}</dd>
          </div>
        )}
        {channels.length === 0 && groups.length === 0 && (
          <div>
            <dt>Receivers</dt>
            <dd class="muted">nobody</dd>
          </div>
        )}
      </dl>
      {r.dispatch && r.dispatch.length > 0 && (
        <>
          <p>
            Dispatch (
            {r.mode === 2
              ? 'non-lazy: every matching item and the defaults'
              : 'lazy: the first matching item only'}
            ; no match: the receivers above):
          </p>
          <ol class="dispatch">
            {r.dispatch.map((d, i) => (
              <li key={i}>
                <span class="muted">item {i}: when</span>
                <Conditions list={d.conditions} />
                <Receiver r={d.receiver} />
              </li>
            ))}
          </ol>
        </>
      )}
    </div>
  );
}

function receiverOf(x: { reuse_receiver: 0 | 1; receiver?: Receiver }) {
  return x.reuse_receiver === 1 ? <span> the task's receivers</span> : <Receiver r={x.receiver} />;
}

export function Configuration({ task }: { task: TaskDetail }) {
  // A module that is off is kept as it was sent: only `enable` is read of it.
  const { filter, compress, upgrade, recovery, workflow, permission, template } = task;
  const strategy = compress.enable ? STRATEGY[compress.strategy ?? 0] : undefined;
  const matrix = template.template.template;
  const channels = Object.keys(matrix.compressed);
  return (
    <div class="config-grid">
      <WhatIf task={task} />
      <Section title="Receivers">
        <Receiver r={task.receiver} />
      </Section>
      <Section title="Filter" on={Boolean(filter.enable)}>
        {filter.enable && (
          <>
            <p>
              {filter.mode === 2
                ? 'Blacklist: an alarm matching a condition is rejected; the others are kept.'
                : 'Whitelist: an alarm matching a condition is kept; the others are rejected.'}{' '}
              A rejected alarm is {filter.not_match === 1 ? 'stored without notification' : 'dropped'}.
            </p>
            <Conditions list={filter.conditions} levels />
          </>
        )}
      </Section>
      <Section title="Compression" on={Boolean(compress.enable)}>
        {compress.enable && (
          <>
            <p>
              {COMPRESS_METHOD[compress.method ?? 0] ?? compress.method} method,{' '}
              {strategy?.[0] ?? compress.strategy} strategy: {strategy?.[1](compress.strategy_count ?? 1)}
              {'; '}windows of {compress.strategy_cycle} min.
            </p>
            {compress.method === 1 && (
              <>
                <Conditions list={compress.conditions} />
                <p>
                  An alarm matching no condition is{' '}
                  {compress.not_match === 1 ? 'notified uncompressed' : 'stored without notification'}.
                </p>
              </>
            )}
            {task.flag_save_db !== 1 && (
              <p class="warn">The task stores no alarms, so nothing is compressed.</p>
            )}
          </>
        )}
      </Section>
      <Section title="Upgrade" on={Boolean(upgrade.enable)}>
        {upgrade.enable && (
          <ol>
            {(upgrade.strategies ?? []).map((s, i) => (
              <li key={i}>
                When {s.count} alarms of one metric arrive within {s.interval} min: an{' '}
                {LEVELS[s.level] ?? s.level} upgrade notice to
                {receiverOf(s)}
              </li>
            ))}
          </ol>
        )}
      </Section>
      <Section title="Recovery" on={Boolean(recovery.enable)}>
        {recovery.enable &&
          (recovery.mode === 2 ? (
            <p>
              Delay: a metric recovers after {recovery.delay_interval} min without an alarm (needs
              compression).
            </p>
          ) : (
            <>
              <p>An alarm matching a condition is a recovery:</p>
              <Conditions list={recovery.conditions} />
            </>
          ))}
      </Section>
      <Section title="Workflow" on={Boolean(workflow.enable)}>
        {workflow.enable && (
          <>
            <p>A pending workflow opens for each compressed alarm that is notified.</p>
            {(workflow.reminds ?? []).length > 0 && (
              <ol>
                {(workflow.reminds ?? []).map((r, i) => (
                  <li key={i}>
                    {r.mode === 'cycle' ? `Every ${r.interval} min` : `Once after ${r.interval} min`} while{' '}
                    {r.status === 1 ? 'processing' : 'pending'}: remind {receiverOf(r)}
                  </li>
                ))}
              </ol>
            )}
          </>
        )}
      </Section>
      <Section title="Templates">
        <p>
          {template.template_id ? `Predefined template #${template.template_id}` : 'No predefined template'}
          {'; '}where each channel's message comes from, per scene:
        </p>
        {channels.length > 0 && (
          <table class="grid small templates">
            <thead>
              <tr>
                <th scope="col">Channel</th>
                {SCENES.map((scene) => (
                  <th scope="col" key={scene}>
                    {scene}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {channels.map((c) => (
                <tr key={c}>
                  <th scope="row">{CHANNEL_NAMES[c] ?? c}</th>
                  {SCENES.map((scene) => {
                    const type = TEMPLATE_TYPES[matrix[scene][c]?.type ?? 0];
                    return (
                      <td key={scene}>
                        <a
                          class={`tpl tpl-${type}`}
                          href={href('tasks', task.id, 'deliveries', { scene, channel: c })}
                          title={`Preview the ${scene} message on ${c}`}
                        >
                          {type}
                        </a>
                      </td>
                    );
                  })}
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
      <Section title="Storage and access">
        <dl class="facts">
          <div>
            <dt>Stores alarms</dt>
            <dd>{task.flag_save_db === 1 ? 'yes' : 'no (alarms are notified, never stored)'}</dd>
          </div>
          <div>
            <dt>Read-write</dt>
            <dd>{permission.rw.length ? people(permission.rw) : <span class="muted">nobody</span>}</dd>
          </div>
          <div>
            <dt>Read-only</dt>
            <dd>{permission.ro.length ? people(permission.ro) : <span class="muted">nobody</span>}</dd>
          </div>
          <div>
            <dt>Created by</dt>
            <dd>
              <Person user={task.creator} />
            </dd>
          </div>
        </dl>
      </Section>
    </div>
  );
}
