import { useState } from 'preact/hooks';
import { get, put } from '../api.ts';
import { compact, summary } from '../format.ts';
import { href } from '../router.ts';
import type { AlarmList, DeliveryList, TaskDetail, TaskOncall, WorkflowList } from '../types.ts';
import {
  AttemptBadge,
  ErrorBox,
  LevelBadge,
  Loaded,
  Notice,
  OutcomeBadge,
  PageHead,
  TaskStatusBadge,
  TaskTabs,
  Time,
  useAsync,
  WorkflowStatusBadge,
} from '../ui.tsx';
import { Configuration } from './config.tsx';

/** Reads one task's configuration (shared by the task's pages for their headings). */
export function useTask(taskId: number) {
  return useAsync(() => get<{ task: TaskDetail }>('/alarmtask/view', { task_id: taskId }), `task ${taskId}`);
}

/** The heading of every task page: name, status, tabs. */
export function TaskHead({ taskId, current, title }: { taskId: number; current: string; title: string }) {
  const task = useTask(taskId);
  const t = task.data?.task;
  return (
    <>
      <PageHead
        title={
          <>
            {title}
            {t ? `: ${t.name}` : ''}
          </>
        }
        sub={
          t ? (
            <>
              Task #{t.id} · <TaskStatusBadge status={t.status} until={t.paused_until} />
              {t.department ? ` · ${t.department.name}` : ''}
            </>
          ) : (
            `Task #${taskId}`
          )
        }
      />
      {task.error !== undefined && <ErrorBox error={task.error} onRetry={task.reload} />}
      <TaskTabs taskId={taskId} current={current} />
    </>
  );
}

