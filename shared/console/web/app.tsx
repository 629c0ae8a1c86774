import { useEffect, useState } from 'preact/hooks';
import { BASE, resumeSession, type Session, type SignOutReason, signOut } from './api.ts';
import { AlarmsPage } from './pages/alarms.tsx';
import { ChartsPage } from './pages/charts.tsx';
import { DeadLettersPage, DeliveriesPage } from './pages/deliveries.tsx';
import { PasswordPage } from './pages/password.tsx';
import { SchedulePage, SchedulesPage } from './pages/schedules.tsx';
import { SignIn, type SignInNotice } from './pages/signin.tsx';
import { TaskPage } from './pages/task.tsx';
import { TasksPage } from './pages/tasks.tsx';
import { TracePage } from './pages/trace.tsx';
import { WorkflowPage, WorkflowsPage } from './pages/workflows.tsx';
import { href, type Route, useRoute } from './router.ts';
import { ErrorBox, Loading, PageHead } from './ui.tsx';

const ADMIN_ROLE = 9;

function NotFound() {
  return (
    <main id="main">
      <PageHead title="No such page" sub={<a href={href('tasks')}>Go to the tasks</a>} />
    </main>
  );
}

/** A claim link's token (API guide §11.7): base64url, as the link carries it. */
const CLAIM_TOKEN = /^[A-Za-z0-9_-]{20,100}$/;

/**
 * `#/claim?t=<token>`: where a group claim link sends a person to sign in. Signed in, the browser goes
 * back to the link's page (this origin's `/claim` only), which now offers to claim as them.
 */
function ClaimReturn({ query }: { query: URLSearchParams }) {
  const token = query.get('t') ?? '';
  const ok = CLAIM_TOKEN.test(token);
  useEffect(() => {
    if (ok) location.replace(`${BASE}/claim?t=${encodeURIComponent(token)}`);
  }, [ok, token]);
  if (!ok) return <NotFound />;
  return <Loading what="Back to the claim link" />;
}

/** The page of a route (`#/tasks/12/alarms/<uuid>` ...). */
function Page({ route, session }: { route: Route; session: Session }) {
  const [section = 'tasks', id, sub, item] = route.parts;
  const admin = session.person.role === ADMIN_ROLE;
  if (section === 'claim' && !id) return <ClaimReturn query={route.query} />;
  if (section === 'password' && !id) return <PasswordPage />;
  if (section === 'dead-letters') return admin ? <DeadLettersPage route={route} /> : <NotFound />;
  if (section === 'schedules') {
    const scheduleId = Number(id);
    if (!id) return <SchedulesPage />;
    return Number.isSafeInteger(scheduleId) && scheduleId > 0 && !sub ? (
      <SchedulePage id={scheduleId} />
    ) : (
      <NotFound />
    );
  }
  if (section !== 'tasks') return <NotFound />;
  if (!id) return <TasksPage route={route} />;
  const taskId = Number(id);
  if (!Number.isSafeInteger(taskId) || taskId < 1) return <NotFound />;
  if (!sub) return <TaskPage taskId={taskId} />;
  if (sub === 'alarms')
    return item ? <TracePage taskId={taskId} uuid={item} /> : <AlarmsPage taskId={taskId} route={route} />;
  if (sub === 'workflows') {
    const wf = Number(item);
    return item && Number.isSafeInteger(wf) ? (
      <WorkflowPage taskId={taskId} id={wf} />
    ) : (
      <WorkflowsPage taskId={taskId} />
    );
  }
  if (sub === 'deliveries') return <DeliveriesPage taskId={taskId} route={route} admin={admin} />;
  if (sub === 'charts') return <ChartsPage taskId={taskId} route={route} />;
  return <NotFound />;
}

/** `#signin-error=<reason>`: where a refused single sign-on sends the browser back. */
function ssoRefusal(): SignInNotice | undefined {
  const m = /^#signin-error=([a-z-]{1,32})$/.exec(location.hash);
  if (!m) return undefined;
  history.replaceState(null, '', `${location.pathname}${location.search}`);
  return `sso:${m[1]}`;
}

