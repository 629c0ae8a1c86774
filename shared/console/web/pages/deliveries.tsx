import { useEffect, useRef, useState } from 'preact/hooks';
import { get, getFilled, post } from '../api.ts';
import { answer, dateTime, duration, plural } from '../format.ts';
import { href, navigate, type Route } from '../router.ts';
import type {
  DeadLetter,
  DeadLetterList,
  Delivery,
  DeliveryList,
  Redriven,
  TemplatePreview as TemplatePreviewData,
  WebhookTested,
} from '../types.ts';
import { AttemptBadge, ErrorBox, Loading, More, Notice, PageHead, Time, useAsync } from '../ui.tsx';
import { NOTIFY_SCENES as SCENES } from '../../../domain/tasks/model.ts';
import { NOTIFY_CHANNELS as CHANNELS } from '../../../contracts/receivers.ts';
import { TaskHead } from './task.tsx';

const KINDS = ['all', 'webhook', 'notify'] as const;
const QUEUES = ['webhook', 'notify', 'alarm', 'due'] as const;

/** A task's webhook and notification attempts, newest first. */
function Attempts({ taskId }: { taskId: number }) {
  const [kind, setKind] = useState<(typeof KINDS)[number]>('all');
  const [rows, setRows] = useState<Delivery[]>([]);
  const [cursor, setCursor] = useState('');
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<unknown>();
  const [round, setRound] = useState(0);

  // Only the newest request's answer counts (a slower earlier one must not overwrite it).
  const generation = useRef(0);
  const load = async (after: string) => {
    const gen = ++generation.current;
    setLoading(true);
    setError(undefined);
    try {
      const page = await getFilled<DeliveryList>(
        '/alarmtask/deliveries',
        { task_id: taskId, kind, cursor: after || undefined },
        'deliveries',
        30,
      );
      if (gen !== generation.current) return;
      setRows((old) => (after ? [...old, ...page.deliveries] : page.deliveries));
      setCursor(page.next_cursor);
    } catch (err) {
      if (gen === generation.current) setError(err);
    } finally {
      if (gen === generation.current) setLoading(false);
    }
  };
  useEffect(() => {
    setRows([]);
    void load('');
  }, [taskId, kind, round]);

  return (
    <section class="card">
      <h2>Delivery attempts</h2>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Kind
          <select value={kind} onChange={(e) => setKind(e.currentTarget.value as (typeof KINDS)[number])}>
            {KINDS.map((k) => (
              <option key={k} value={k}>
                {k === 'notify' ? 'notifications' : k === 'webhook' ? 'webhook events' : 'all'}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => setRound((r) => r + 1)}>
          Refresh
        </button>
      </form>
      {error !== undefined && <ErrorBox error={error} onRetry={() => load(cursor)} />}
      {rows.length === 0 && loading && <Loading />}
      {rows.length === 0 && !loading && error === undefined && <p class="empty">No attempt recorded.</p>}
      {rows.length > 0 && (
        <table class="grid deliveries">
          <thead>
            <tr>
              <th scope="col">At</th>
              <th scope="col">What</th>
              <th scope="col">Target</th>
              <th scope="col">Attempt</th>
              <th scope="col">Outcome</th>
              <th scope="col">Answer</th>
              <th scope="col">Took</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((d) => (
              <tr key={`${d.kind}${d.id}#${d.attempt}#${d.at_ms}`}>
                <td>
                  <Time s={d.at} />
                </td>
                <td>
                  {d.kind === 'webhook' ? (
                    <>
                      webhook <strong>{d.event}</strong> <span class="muted">{d.type}</span>
                    </>
                  ) : (
                    <>
                      {d.channel} <span class="muted">{d.scene}</span>
                    </>
                  )}
                </td>
                <td>
                  <code>{d.target ?? ''}</code>
                </td>
                <td>{d.attempt}</td>
                <td>
                  <AttemptBadge outcome={d.outcome} />
                </td>
                <td>{answer(d)}</td>
                <td>{duration(d.duration_ms)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <More cursor={cursor} loading={loading} onMore={() => load(cursor)} />
    </section>
  );
}

/** A PING to the task's webhook now, and its attempt. */
function TestSend({ taskId }: { taskId: number }) {
  const [result, setResult] = useState<WebhookTested>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const send = async () => {
    setBusy(true);
    setError(undefined);
    setResult(undefined);
    try {
      setResult(await post<WebhookTested>('/alarmtask/webhook/test', { task_id: taskId }));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card">
      <h2>Test the webhook</h2>
      <p>Sends a PING event to the task's webhook now, signed like every event, and shows the attempt.</p>
      <p class="muted note-leve">
        Alarm events carry the alarm's <code>level</code> twice, also as <code>leve</code>: the spelling of
        the interface's field table, kept for receivers written to it. Read either.
      </p>
      <button type="button" onClick={send} disabled={busy}>
        {busy ? 'Sending…' : 'Send a test PING'}
      </button>
      {result && (
        <div class={`alert ${result.outcome === 'delivered' ? 'ok' : 'error'}`} role="status">
          <AttemptBadge outcome={result.outcome} /> {result.target && <code>{result.target}</code>}{' '}
          {answer(result)} in {duration(result.duration_ms)}{' '}
          <span class="muted">(webhook-id {result.webhook_id})</span>
        </div>
      )}
      {error !== undefined && <ErrorBox error={error} />}
    </section>
  );
}

/** Renders a task's template for any scene and channel, with a sample or a stored alarm. */
function TemplatePreview({ taskId, route }: { taskId: number; route: Route }) {
  const [scene, setScene] = useState(route.query.get('scene') ?? 'not_compress');
  const [channel, setChannel] = useState(route.query.get('channel') ?? 'email');
  const [uuid, setUuid] = useState('');
  const [preview, setPreview] = useState<TemplatePreviewData>();
  const [error, setError] = useState<unknown>();
  const render = async (e?: Event) => {
    e?.preventDefault();
    setError(undefined);
    try {
      setPreview(
        await post<TemplatePreviewData>('/alarmtask/template/preview', {
          task_id: taskId,
          scene,
          channel,
          ...(uuid.trim() ? { uuid: uuid.trim() } : {}),
        }),
      );
    } catch (err) {
      setPreview(undefined);
      setError(err);
    }
  };
  useEffect(() => {
    if (route.query.get('scene')) void render();
  }, []);
  return (
    <section class="card" id="preview">
      <h2>Template preview</h2>
      <form class="filters" onSubmit={render}>
        <label>
          Scene
          <select value={scene} onChange={(e) => setScene(e.currentTarget.value)}>
            {SCENES.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Channel
          <select value={channel} onChange={(e) => setChannel(e.currentTarget.value)}>
            {CHANNELS.map((c) => (
              <option key={c}>{c}</option>
            ))}
          </select>
        </label>
        <label>
          Stored alarm uuid (optional)
          <input
            value={uuid}
            onInput={(e) => setUuid(e.currentTarget.value)}
            placeholder="a sample alarm if empty"
          />
        </label>
        <button type="submit" class="primary">
          Preview
        </button>
      </form>
      {error !== undefined && <ErrorBox error={error} />}
      {preview && (
        <div class="preview">
          <p class="muted">
            {preview.source} template · {preview.alarm === 'stored' ? 'the stored alarm' : 'a sample alarm'} ·
            format {preview.format} (shown as text)
          </p>
          {preview.title && <p class="msg-title">{preview.title}</p>}
          <pre class="message">{preview.text}</pre>
        </div>
      )}
    </section>
  );
}

function carried(d: DeadLetter): string {
  if (d.queue === 'due') return `${d.kind} ${d.ref ?? ''} due ${dateTime(d.due_at)}`;
  if (d.kind === 'webhook') return `webhook ${d.event ?? ''} ${d.type ?? ''} (${d.event_id})`;
  if (d.kind === 'webhooks') return `${plural(d.events?.length ?? 0, 'webhook event')}`;
  if (d.kind === 'notify') return `${d.channel} ${d.scene} (${d.job_id})`;
  if (d.kind === 'alarm') return `alarm ${d.uuid}`;
  return d.kind;
}

/** Dead letters of one queue (role 9 only), each with its last failure, redriven one by one or all. */
export function DeadLetters({
  taskId,
  queue,
  onQueue,
}: {
  taskId?: number;
  queue: string;
  onQueue: (q: string) => void;
}) {
  const [round, setRound] = useState(0);
  const state = useAsync(
    () => get<DeadLetterList>('/delivery/dlq', { queue, task_id: taskId, limit: 50 }),
    `dlq ${queue} ${taskId} ${round}`,
  );
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState('');
  const [error, setError] = useState<unknown>();
  const [confirmAll, setConfirmAll] = useState(false);

  const redrive = async (body: Record<string, unknown>) => {
    setBusy(true);
    setError(undefined);
    setMessage('');
    try {
      const out = await post<Redriven>('/delivery/dlq/redrive', {
        queue,
        ...body,
      });
      setMessage(
        `${plural(out.redriven, 'dead letter')} redriven to the ${queue} queue${out.more ? '; more are left: redrive again' : ''}.`,
      );
      setConfirmAll(false);
      setRound((r) => r + 1);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  const list = state.data?.dead_letters ?? [];
  return (
    <section class="card">
      <h2>Dead letters{taskId ? ' of this task' : ''}</h2>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Queue
          <select value={queue} onChange={(e) => onQueue(e.currentTarget.value)}>
            {QUEUES.map((q) => (
              <option key={q} value={q}>
                {q === 'due' ? 'due work (scheduler)' : q}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => setRound((r) => r + 1)}>
          Refresh
        </button>
        {list.length > 0 &&
          (confirmAll ? (
            <>
              <button
                type="button"
                class="danger"
                disabled={busy}
                onClick={() => redrive({ all: 1, ...(taskId ? { task_id: taskId } : {}) })}
              >
                Confirm: redrive all{taskId ? ' of this task' : ''}
              </button>
              <button type="button" onClick={() => setConfirmAll(false)}>
                Cancel
              </button>
            </>
          ) : (
            <button type="button" disabled={busy} onClick={() => setConfirmAll(true)}>
              Redrive all…
            </button>
          ))}
      </form>
      {message && <Notice>{message}</Notice>}
      {error !== undefined && <ErrorBox error={error} />}
      {state.error !== undefined && <ErrorBox error={state.error} onRetry={state.reload} />}
      {state.loading && !state.data && <Loading what="Reading the dead-letter queue" />}
      {state.data?.note && <p class="muted">{state.data.note}</p>}
      {state.data && list.length === 0 && (
        <p class="empty">
          The {queue} dead-letter queue is empty{taskId ? ' for this task' : ''}.
        </p>
      )}
      {list.length > 0 && (
        <table class="grid dlq">
          <thead>
            <tr>
              <th scope="col">What</th>
              <th scope="col">Task</th>
              <th scope="col">Attempts</th>
              <th scope="col">Last failure</th>
              <th scope="col">Reason</th>
              <th scope="col">
                <span class="sr-only">Redrive</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.map((d) => (
              <tr key={d.message_id} data-message-id={d.message_id}>
                <td>
                  <code>{carried(d)}</code>
                </td>
                <td>{d.task_id ? <a href={href('tasks', d.task_id)}>#{d.task_id}</a> : '—'}</td>
                <td>{d.attempts}</td>
                <td>
                  <Time s={d.last_failure_at} />
                </td>
                <td>
                  {d.reason ? (
                    <>
                      {d.reason.outcome} (attempt {d.reason.attempt}) {answer(d.reason)}{' '}
                      {d.reason.target && <code>{d.reason.target}</code>}
                    </>
                  ) : (
                    <span class="muted">no attempt recorded</span>
                  )}
                </td>
                <td>
                  <button type="button" disabled={busy} onClick={() => redrive({ message_id: d.message_id })}>
                    Redrive
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {state.data?.more && (
        <p class="muted">More dead letters than shown: redrive these, or narrow the list.</p>
      )}
    </section>
  );
}

/** A task's deliveries: attempts, test-send, template preview, and (role 9) its dead letters. */
export function DeliveriesPage({ taskId, route, admin }: { taskId: number; route: Route; admin: boolean }) {
  const queue = route.query.get('queue') ?? 'webhook';
  return (
    <main id="main">
      <TaskHead taskId={taskId} current="deliveries" title="Deliveries" />
      <div class="two">
        <TestSend taskId={taskId} />
        <TemplatePreview taskId={taskId} route={route} />
      </div>
      <Attempts taskId={taskId} />
      {admin ? (
        <DeadLetters
          taskId={taskId}
          queue={queue}
          onQueue={(q) => navigate(href('tasks', taskId, 'deliveries', { queue: q }))}
        />
      ) : (
        <p class="muted">Dead letters are shown to super administrators (role 9).</p>
      )}
    </main>
  );
}

/** Every dead letter of a queue (role 9). */
export function DeadLettersPage({ route }: { route: Route }) {
  const queue = route.query.get('queue') ?? 'webhook';
  return (
    <main id="main">
      <PageHead
        title="Dead letters"
        sub="Messages the service gave up on, across every task; redrive them once the cause is fixed."
      />
      <DeadLetters queue={queue} onQueue={(q) => navigate(href('dead-letters', { queue: q }))} />
    </main>
  );
}
