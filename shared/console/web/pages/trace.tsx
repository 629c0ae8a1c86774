import type { ComponentChildren } from 'preact';
import { get } from '../api.ts';
import { answer, dateTime, duration, LEVELS, safeUrl } from '../format.ts';
import { href } from '../router.ts';
import type { Attempt, ConditionTrace, Trace } from '../types.ts';
import {
  AttemptBadge,
  Json,
  LevelBadge,
  Loaded,
  OutcomeBadge,
  PageHead,
  TaskTabs,
  Time,
  useAsync,
  WorkflowStatusBadge,
} from '../ui.tsx';

/** A condition as the pipeline evaluated it: each rule with the value it saw. */
function Evaluated({ c, label }: { c: ConditionTrace; label: string }) {
  return (
    <li>
      {label} {c.index}:{' '}
      {c.rules.map((r, i) => (
        <span key={`${r.field}${i}`} class={r.ok ? 'rule ok' : 'rule no'}>
          {i > 0 && ' and '}
          <code>
            {r.field} {r.operator}
            {r.threshold !== undefined ? ` ${JSON.stringify(r.threshold)}` : ''}
          </code>{' '}
          <span class="muted">saw {r.value === undefined ? 'nothing' : JSON.stringify(r.value)}</span>{' '}
          <span aria-hidden="true">{r.ok ? '✓' : '✗'}</span>
          <span class="sr-only">{r.ok ? 'holds' : 'fails'}</span>
        </span>
      ))}
    </li>
  );
}

function MatchDetails({ match: m, misses: ms = [] }: { match?: ConditionTrace; misses?: ConditionTrace[] }) {
  if (!m && ms.length === 0) return null;
  return (
    <ul class="evaluated">
      {m && <Evaluated c={m} label="matched condition" />}
      {ms.map((c) => (
        <Evaluated key={c.index} c={c} label="missed condition" />
      ))}
    </ul>
  );
}

function Step({
  title,
  at,
  result,
  tone = 'neutral',
  children,
}: {
  title: string;
  at?: number;
  result?: string;
  tone?: 'good' | 'bad' | 'neutral' | 'warn';
  children?: ComponentChildren;
}) {
  return (
    <li class={`step ${tone}`}>
      <div class="step-head">
        <strong>{title}</strong>
        {result && <span class={`badge ${tone}`}>{result}</span>}
        {at ? <span class="muted">{dateTime(at)}</span> : null}
      </div>
      {children}
    </li>
  );
}

