import { useEffect, useRef, useState } from 'preact/hooks';
import { get, getFilled } from '../api.ts';
import { type Route, href, navigate } from '../router.ts';
import type { Counts, DepartmentList, TaskList, TaskSummary, WorkflowCountList } from '../types.ts';
import { ErrorBox, Loading, More, PageHead, TaskStatusBadge, Time, useAsync } from '../ui.tsx';

const FILTERS = ['q', 'department_id', 'status', 'tag_id'] as const;

/** The tasks the acting user may read: search by name or pinyin prefix, department, status, tag. */
export function TasksPage({ route }: { route: Route }) {
  const filter = Object.fromEntries(
    FILTERS.map((k) => [k, route.query.get(k) ?? undefined]).filter(([, v]) => v),
  ) as Partial<Record<(typeof FILTERS)[number], string>>;
  const key = JSON.stringify(filter);
  const departments = useAsync(() => get<DepartmentList>('/department/simple'), 'departments');
  const [tasks, setTasks] = useState<TaskSummary[]>([]);
  const [counts, setCounts] = useState<Record<number, Counts>>({});
  const [cursor, setCursor] = useState('');
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<unknown>();
  const [tagNames, setTagNames] = useState<Record<string, string>>({});

  // Only the newest request's answer counts (a slower earlier one must not overwrite it).
  const generation = useRef(0);
  const load = async (after: string, replace: boolean) => {
    const gen = ++generation.current;
    setLoading(true);
    setError(undefined);
    try {
      const page = await getFilled<TaskList>(
        '/alarmtask/list',
        { ...filter, cursor: after || undefined },
        'tasks',
        50,
      );
      if (gen !== generation.current) return;
      setTasks((old) => (replace ? page.tasks : [...old, ...page.tasks]));
      setCursor(page.next_cursor);
      const names: Record<string, string> = {};
      for (const t of page.tasks) for (const tag of t.tags) names[tag.id] = tag.name;
      setTagNames((old) => ({ ...old, ...names }));
      if (page.tasks.length > 0) {
        // The counts are an extra: a task deleted meanwhile (404) leaves them out, not the page.
        const c = await get<WorkflowCountList>('/workflow/counts', {
          task_ids: page.tasks.map((t) => t.id).join(','),
        }).catch(() => ({ counts: [] as Counts[] }));
        if (gen !== generation.current) return;
        setCounts((old) => ({ ...old, ...Object.fromEntries(c.counts.map((x) => [x.task_id, x])) }));
      }
    } catch (err) {
      if (gen === generation.current) setError(err);
    } finally {
      if (gen === generation.current) setLoading(false);
    }
  };

  useEffect(() => {
    setTasks([]);
    setCursor('');
    void load('', true);
  }, [key]);

  const submit = (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const next: Record<string, string | undefined> = { tag_id: filter.tag_id };
    for (const k of ['q', 'department_id', 'status'] as const)
      next[k] = String(form.get(k) ?? '').trim() || undefined;
    navigate(href('tasks', next));
  };

  return (
    <main id="main">
      <PageHead title="Tasks" sub="Every task you may read; search by name or its pinyin." />
      <form class="filters" onSubmit={submit}>
        <label>
          Search
          <input name="q" type="search" defaultValue={filter.q ?? ''} placeholder="name or pinyin prefix" />
        </label>
        <label>
          Department
          <select
            name="department_id"
            defaultValue={filter.department_id ?? ''}
            key={`d${departments.data ? 1 : 0}`}
          >
            <option value="">any</option>
            {(departments.data?.departments ?? []).map((d) => (
              <option key={d.id} value={d.id}>
                {d.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Status
          <select name="status" defaultValue={filter.status ?? ''}>
            <option value="">any</option>
            <option value="1">running</option>
            <option value="2">paused</option>
            <option value="0">stopped</option>
          </select>
        </label>
        <button type="submit" class="primary">
          Search
        </button>
        {filter.tag_id && (
          <a class="chip" href={href('tasks', { ...filter, tag_id: undefined })}>
            tag: {tagNames[filter.tag_id] ?? filter.tag_id} <span aria-hidden="true">×</span>
            <span class="sr-only">(remove this filter)</span>
          </a>
        )}
      </form>
      {error !== undefined && <ErrorBox error={error} onRetry={() => load(cursor, tasks.length === 0)} />}
      {tasks.length === 0 && loading && <Loading what="Loading tasks" />}
      {tasks.length === 0 && !loading && error === undefined && (
        <p class="empty">{cursor ? 'None found yet: load more to search further.' : 'No task matches.'}</p>
      )}
      {tasks.length > 0 && (
        <table class="grid">
          <thead>
            <tr>
              <th scope="col">Task</th>
              <th scope="col">Status</th>
              <th scope="col">Department</th>
              <th scope="col">Tags</th>
              <th scope="col">Open workflows</th>
              <th scope="col">Access</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {tasks.map((t) => {
              const c = counts[t.id];
              return (
                <tr key={t.id}>
                  <td>
                    <a href={href('tasks', t.id)}>{t.name}</a> <span class="muted">#{t.id}</span>
                  </td>
                  <td>
                    <TaskStatusBadge status={t.status} until={t.paused_until} />
                  </td>
                  <td>{t.department.name || `#${t.department.id}`}</td>
                  <td>
                    {t.tags.map((tag) => (
                      <a key={tag.id} class="chip" href={href('tasks', { ...filter, tag_id: tag.id })}>
                        {tag.name || `#${tag.id}`}
                      </a>
                    ))}
                  </td>
                  <td>
                    {c ? (
                      <a href={href('tasks', t.id, 'workflows')}>
                        {c.pending} pending · {c.processing} processing
                      </a>
                    ) : (
                      <span class="muted">—</span>
                    )}
                  </td>
                  <td>{t.access}</td>
                  <td>
                    <Time s={t.updated_at} />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <More cursor={cursor} loading={loading} onMore={() => load(cursor, false)} />
    </main>
  );
}
