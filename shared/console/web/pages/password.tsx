import { useState } from 'preact/hooks';
import { changePassword } from '../api.ts';
import { ErrorBox, Notice, PageHead } from '../ui.tsx';

/** The signed-in person changes their own password (the current one is asked). */
export function PasswordPage() {
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState(false);
  const [problem, setProblem] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    const [current, next, again] = ['current', 'password', 'again'].map((k) => String(data.get(k) ?? ''));
    setError(undefined);
    setDone(false);
    setProblem(undefined);
    if (next !== again) {
      setProblem('The new password and its repetition differ.');
      return;
    }
    setBusy(true);
    try {
      await changePassword(current, next);
      form.reset();
      setDone(true);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main id="main">
      <PageHead title="Change your password" sub="Every other session of yours ends; this one goes on." />
      <form onSubmit={submit} class="card form narrow">
        <label>
          Current password
          <input name="current" type="password" required maxLength={256} autoComplete="current-password" />
        </label>
        <label>
          New password (8 to 256 characters)
          <input
            name="password"
            type="password"
            required
            minLength={8}
            maxLength={256}
            autoComplete="new-password"
          />
        </label>
        <label>
          New password again
          <input
            name="again"
            type="password"
            required
            minLength={8}
            maxLength={256}
            autoComplete="new-password"
          />
        </label>
        <button type="submit" class="primary" disabled={busy}>
          Change password
        </button>
      </form>
      {problem && (
        <div class="alert error" role="alert">
          {problem}
        </div>
      )}
      {done && <Notice>Your password was changed.</Notice>}
      {error !== undefined && <ErrorBox error={error} />}
    </main>
  );
}
