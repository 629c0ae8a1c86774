import { useEffect, useState } from 'preact/hooks';
import { clearSession, loadSession, type Session } from './api.ts';
import { AlarmsPage } from './pages/alarms.tsx';
import { ChartsPage } from './pages/charts.tsx';
import { DeadLettersPage, DeliveriesPage } from './pages/deliveries.tsx';
import { SignIn } from './pages/signin.tsx';
import { TaskPage } from './pages/task.tsx';
import { TasksPage } from './pages/tasks.tsx';
import { TracePage } from './pages/trace.tsx';
import { WorkflowPage, WorkflowsPage } from './pages/workflows.tsx';
import { href, type Route, useRoute } from './router.ts';
import { PageHead } from './ui.tsx';

const ADMIN_ROLE = 9;

function NotFound() {
  return (
    <main id="main">
      <PageHead title="No such page" sub={<a href={href('tasks')}>Go to the tasks</a>} />
    </main>
  );
}

/** The page of a route (`#/tasks/12/alarms/<uuid>` ...). */
function Page({ route, session }: { route: Route; session: Session }) {
  const [section = 'tasks', id, sub, item] = route.parts;
  const admin = session.user.role === ADMIN_ROLE;
  if (section === 'dead-letters') return admin ? <DeadLettersPage route={route} /> : <NotFound />;
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

export function App() {
  const [session, setSession] = useState<Session | undefined>(loadSession);
  const route = useRoute();
  const path = route.parts.join('/');

  useEffect(() => {
    const onSignOut = () => setSession(undefined);
    window.addEventListener('tocsin:signout', onSignOut);
    return () => window.removeEventListener('tocsin:signout', onSignOut);
  }, []);

  // A new page: its heading takes the focus (keyboard and screen reader users start there).
  useEffect(() => {
    const t = window.setTimeout(() => document.querySelector<HTMLElement>('main h1')?.focus(), 0);
    return () => window.clearTimeout(t);
  }, [path, session === undefined]);

  useEffect(() => {
    document.title = session ? `tocsin · ${route.parts[0] ?? 'tasks'}` : 'tocsin console: sign in';
  }, [session, route]);

  if (!session) return <SignIn onSignedIn={setSession} />;
  const admin = session.user.role === ADMIN_ROLE;
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
          <a href={href('tasks')} aria-current={route.parts[0] !== 'dead-letters' ? 'page' : undefined}>
            Tasks
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
          {session.user.username}{' '}
          <span class="muted">
            uid {session.uid}
            {admin ? ' · admin' : ''} · app {session.appId}
          </span>
        </span>
        <button type="button" onClick={clearSession}>
          Sign out
        </button>
      </header>
      <Page route={route} session={session} />
    </>
  );
}
