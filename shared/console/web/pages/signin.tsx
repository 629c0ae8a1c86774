import { useState } from 'preact/hooks';
import { call, type Session, saveSession } from '../api.ts';
import type { Profile } from '../types.ts';
import { ErrorBox } from '../ui.tsx';

/**
 * Sign-in: an app id and token (what any client signs with) and the acting user. Checked by reading
 * the user's profile, signed with them; kept in this tab's sessionStorage only.
 */
export function SignIn({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const appId = Number(form.get('app_id'));
    const token = String(form.get('token') ?? '').trim();
    const uid = Number(form.get('uid'));
    setBusy(true);
    setError(undefined);
    try {
      const profile = await call<Profile>('GET', '/user/profile', {
        query: { uid },
        creds: { appId, token },
      });
      const session: Session = {
        appId,
        token,
        uid,
        user: { uid, username: profile.user.username, role: profile.user.role },
      };
      saveSession(session);
      onSignedIn(session);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main id="main" class="signin">
      <h1 tabIndex={-1}>Sign in to the tocsin console</h1>
      <p class="sub">
        Requests are signed in this browser with the app token (HMAC-SHA256), which stays in this tab only and
        is forgotten when the tab closes.
      </p>
      <form onSubmit={submit} class="card form">
        <label>
          App id
          <input name="app_id" inputMode="numeric" pattern="[0-9]+" required autoComplete="off" />
        </label>
        <label>
          App token
          <input name="token" type="password" required autoComplete="off" spellcheck={false} />
        </label>
        <label>
          Acting user (uid)
          <input name="uid" inputMode="numeric" pattern="[0-9]+" required autoComplete="off" />
        </label>
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      {error !== undefined && <ErrorBox error={error} offerSignIn={false} />}
    </main>
  );
}