/** Stop, start or pause (PUT /alarmtask/status, read-write permission); a stop asks to be confirmed. */
function StatusControls({ task, onChanged }: { task: TaskDetail; onChanged: () => void }) {
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState('');
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const act = async (action: 'stop' | 'start' | 'pause', time?: number) => {
    setBusy(true);
    setError(undefined);
    setDone('');
    try {
      await put('/alarmtask/status', {
        task_id: task.id,
        action,
        ...(time ? { time } : {}),
      });
      setDone(
        action === 'stop'
          ? 'Task stopped.'
          : action === 'start'
            ? 'Task started.'
            : `Task paused for ${time} min.`,
      );
      setConfirming(false);
      onChanged();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const pause = (e: Event) => {
    e.preventDefault();
    const minutes = Number(new FormData(e.currentTarget as HTMLFormElement).get('minutes'));
    void act('pause', minutes);
  };
  return (
    <div class="status-controls">
      <div class="row">
        {task.status !== 1 && (
          <button type="button" class="primary" disabled={busy} onClick={() => act('start')}>
            Start
          </button>
        )}
        {task.status !== 0 &&
          (confirming ? (
            <>
              <button type="button" class="danger" disabled={busy} onClick={() => act('stop')}>
                Confirm stop
              </button>
              <button type="button" onClick={() => setConfirming(false)}>
                Cancel
              </button>
            </>
          ) : (
            <button type="button" class="danger" disabled={busy} onClick={() => setConfirming(true)}>
              Stop…
            </button>
          ))}
        <form class="inline" onSubmit={pause}>
          <label>
            Pause for
            <input
              name="minutes"
              type="number"
              min={1}
              max={10080}
              defaultValue="30"
              required
              class="narrow"
            />
            min
          </label>
          <button type="submit" disabled={busy}>
            Pause
          </button>
        </form>
      </div>
      {confirming && <p class="warn">A stopped task refuses every alarm until it is started again.</p>}
      {done && <Notice>{done}</Notice>}
      {error !== undefined && <ErrorBox error={error} />}
    </div>
  );
}

function RecentAlarms({ taskId }: { taskId: number }) {
  const state = useAsync(
    () => get<AlarmList>('/alarmtask/alarms', { task_id: taskId, limit: 5 }),
    `a${taskId}`,
  );
  return (
    <section class="card">
      <h2>
        Recent alarms{' '}
        <a class="h-link" href={href('tasks', taskId, 'alarms')}>
          all, live
        </a>
      </h2>
      <Loaded state={state}>
        {(d) =>
          d.alarms.length === 0 ? (
            <p class="empty">No alarm in the last 31 days.</p>
          ) : (
            <ul class="list">
              {d.alarms.map((a) => (
                <li key={a.uuid}>
                  <LevelBadge level={a.level} /> <OutcomeBadge outcome={a.outcome} />{' '}
                  <a href={href('tasks', taskId, 'alarms', a.uuid)} title={compact(a.ctn ?? a.uuid, 400)}>
                    {a.ctn ? summary(a.ctn, 60) : a.uuid}
                  </a>{' '}
                  <Time s={a.created_at} />
                </li>
              ))}
            </ul>
          )
        }
      </Loaded>
    </section>
  );
}

function RecentWorkflows({ taskId }: { taskId: number }) {
  const state = useAsync(
    () => get<WorkflowList>('/workflow/list', { task_id: taskId, limit: 5 }),
    `w${taskId}`,
  );
  return (
    <section class="card">
      <h2>
        Recent workflows{' '}
        <a class="h-link" href={href('tasks', taskId, 'workflows')}>
          board
        </a>
      </h2>
      <Loaded state={state}>
        {(d) =>
          d.workflows.length === 0 ? (
            <p class="empty">No workflow.</p>
          ) : (
            <ul class="list">
              {d.workflows.map((w) => (
                <li key={w.id}>
                  <a href={href('tasks', taskId, 'workflows', w.id)}>#{w.id}</a>{' '}
                  <WorkflowStatusBadge status={w.status} /> {summary(w.history?.ctn ?? '', 50)}{' '}
                  <Time s={w.created_at} />
                </li>
              ))}
            </ul>
          )
        }
      </Loaded>
    </section>
  );
}

function RecentDeliveries({ taskId }: { taskId: number }) {
  const state = useAsync(
    () => get<DeliveryList>('/alarmtask/deliveries', { task_id: taskId, limit: 5 }),
    `d${taskId}`,
  );
  return (
    <section class="card">
      <h2>
        Recent deliveries{' '}
        <a class="h-link" href={href('tasks', taskId, 'deliveries')}>
          all
        </a>
      </h2>
      <Loaded state={state}>
        {(d) =>
          d.deliveries.length === 0 ? (
            <p class="empty">No delivery attempt.</p>
          ) : (
            <ul class="list">
              {d.deliveries.map((x) => (
                <li key={`${x.id}#${x.attempt}#${x.at_ms}`}>
                  <AttemptBadge outcome={x.outcome} />{' '}
                  {x.kind === 'webhook' ? `webhook ${x.event}` : `${x.channel} ${x.scene}`}{' '}
                  <span class="muted">attempt {x.attempt}</span>{' '}
                  {x.error && <span class="muted">{x.error}</span>} <Time s={x.at} />
                </li>
              ))}
            </ul>
          )
        }
      </Loaded>
    </section>
  );
}

/** Who the task pages now, for each receiver that names a schedule (nothing when none does). */
function OncallNow({ taskId }: { taskId: number }) {
  const state = useAsync(
    () => get<TaskOncall>('/alarmtask/oncall', { task_id: taskId, days: 1 }),
    `o${taskId}`,
  );
  if (state.error === undefined && (state.data?.receivers.length ?? 0) === 0) return null;
  return (
    <section class="card oncall-now">
      <h2>On call now</h2>
      <Loaded state={state}>
        {(d) => (
          <ul class="list">
            {d.receivers.map((r) => (
              <li key={`${r.path}:${r.schedule.id}`}>
                <a href={href('schedules', r.schedule.id)}>{r.schedule.name}</a>:{' '}
                {r.on_call_now.length ? r.on_call_now.map((p) => p.username).join(', ') : 'nobody (a gap)'}{' '}
                <span class="muted">
                  by {r.channels.join(', ')} · {r.path}
                </span>
              </li>
            ))}
          </ul>
        )}
      </Loaded>
    </section>
  );
}

/** A task: status and its controls, what happened lately, and its configuration in readable form. */
export function TaskPage({ taskId }: { taskId: number }) {
  const state = useTask(taskId);
  return (
    <main id="main">
      <Loaded state={state}>
        {({ task }) => (
          <>
            <PageHead
              title={task.name}
              sub={
                <>
                  Task #{task.id} · <TaskStatusBadge status={task.status} until={task.paused_until} />
                  {task.department ? ` · ${task.department.name}` : ''}
                  {(task.task_tags ?? []).map((t: { id: number; name: string }) => (
                    <a key={t.id} class="chip" href={href('tasks', { tag_id: t.id })}>
                      {t.name}
                    </a>
                  ))}
                </>
              }
              actions={<StatusControls task={task} onChanged={state.reload} />}
            />
            <TaskTabs taskId={taskId} current="" />
            <OncallNow taskId={taskId} />
            <div class="recent">
              <RecentAlarms taskId={taskId} />
              <RecentWorkflows taskId={taskId} />
              <RecentDeliveries taskId={taskId} />
            </div>
            <h2>Configuration</h2>
            <Configuration task={task} />
          </>
        )}
      </Loaded>
    </main>
  );
}
