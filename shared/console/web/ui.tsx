import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, dropSession } from './api.ts';
import { ago, dateTime, LEVELS, outcomeLabel, TASK_STATUS, WORKFLOW_STATUS } from './format.ts';
import { href } from './router.ts';

// ---- Loading data -------------------------------------------------------------------------------

export interface Async<T> {
  data?: T;
  error?: unknown;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` when `key` changes (and on reload); the latest answer wins. */
export function useAsync<T>(load: () => Promise<T>, key: string): Async<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [round, setRound] = useState(0);
  const loader = useRef(load);
  loader.current = load;
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true, error: undefined }));
    loader.current().then(
      (data) => live && setState({ data, loading: false }),
      (error: unknown) => live && setState({ error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [key, round]);
  const reload = useCallback(() => setRound((r) => r + 1), []);
  return { ...state, reload };
}

/** Calls `tick` every `ms` while `on` (and the tab is visible). */
export function useInterval(tick: () => void, ms: number, on = true): void {
  const saved = useRef(tick);
  saved.current = tick;
  useEffect(() => {
    if (!on) return;
    const id = window.setInterval(() => {
      if (document.visibilityState === 'visible') saved.current();
    }, ms);
    return () => window.clearInterval(id);
  }, [ms, on]);
}

// ---- Errors -------------------------------------------------------------------------------------

export interface Explained {
  title: string;
  detail?: string;
  signIn?: boolean;
}

/** What an error means for the person looking at it, and what to do. */
export function explain(error: unknown): Explained {
  if (!(error instanceof ApiError)) {
    return { title: 'Something went wrong in the console', detail: String(error) };
  }
  const { status, msg } = error;
  if (status === 0) {
    return { title: 'Cannot reach the service', detail: `${msg}. Check the connection and try again.` };
  }
  if (status === 401) {
    return {
      title: `Sign-in refused: ${msg}`,
      detail: 'Check the account (your name in the directory, or your e-mail address) and the password.',
      signIn: true,
    };
  }
  if (status === 403) {
    return {
      title: `Not allowed: ${msg}`,
      detail: 'You have no permission for this. Ask an owner of the task, or a super administrator.',
    };
  }
  if (status === 404) return { title: `Not found: ${msg}` };
  if (status === 409) {
    return {
      title: `Conflict: ${msg}`,
      detail:
        'Nothing was changed. The state moved on since this page loaded: refresh, check it, then try again.',
    };
  }
  if (status === 422) return { title: `Invalid input: ${msg}` };
  if (status === 429) return { title: `Refused for now: ${msg}`, detail: 'Wait, then try again.' };
  return {
    title: `The service failed: ${msg} (HTTP ${status})`,
    detail: 'Try again; if it persists, check the service logs.',
  };
}

export function ErrorBox({
  error,
  onRetry,
  offerSignIn = true,
}: {
  error: unknown;
  onRetry?: () => void;
  /** Off on the sign-in page itself. */
  offerSignIn?: boolean;
}) {
  const e = explain(error);
  if (!offerSignIn) e.signIn = false;
  const fields = error instanceof ApiError && error.fields.length > 1 ? error.fields : [];
  return (
    <div class="alert error" role="alert">
      <strong>{e.title}</strong>
      {e.detail && <p>{e.detail}</p>}
      {fields.length > 0 && (
        <ul>
          {fields.map((f) => (
            <li key={f.field}>
              {f.field}: {f.message}
            </li>
          ))}
        </ul>
      )}
      {(e.signIn || onRetry) && (
        <p class="actions">
          {e.signIn && (
            <button type="button" onClick={() => dropSession('ended')}>
              Sign in again
            </button>
          )}
          {onRetry && (
            <button type="button" onClick={onRetry}>
              Retry
            </button>
          )}
        </p>
      )}
    </div>
  );
}

/** A success message, announced politely. */
export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <div class="alert ok" role="status">
      {children}
    </div>
  );
}

export function Loading({ what = 'Loading' }: { what?: string }) {
  return (
    <p class="loading" aria-busy="true">
      {what}…
    </p>
  );
}

/** Data, its loading state or its error (with a retry). */
export function Loaded<T>({
  state,
  children,
}: {
  state: Async<T>;
  children: (data: T) => ComponentChildren;
}) {
  if (state.error) return <ErrorBox error={state.error} onRetry={state.reload} />;
  if (state.data === undefined) return <Loading />;
  return <>{children(state.data)}</>;
}

// ---- Small pieces -------------------------------------------------------------------------------

export function Time({ s, relative = true }: { s?: number; relative?: boolean }) {
  if (!s) return <span class="muted">—</span>;
  const iso = new Date(s * 1000).toISOString();
  return (
    <time dateTime={iso} title={iso}>
      {dateTime(s)}
      {relative && <span class="muted"> · {ago(s)}</span>}
    </time>
  );
}

export function LevelBadge({ level }: { level: number }) {
  const name = LEVELS[level] ?? `level ${level}`;
  return <span class={`badge level-${level}`}>{name}</span>;
}

export function OutcomeBadge({ outcome }: { outcome: string }) {
  return (
    <span
      class={`badge outcome-${outcome}`}
      title={outcome === 'notified' ? 'sent to its receivers: the trace shows who was reached' : undefined}
    >
      {outcomeLabel(outcome)}
    </span>
  );
}

export function TaskStatusBadge({ status, until }: { status: number; until?: number }) {
  return (
    <span class={`badge task-${status}`}>
      {TASK_STATUS[status] ?? status}
      {status === 2 && until ? ` until ${dateTime(until)}` : ''}
    </span>
  );
}

export function WorkflowStatusBadge({ status }: { status: number }) {
  return <span class={`badge wf-${status}`}>{WORKFLOW_STATUS[status] ?? status}</span>;
}

export function AttemptBadge({ outcome }: { outcome: string }) {
  const cls = outcome === 'delivered' ? 'good' : outcome === 'skipped' ? 'neutral' : 'bad';
  return <span class={`badge ${cls}`}>{outcome}</span>;
}

export function Json({ value }: { value: unknown }) {
  return <pre class="json">{typeof value === 'string' ? value : JSON.stringify(value, null, 2)}</pre>;
}

/** A page's heading (focused on navigation, so keyboard and screen reader users land on it). */
export function PageHead({
  title,
  sub,
  actions,
}: {
  title: ComponentChildren;
  sub?: ComponentChildren;
  actions?: ComponentChildren;
}) {
  return (
    <header class="page-head">
      <div>
        <h1 tabIndex={-1}>{title}</h1>
        {sub && <p class="sub">{sub}</p>}
      </div>
      {actions && <div class="head-actions">{actions}</div>}
    </header>
  );
}

/** The tabs of a task's pages. */
export function TaskTabs({ taskId, current }: { taskId: number; current: string }) {
  const tabs: [string, string][] = [
    ['', 'Overview'],
    ['alarms', 'Alarms'],
    ['workflows', 'Workflows'],
    ['deliveries', 'Deliveries'],
    ['charts', 'Charts'],
  ];
  return (
    <nav class="tabs" aria-label="Task pages">
      {tabs.map(([path, label]) => (
        <a
          key={path}
          href={path ? href('tasks', taskId, path) : href('tasks', taskId)}
          aria-current={current === path ? 'page' : undefined}
        >
          {label}
        </a>
      ))}
    </nav>
  );
}

/** `Load more` for cursor-paged lists. */
export function More({ cursor, loading, onMore }: { cursor?: string; loading: boolean; onMore: () => void }) {
  if (!cursor) return null;
  return (
    <p class="more">
      <button type="button" onClick={onMore} disabled={loading}>
        {loading ? 'Loading…' : 'Load more'}
      </button>
    </p>
  );
}

/** A user as the API shows one (`{uid, username}`), a group (`{id, name}`), a bare uid, or nobody. */
export type PersonLike = { uid: number; username: string } | { id: number; name: string } | number | null;

/** A user as the API shows one: `{uid, username}` or a bare uid. */
export function Person({ user }: { user: PersonLike | undefined }) {
  if (typeof user === 'number') return <span>uid {user}</span>;
  if (user && 'username' in user) return <span title={`uid ${user.uid}`}>{user.username}</span>;
  if (user) return <span title={`id ${user.id}`}>{user.name}</span>;
  return <span class="muted">—</span>;
}