type State =
  | { phase: 'loading' }
  | { phase: 'failed'; error: unknown }
  | { phase: 'signed-out'; sso: boolean; notice?: SignInNotice }
  | { phase: 'signed-in'; session: Session; sso: boolean };

export function App() {
  const [state, setState] = useState<State>({ phase: 'loading' });
  const route = useRoute();
  const path = route.parts.join('/');
  const session = state.phase === 'signed-in' ? state.session : undefined;
  const sso = state.phase === 'signed-in' || state.phase === 'signed-out' ? state.sso : false;

  // The session this browser holds (its cookie), if any.
  const resume = (notice?: SignInNotice) =>
    resumeSession().then(
      (r) =>
        setState(
          'person' in r
            ? { phase: 'signed-in', session: r, sso: r.sso }
            : { phase: 'signed-out', sso: r.sso, notice },
        ),
      (error: unknown) => setState({ phase: 'failed', error }),
    );

  useEffect(() => {
    void resume(ssoRefusal());
    const onSignOut = (e: Event) => void resume((e as CustomEvent<SignOutReason>).detail);
    window.addEventListener('tocsin:signout', onSignOut);
    return () => window.removeEventListener('tocsin:signout', onSignOut);
  }, []);

  // A new page: its heading takes the focus (keyboard and screen reader users start there).
  useEffect(() => {
    const t = window.setTimeout(() => document.querySelector<HTMLElement>('main h1')?.focus(), 0);
    return () => window.clearTimeout(t);
  }, [path, state.phase]);

  useEffect(() => {
    document.title = session ? `tocsin · ${route.parts[0] ?? 'tasks'}` : 'tocsin console: sign in';
  }, [session, route]);

  if (state.phase === 'loading') return <Loading what="Opening the console" />;
  if (state.phase === 'failed') {
    return (
      <main id="main" class="signin">
        <h1 tabIndex={-1}>The console cannot start</h1>
        <ErrorBox error={state.error} onRetry={() => void resume()} offerSignIn={false} />
      </main>
    );
  }
  if (!session) {
    return (
      <SignIn
        sso={sso}
        notice={state.phase === 'signed-out' ? state.notice : undefined}
        onSignedIn={(s) => setState({ phase: 'signed-in', session: s, sso })}
      />
    );
  }
  const admin = session.person.role === ADMIN_ROLE;
  return (
    <>
      <button
        type="button"
        class="skip"
        onClick={() => document.querySelector<HTMLElement>('main h1')?.focus()}
      >
        Skip to the content
      </button>
      <header class="top">
        <a class="brand" href={href('tasks')}>
          tocsin
        </a>
        <nav class="mainnav" aria-label="Console">
          <a
            href={href('tasks')}
            aria-current={
              !['dead-letters', 'password', 'schedules'].includes(route.parts[0] ?? '') ? 'page' : undefined
            }
          >
            Tasks
          </a>
          <a href={href('schedules')} aria-current={route.parts[0] === 'schedules' ? 'page' : undefined}>
            Schedules
          </a>
          {admin && (
            <a
              href={href('dead-letters')}
              aria-current={route.parts[0] === 'dead-letters' ? 'page' : undefined}
            >
              Dead letters
            </a>
          )}
        </nav>
        <span class="who">
          {session.person.username}{' '}
          <span class="muted">
            {session.person.user || `uid ${session.person.uid}`}
            {admin ? ' · admin' : ''}
          </span>
        </span>
        <a href={href('password')} aria-current={route.parts[0] === 'password' ? 'page' : undefined}>
          Password
        </a>
        <button type="button" onClick={() => void signOut()}>
          Sign out
        </button>
        <button type="button" onClick={() => void signOut(true)}>
          Sign out everywhere
        </button>
      </header>
      <Page route={route} session={session} />
    </>
  );
}
