import { useState } from 'preact/hooks';
import { BASE, type Session, signIn } from '../api.ts';
import { ErrorBox } from '../ui.tsx';

/** What a refused single sign-on means (the callback sends a fixed word, never the provider's text). */
const SSO_REFUSALS: Record<string, string> = {
  denied: 'Single sign-on was cancelled or refused at the sign-in provider.',
  state:
    'Single sign-on could not be finished: the sign-in took too long, or began in another browser. Try again.',
  invalid: 'Single sign-on failed: the sign-in provider’s answer could not be verified. Try again.',
  'no-email': 'Single sign-on failed: the sign-in provider gave no e-mail address for you.',
  'bad-email':
    'Single sign-on failed: the sign-in provider gave an e-mail address that is not a plain address (only ASCII letters, digits and punctuation).',
  unverified: 'Single sign-on failed: the sign-in provider has not verified your e-mail address.',
  linked:
    'Single sign-on failed: your directory account is bound to another identity at the sign-in provider. Ask an operator to unbind it.',
  inactive: 'Your account is deactivated. Ask an operator.',
  'no-user':
    'You signed in at the provider, but no person in the tocsin directory has that e-mail address. Ask an operator to add you to the directory.',
  unavailable:
    'The single sign-on provider cannot be reached right now. Try again, or sign in with a password.',
};

export type SignInNotice = 'signed-out' | 'ended' | `sso:${string}`;

function noticeText(notice: SignInNotice | undefined): string | undefined {
  if (notice === 'signed-out') return 'You are signed out.';
  if (notice === 'ended')
    return 'Your session has ended (it expired, or you were signed out elsewhere). Sign in again.';
  if (notice?.startsWith('sso:')) return SSO_REFUSALS[notice.slice(4)] ?? 'Single sign-on failed. Try again.';
  return undefined;
}

/**
 * Sign-in: the directory's account name (or e-mail address) and the password an operator set, or
 * single sign-on when the service offers it. The service answers with an HttpOnly session cookie.
 */
export function SignIn({
  onSignedIn,
  sso,
  notice,
}: {
  onSignedIn: (s: Session) => void;
  sso: boolean;
  notice?: SignInNotice;
}) {
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const text = noticeText(notice);

  const submit = async (e: Event) => {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    setBusy(true);
    setError(undefined);
    try {
      const session = await signIn(
        String(data.get('account') ?? '').trim(),
        String(data.get('password') ?? ''),
      );
      onSignedIn(session);
    } catch (err) {
      (form.elements.namedItem('password') as HTMLInputElement | null)?.select();
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main id="main" class="signin">
      <h1 tabIndex={-1}>Sign in to the tocsin console</h1>
      {text && (
        <div
          class={`alert ${notice?.startsWith('sso:') ? 'error' : 'ok'}`}
          role={notice?.startsWith('sso:') ? 'alert' : 'status'}
        >
          {text}
        </div>
      )}
      <form onSubmit={submit} class="card form">
        <label>
          Account
          <input
            name="account"
            required
            maxLength={254}
            autoComplete="username"
            autoCapitalize="none"
            spellcheck={false}
          />
        </label>
        <label>
          Password
          <input name="password" type="password" required maxLength={256} autoComplete="current-password" />
        </label>
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      {sso && (
        <p class="sso">
          <a class="button" href={`${BASE}/auth/oidc/start`}>
            Sign in with SSO
          </a>
        </p>
      )}
      <p class="sub">
        Your account is your name in the directory or your e-mail address. No password yet? An operator sets
        one with <code>npm run admin -- user password</code>.
      </p>
      {error !== undefined && <ErrorBox error={error} offerSignIn={false} />}
    </main>
  );
}
