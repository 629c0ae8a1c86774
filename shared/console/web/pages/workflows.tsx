import { useEffect, useRef, useState } from 'preact/hooks';
import { get, getFilled, put } from '../api.ts';
import { compact, dateTime, PIPELINE_STATUS, plural, summary, WORKFLOW_STATUS } from '../format.ts';
import { href } from '../router.ts';
import type {
  Counts,
  Workflow,
  WorkflowCountList,
  WorkflowDetail,
  WorkflowList,
  WorkflowsOperated,
} from '../types.ts';
import {
  ErrorBox,
  LevelBadge,
  Loaded,
  Loading,
  More,
  Notice,
  PageHead,
  Person,
  TaskTabs,
  Time,
  useAsync,
  WorkflowStatusBadge,
} from '../ui.tsx';
import { TaskHead } from './task.tsx';

type Op = 'claim' | 'assign' | 'processed' | 'close' | 'reactive';

/** The batch operations (API guide §10.2): from which statuses each may run, and what it is called here. */
const OPS: { op: Op; label: string; from: number[]; done: string }[] = [
  { op: 'claim', label: 'Claim', from: [0], done: 'claimed' },
  { op: 'assign', label: 'Assign', from: [0, 1], done: 'assigned' },
  { op: 'processed', label: 'Finish', from: [1], done: 'finished' },
  { op: 'close', label: 'Close', from: [0, 1], done: 'closed' },
  { op: 'reactive', label: 'Reactivate', from: [9], done: 'reactivated' },
];
/** The most ids one batch request takes. */
const MAX_BATCH = 49;
const STATUSES = [0, 1, 2, 9];

/**
 * Claim, assign, finish, close or reactivate the selected workflows in one request (the batch
 * endpoints; the acting user is `created_by`). A remark is required for all but claim.
 */