function Attempts({ attempts, names }: { attempts: Attempt[]; names: Map<number, string> }) {
  if (attempts.length === 0) return <p class="muted">no attempt recorded yet</p>;
  const sorted = [...attempts].sort((a, b) => a.at_ms - b.at_ms);
  return (
    <table class="grid small">
      <thead>
        <tr>
          <th scope="col">#</th>
          <th scope="col">At</th>
          <th scope="col">Outcome</th>
          <th scope="col">Target</th>
          <th scope="col">Answer</th>
          <th scope="col">Took</th>
        </tr>
      </thead>
      <tbody>
        {sorted.map((a) => (
          <tr key={`${a.attempt}-${a.at_ms}`}>
            <td>{a.attempt}</td>
            <td>{dateTime(a.at)}</td>
            <td>
              <AttemptBadge outcome={a.outcome} />
            </td>
            <td>
              <code>{named(a.target ?? '', names)}</code>
            </td>
            <td>{answer(a)}</td>
            <td>{duration(a.duration_ms)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const toneOf = (result: string): 'good' | 'bad' | 'neutral' | 'warn' =>
  /^(kept|notified|matched|fired|delivered)/.test(result)
    ? 'good'
    : /^(rejected|dropped|failed|dead)/.test(result)
      ? 'bad'
      : /^(compressed|deferred|delay|partly)/.test(result)
        ? 'warn'
        : 'neutral';

/** Outcomes that send notices: their colour is what the deliveries came to, not the decision. */
const SENDS = new Set(['notified', 'recovered']);

/** Whether a person was reached: green only when one was. */
const REACH_TONE: Record<Trace['delivery']['reach'], 'good' | 'bad' | 'neutral'> = {
  notified: 'good',
  'not notified yet': 'neutral',
  'nobody reached': 'bad',
};

/** `uid 1` and `uids 1,2` in a target, named as the directory names them (`Ann Lee (uid 1)`). */
function named(text: string, names: Map<number, string>): string {
  return text.replace(/^uids? ([\d,]+)/, (whole, list: string) => {
    const uids = list.split(',').filter(Boolean).map(Number);
    return uids.every((u) => names.has(u)) ? uids.map((u) => `${names.get(u)} (uid ${u})`).join(', ') : whole;
  });
}

function lastOutcome(attempts: Attempt[]): string {
  const last = [...attempts].sort((a, b) => b.at_ms - a.at_ms)[0];
  return last ? last.outcome : 'pending';
}

/** One alarm's decision trace as a timeline: why was (or wasn't) anyone notified. */
export function TracePage({ taskId, uuid }: { taskId: number; uuid: string }) {
  const state = useAsync(
    () => get<Trace>('/alarmtask/alarm/trace', { task_id: taskId, uuid }),
    `trace ${taskId} ${uuid}`,
  );
  return (
    <main id="main">
      <Loaded state={state}>
        {(t) => {
          const a = t.alarm;
          const r = t.receivers;
          const d = t.delivery;
          const sends = SENDS.has(a.outcome);
          const names = new Map(t.users.map((u) => [u.uid, u.username]));
          const reach = REACH_TONE[d.reach];
          return (
            <>
              <PageHead
                title={`Alarm trace: ${a.task.name}`}
                sub={
                  <>
                    <code>{a.uuid}</code> · <LevelBadge level={a.level} />{' '}
                    {sends ? (
                      <span class={`badge ${reach}`} data-reach={d.reach}>
                        {d.reach}
                      </span>
                    ) : (
                      <OutcomeBadge outcome={a.outcome} />
                    )}
                  </>
                }
                actions={
                  <>
                    <a
                      class="button"
                      href={href('tasks', taskId, 'charts', { minutes: 60, to: a.created_at + 1800 })}
                    >
                      Charts around it
                    </a>{' '}
                    <a class="button" href={href('tasks', taskId, 'alarms')}>
                      Back to alarms
                    </a>
                  </>
                }
              />
              <TaskTabs taskId={taskId} current="alarms" />
              <p class={`summary ${sends ? reach : `outcome-${a.outcome}`}`}>{t.summary}</p>
              {t.configuration.changed && <p class="warn">{t.configuration.note}</p>}
              <div class="trace">
                <section class="card">
                  <h2>Timeline</h2>
                  <ol class="timeline">
                    {a.reported_at !== undefined && (
                      <Step title="Reported" at={a.reported_at}>
                        <p>
                          at level {LEVELS[a.reported_level]}
                          {a.notice_time ? `, notice time ${dateTime(a.notice_time)}` : ''}
                        </p>
                      </Step>
                    )}
                    <Step title="Processed" at={a.processed_at ?? a.created_at} result={a.decision}>
                      <p>{t.configuration.note}</p>
                    </Step>
                    {t.stages.map((s) => (
                      <Step
                        key={s.stage}
                        title={`Stage: ${s.stage}`}
                        result={s.result}
                        tone={toneOf(s.result)}
                      >
                        <p>{s.text}</p>
                        {s.stage !== 'upgrade' && <MatchDetails match={s.match} misses={s.misses} />}
                        {s.stage === 'upgrade' && (
                          <ul>
                            {s.strategies.map((u) => (
                              <li key={u.index}>
                                strategy {u.index}: {u.counted} counted
                                {u.count ? ` of ${u.count} in ${u.interval} min` : ''} —{' '}
                                {u.fired ? 'fired' : 'not fired'}
                              </li>
                            ))}
                          </ul>
                        )}
                        {s.stage === 'compress' && s.window !== undefined && (
                          <p class="muted">
                            window {dateTime(s.window.start)} – {dateTime(s.window.end)}
                          </p>
                        )}
                      </Step>
                    ))}
                    {r && (
                      <Step title="Receivers selected" result={r.sets.map((x) => x.set).join(', ') || 'none'}>
                        <p>{r.text}</p>
                        <dl class="facts">
                          {Object.entries(r.people ?? {}).map(([ch, v]) => (
                            <div key={ch}>
                              <dt>{ch}</dt>
                              <dd>
                                {ch === 'webhook' && typeof v === 'string'
                                  ? safeUrl(v)
                                  : Array.isArray(v)
                                    ? v.map((u) => named(`uid ${u}`, names)).join(', ')
                                    : JSON.stringify(v)}
                              </dd>
                            </div>
                          ))}
                          {(r.robots ?? []).map((set) => (
                            <div key={set.set + set.channel}>
                              <dt>
                                {set.channel} ({set.set})
                              </dt>
                              <dd>{set.robots.join(', ')}</dd>
                            </div>
                          ))}
                          {(r.alarm_groups ?? []).length > 0 && (
                            <div>
                              <dt>alarm groups</dt>
                              <dd>{(r.alarm_groups ?? []).map((g) => g.name).join(', ')}</dd>
                            </div>
                          )}
                        </dl>
                        <MatchDetails misses={r.misses} />
                      </Step>
                    )}
                    {(sends || d.channels.length > 0) && (
                      <Step title="Delivered" result={d.reach} tone={reach}>
                        {d.channels.length === 0 ? (
                          <p class="muted">no delivery recorded</p>
                        ) : (
                          <ul>
                            {d.channels.map((c) => (
                              <li key={c.channel}>
                                {c.channel}: <span class={`badge ${toneOf(c.result)}`}>{c.result}</span>{' '}
                                <span class="muted">
                                  {(['delivered', 'failed', 'skipped', 'pending'] as const)
                                    .filter((o) => c[o] > 0)
                                    .map((o) => {
                                      const why =
                                        o === 'failed' || o === 'skipped' ? c.reasons?.[o] : undefined;
                                      return `${c[o]} ${o}${why?.length ? ` (${why.join('; ')})` : ''}`;
                                    })
                                    .join(', ')}
                                </span>
                              </li>
                            ))}
                          </ul>
                        )}
                      </Step>
                    )}
                    {t.notifications.map((n) => (
                      <Step
                        key={n.job_id}
                        title={`Notification: ${n.channel} (${n.scene})`}
                        result={n.status}
                        tone={toneOf(n.status)}
                      >
                        <p>to {n.targets.map((x) => named(x, names)).join(', ') || 'nobody'}</p>
                        {n.message && (
                          <details>
                            <summary>Message as sent{n.message.truncated ? ' (truncated)' : ''}</summary>
                            {n.message.title && <p class="msg-title">{n.message.title}</p>}
                            <pre class="message">{n.message.text}</pre>
                          </details>
                        )}
                        <Attempts attempts={n.attempts} names={names} />
                      </Step>
                    ))}
                    {t.webhooks.map((w) => (
                      <Step
                        key={w.event_id}
                        title={`Webhook event: ${w.event} (${w.type})`}
                        result={lastOutcome(w.attempts)}
                        tone={toneOf(lastOutcome(w.attempts))}
                      >
                        <p class="muted">
                          webhook-id <code>{w.event_id}</code>
                        </p>
                        <Attempts attempts={w.attempts} names={names} />
                      </Step>
                    ))}
                    {t.workflow && (
                      <Step title={`Workflow #${t.workflow.id} opened`} at={t.workflow.created_at}>
                        <p>
                          now <WorkflowStatusBadge status={t.workflow.status} />{' '}
                          <a href={href('tasks', taskId, 'workflows', t.workflow.id)}>its pipeline history</a>
                        </p>
                      </Step>
                    )}
                  </ol>
                </section>
                <section class="card">
                  <h2>The alarm</h2>
                  <dl class="facts">
                    <div>
                      <dt>Level</dt>
                      <dd>
                        <LevelBadge level={a.level} />
                        {a.reported_level !== a.level && ` (reported ${LEVELS[a.reported_level]})`}
                      </dd>
                    </div>
                    <div>
                      <dt>History id</dt>
                      <dd>{a.history_id || 'not stored'}</dd>
                    </div>
                    {a.metric && (
                      <div>
                        <dt>Metric</dt>
                        <dd>
                          <code>{a.metric}</code>
                        </dd>
                      </div>
                    )}
                    {a.batch !== undefined && (
                      <div>
                        <dt>Batch</dt>
                        <dd>
                          #{a.batch}
                          {a.k !== undefined ? `, alarm ${a.k} of its window` : ''}
                        </dd>
                      </div>
                    )}
                    <div>
                      <dt>Processed</dt>
                      <dd>
                        <Time s={a.processed_at ?? a.created_at} />
                      </dd>
                    </div>
                    <div>
                      <dt>Kept until</dt>
                      <dd>{dateTime(a.expires_at)}</dd>
                    </div>
                  </dl>
                  <h3>Content</h3>
                  {a.ctn ? (
                    <Json value={a.ctn} />
                  ) : (
                    <p class="muted">not stored (the task stores no alarms, or it was dropped)</p>
                  )}
                </section>
              </div>
            </>
          );
        }}
      </Loaded>
    </main>
  );
}