function WorkflowActions({
  selected,
  onDone,
}: {
  selected: Pick<Workflow, 'id' | 'status'>[];
  onDone: (message: string) => void;
}) {
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const remarkRef = useRef<HTMLInputElement>(null);
  const assignRef = useRef<HTMLInputElement>(null);
  const [problem, setProblem] = useState('');

  const run = async (spec: (typeof OPS)[number]) => {
    setError(undefined);
    setProblem('');
    const remark = remarkRef.current?.value.trim() ?? '';
    if (spec.op !== 'claim' && !remark) {
      setProblem(`A remark is required to ${spec.label.toLowerCase()}.`);
      remarkRef.current?.focus();
      return;
    }
    const body: Record<string, unknown> = {
      ids: selected.map((w) => w.id),
      ...(remark ? { remark } : {}),
    };
    if (spec.op === 'assign') {
      const uids = (assignRef.current?.value ?? '')
        .split(/[\s,]+/)
        .filter(Boolean)
        .map(Number);
      if (uids.length === 0 || uids.some((u) => !Number.isSafeInteger(u) || u < 1)) {
        setProblem('Name the users to assign to: uids separated by commas.');
        assignRef.current?.focus();
        return;
      }
      body.assignto = [...new Set(uids)];
    }
    setBusy(true);
    try {
      const out = await put<WorkflowsOperated>(`/workflow/${spec.op}`, body);
      if (remarkRef.current) remarkRef.current.value = '';
      onDone(
        `${plural(out.workflows.length, 'workflow')} ${spec.done}: ${out.workflows.map((w) => `#${w.id}`).join(', ')}.`,
      );
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  const submit = (e: Event) => {
    e.preventDefault();
    // Enter in the form: the one operation that fits the selection, if only one does (else nothing).
    const fitting = OPS.filter((o) => allowed(o));
    if (fitting.length === 1) void run(fitting[0]);
    else setProblem('Choose an operation with its button.');
  };

  const allowed = (spec: (typeof OPS)[number]) =>
    selected.length > 0 &&
    selected.length <= MAX_BATCH &&
    selected.every((w) => spec.from.includes(w.status));

  return (
    <form class="card actions-bar" onSubmit={submit} aria-label="Workflow operations">
      <p>
        {selected.length === 0
          ? 'Select workflows to act on them.'
          : `${plural(selected.length, 'workflow')} selected${selected.length > MAX_BATCH ? ` (at most ${MAX_BATCH} at once)` : ''}.`}
      </p>
      <div class="row">
        <label>
          Remark
          <input ref={remarkRef} name="remark" maxLength={200} placeholder="what was done, or why" />
        </label>
        <label>
          Assign to (uids)
          <input ref={assignRef} name="assignto" placeholder="e.g. 2, 4" class="narrow" />
        </label>
      </div>
      <div class="row">
        {OPS.map((spec) => (
          <button
            key={spec.op}
            type="button"
            class={spec.op === 'close' ? 'danger' : spec.op === 'processed' ? 'primary' : undefined}
            disabled={busy || !allowed(spec)}
            title={`${spec.label}: for ${spec.from.map((s) => WORKFLOW_STATUS[s]).join(' or ')} workflows`}
            onClick={() => run(spec)}
          >
            {spec.label}
          </button>
        ))}
      </div>
      {problem && (
        <p class="warn" role="alert">
          {problem}
        </p>
      )}
      {error !== undefined && <ErrorBox error={error} />}
    </form>
  );
}

interface Column {
  items: Workflow[];
  cursor: string;
  loading: boolean;
  error?: unknown;
}

function Card({
  w,
  taskId,
  checked,
  onToggle,
}: {
  w: Workflow;
  taskId: number;
  checked: boolean;
  onToggle: () => void;
}) {
  return (
    <li class={`wf-card${checked ? ' selected' : ''}`}>
      <label class="pick">
        <input type="checkbox" checked={checked} onChange={onToggle} />
        <span class="sr-only">Select workflow #{w.id}</span>
      </label>
      <div>
        <a href={href('tasks', taskId, 'workflows', w.id)}>#{w.id}</a>{' '}
        {w.history && <LevelBadge level={w.history.level} />}{' '}
        <span class="muted">{dateTime(w.created_at)}</span>
        <p class="content" title={compact(w.history?.ctn ?? '', 400)}>
          {summary(w.history?.ctn ?? '')}
        </p>
        {(w.claimer || (w.assignees ?? []).length > 0) && (
          <p class="muted">
            {w.claimer && (
              <>
                claimed by <Person user={w.claimer} />
              </>
            )}
            {(w.assignees ?? []).length > 0 && (
              <>
                {w.claimer ? ' · ' : ''}assigned to{' '}
                {(w.assignees ?? []).map((u, i) => (
                  <span key={u.uid}>
                    {i > 0 && ', '}
                    <Person user={u} />
                  </span>
                ))}
              </>
            )}
          </p>
        )}
      </div>
    </li>
  );
}

/** A task's workflows by status, with multi-select and the batch operations. */
export function WorkflowsPage({ taskId }: { taskId: number }) {
  const [columns, setColumns] = useState<Record<number, Column>>({});
  const [counts, setCounts] = useState<Counts>();
  const [selected, setSelected] = useState<Map<number, Workflow['status']>>(new Map());
  const [message, setMessage] = useState('');
  const [round, setRound] = useState(0);

  // Per column, only the newest request's answer counts (a reload must not be overwritten by a slow one).
  const generations = useRef<Record<number, number>>({});
  const loadColumn = async (status: number, cursor: string) => {
    const gen = (generations.current[status] ?? 0) + 1;
    generations.current[status] = gen;
    setColumns((c) => ({ ...c, [status]: { ...(c[status] ?? { items: [], cursor: '' }), loading: true } }));
    try {
      const page = await getFilled<WorkflowList>(
        '/workflow/list',
        { task_id: taskId, status, cursor: cursor || undefined },
        'workflows',
        20,
      );
      if (gen !== generations.current[status]) return;
      setColumns((c) => ({
        ...c,
        [status]: {
          items: cursor ? [...(c[status]?.items ?? []), ...page.workflows] : page.workflows,
          cursor: page.next_cursor,
          loading: false,
        },
      }));
    } catch (error) {
      if (gen !== generations.current[status]) return;
      setColumns((c) => ({
        ...c,
        [status]: { items: c[status]?.items ?? [], cursor, loading: false, error },
      }));
    }
  };

  useEffect(() => {
    for (const s of STATUSES) void loadColumn(s, '');
    get<WorkflowCountList>('/workflow/counts', { task_id: taskId }).then(
      (c) => setCounts(c.counts[0]),
      () => setCounts(undefined),
    );
  }, [taskId, round]);

  const toggle = (w: Workflow) =>
    setSelected((old) => {
      const next = new Map(old);
      if (next.has(w.id)) next.delete(w.id);
      else next.set(w.id, w.status);
      return next;
    });

  const countOf = (s: number) => (counts ? counts[WORKFLOW_STATUS[s]] : undefined);

  return (
    <main id="main">
      <TaskHead taskId={taskId} current="workflows" title="Workflows" />
      <WorkflowActions
        selected={[...selected].map(([id, status]) => ({ id, status }))}
        onDone={(m) => {
          setMessage(m);
          setSelected(new Map());
          setRound((r) => r + 1);
        }}
      />
      {message && <Notice>{message}</Notice>}
      <div class="board">
        {STATUSES.map((s) => {
          const col = columns[s];
          const n = countOf(s);
          return (
            <section key={s} class={`column wf-col-${s}`} aria-labelledby={`col-${s}`}>
              <h2 id={`col-${s}`}>
                {WORKFLOW_STATUS[s]} {n !== undefined && <span class="count">{n}</span>}
              </h2>
              {col?.error !== undefined && (
                <ErrorBox error={col.error} onRetry={() => loadColumn(s, col.cursor)} />
              )}
              {!col || (col.loading && col.items.length === 0) ? (
                <Loading />
              ) : col.items.length === 0 ? (
                <p class="empty">none</p>
              ) : (
                <ul class="cards">
                  {col.items.map((w) => (
                    <Card
                      key={w.id}
                      w={w}
                      taskId={taskId}
                      checked={selected.has(w.id)}
                      onToggle={() => toggle(w)}
                    />
                  ))}
                </ul>
              )}
              {col && (
                <More cursor={col.cursor} loading={col.loading} onMore={() => loadColumn(s, col.cursor)} />
              )}
            </section>
          );
        })}
      </div>
    </main>
  );
}

/** One workflow: its alarm, its pipeline history, and the operations on it. */
export function WorkflowPage({ taskId, id }: { taskId: number; id: number }) {
  const state = useAsync(() => get<{ workflow: WorkflowDetail }>('/workflow/show', { id }), `wf ${id}`);
  const [message, setMessage] = useState('');
  return (
    <main id="main">
      <Loaded state={state}>
        {({ workflow: w }) => {
          // /workflow/show is authorised by the app alone: show a workflow only under its own task.
          if (w.task?.id !== taskId)
            return (
              <p class="empty">
                Workflow #{id} does not belong to task {taskId}.
              </p>
            );
          const ctn = (() => {
            try {
              return JSON.parse(w.history?.ctn ?? '') as unknown;
            } catch {
              return w.history?.ctn;
            }
          })();
          return (
            <>
              <PageHead
                title={`Workflow #${w.id}`}
                sub={
                  <>
                    {w.task.name} · <WorkflowStatusBadge status={w.status} /> · opened{' '}
                    {dateTime(w.created_at)}
                  </>
                }
                actions={
                  <a class="button" href={href('tasks', taskId, 'workflows')}>
                    Back to the board
                  </a>
                }
              />
              <TaskTabs taskId={taskId} current="workflows" />
              <WorkflowActions
                selected={[{ id: w.id, status: w.status }]}
                onDone={(m) => {
                  setMessage(m);
                  state.reload();
                }}
              />
              {message && <Notice>{message}</Notice>}
              <div class="trace">
                <section class="card">
                  <h2>Pipeline history</h2>
                  <ol class="timeline">
                    {(w.pipelines ?? []).map((p, i) => (
                      <li
                        key={i}
                        class={`step ${p.status === 9 ? 'bad' : p.status === 2 ? 'good' : 'neutral'}`}
                      >
                        <div class="step-head">
                          <strong>{PIPELINE_STATUS[p.status] ?? `status ${p.status}`}</strong>
                          <span class="muted">{dateTime(p.created_at)}</span>
                        </div>
                        <p>
                          by{' '}
                          {p.creator ? (
                            <Person user={p.creator} />
                          ) : p.created_by === 0 ? (
                            'the service'
                          ) : (
                            `uid ${p.created_by}`
                          )}
                          {p.props.assignto && (
                            <>
                              {' '}
                              · to{' '}
                              {p.props.assignto.map((u, j) => (
                                <span key={u.uid}>
                                  {j > 0 && ', '}
                                  <Person user={u} />
                                </span>
                              ))}
                            </>
                          )}
                          {p.props.remind && ` · reminder every ${p.props.remind.interval} min`}
                        </p>
                        {p.remark && <blockquote>{p.remark}</blockquote>}
                      </li>
                    ))}
                  </ol>
                </section>
                <section class="card">
                  <h2>The alarm</h2>
                  {w.history ? (
                    <>
                      <p>
                        <LevelBadge level={w.history.level} /> <Time s={w.history.notice_time} />{' '}
                        <a href={href('tasks', taskId, 'alarms', w.history.uuid)}>its trace</a>
                      </p>
                      <pre class="json">{JSON.stringify(ctn, null, 2)}</pre>
                    </>
                  ) : (
                    <p class="muted">not stored</p>
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
