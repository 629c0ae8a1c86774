/**
 * The sign-in commands of `npm run admin`: a person's password (read from standard input, never
 * from the command line, never printed), signing a person out everywhere, lifting a lockout,
 * deactivating a person, and an app's grants, binding and signature.
 */
import { ValidationError } from '../domain/errors.ts';

export const AUTH_USAGE = `  npm run admin -- user password UID       set a person's password, read from standard input
                                           (typed without echo, twice; or piped: one line)
  npm run admin -- user password UID --clear   remove it (the person signs in with SSO only)
  npm run admin -- user signout UID        end every console session of the person
  npm run admin -- user unlock UID         lift the person's sign-in lockout
  npm run admin -- user deactivate UID     end the person's sessions and sign-in (activate: undo)
  npm run admin -- user unlink-sso UID     unbind the person from their single sign-on identity
  npm run admin -- app grant APP read|operate|admin   let an app call the routes beyond the interface
  npm run admin -- app revoke APP read|operate|admin  take that away again
  npm run admin -- app bind APP UID[,UID...]   let the app act only as these users (unbind APP: any)
  npm run admin -- app signature APP request|any   require the request-bound signature of the app`;

/** What the operator types: on a terminal without echo (asked twice), else the piped line. */
export async function readPassword(
  stdin: NodeJS.ReadStream = process.stdin,
  out: NodeJS.WriteStream = process.stderr,
): Promise<string> {
  if (!stdin.isTTY) {
    const chunks: Buffer[] = [];
    for await (const chunk of stdin) chunks.push(Buffer.from(chunk as Buffer));
    const text = Buffer.concat(chunks)
      .toString('utf8')
      .replace(/\r?\n$/, '');
    if (/[\r\n]/.test(text)) throw ValidationError.of('password', 'must be one line');
    return text;
  }
  const first = await readHidden(stdin, out, 'New password: ');
  const again = await readHidden(stdin, out, 'Again: ');
  if (first !== again) throw ValidationError.of('password', 'was not typed the same twice');
  return first;
}

/** One line from a terminal in raw mode: nothing is echoed; backspace, Enter, Ctrl-C and Ctrl-D work. */
function readHidden(stdin: NodeJS.ReadStream, out: NodeJS.WriteStream, prompt: string): Promise<string> {
  out.write(prompt);
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  let typed: string[] = [];
  return new Promise((resolve, reject) => {
    const finish = (err?: Error) => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      out.write('\n');
      if (err) reject(err);
      else resolve(typed.join(''));
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') return finish();
        if (ch === '\u0003') return finish(new Error('cancelled'));
        if (ch === '\u007f' || ch === '\b') typed = typed.slice(0, -1);
        else if (ch >= ' ') typed.push(ch);
      }
    };
    stdin.on('data', onData);
  });
}

/** Runs a sign-in command; false when `command` is not one. */
export async function authCommand(
  command: string | undefined,
  args: string[],
  values: { clear?: boolean },
): Promise<boolean> {
  const [sub, first, second] = args;
  if (command === 'user' && sub === 'password' && args.length === 2) {
    const uid = id(first, 'UID');
    const { setPasswordByOperator } = await import('../domain/signin/signin.ts');
    const password = values.clear ? undefined : await readPassword();
    const user = await setPasswordByOperator(uid, password);
    console.log(
      `${values.clear ? 'password removed' : 'password set'} for user ${uid} (${user.username}); their console sessions were signed out`,
    );
    return true;
  }
  if (command === 'user' && sub === 'signout' && args.length === 2) {
    const uid = id(first, 'UID');
    const { getUser } = await import('../domain/directory/repository.ts');
    if (!(await getUser(uid))) throw new Error(`user [${uid}] not found`);
    const { signOutPersonEverywhere } = await import('../domain/signin/signin.ts');
    await signOutPersonEverywhere(uid);
    console.log(`every console session of user ${uid} was signed out`);
    return true;
  }
  if (command === 'user' && ['unlock', 'deactivate', 'activate'].includes(sub) && args.length === 2) {
    const uid = id(first, 'UID');
    const signin = await import('../domain/signin/signin.ts');
    if (sub === 'unlock') {
      const user = await signin.unlockPerson(uid);
      console.log(`user ${uid} (${user.username}) may sign in again: the lockout was lifted`);
    } else {
      const user = await signin.setPersonActive(uid, sub === 'activate');
      console.log(
        sub === 'activate'
          ? `user ${uid} (${user.username}) is active again and may sign in`
          : `user ${uid} (${user.username}) is deactivated: every console session ended, sign-in refused`,
      );
    }
    return true;
  }
  if (command === 'user' && sub === 'unlink-sso' && args.length === 2) {
    const uid = id(first, 'UID');
    const { unbindIdentity } = await import('../domain/auth/sso-identity.ts');
    const { audit } = await import('../domain/auth/audit.ts');
    const was = await unbindIdentity(uid);
    if (was) audit('sso-link', { uid, unbound: true, by: 'operator' });
    console.log(
      was
        ? `user ${uid}: unbound from their single sign-on identity (the next sign-on binds them by e-mail)`
        : `user ${uid} was bound to no single sign-on identity`,
    );
    return true;
  }
  if (command === 'app' && (sub === 'grant' || sub === 'revoke') && args.length === 3) {
    const appId = id(first, 'APP');
    const { changeGrant, isGrant } = await import('../domain/auth/apps.ts');
    if (!isGrant(second)) throw ValidationError.of('grant', 'must be read, operate or admin');
    const grants = await changeGrant(appId, second, sub === 'grant');
    console.log(
      `app ${appId}: grants ${grants.length ? grants.join(', ') : '(none)'} (running functions see it within 30 s)`,
    );
    return true;
  }
  if (command === 'app' && (sub === 'bind' || sub === 'unbind') && args.length === (sub === 'bind' ? 3 : 2)) {
    const appId = id(first, 'APP');
    const uids = sub === 'bind' ? second.split(',').map((u) => id(u.trim(), 'UID')) : [];
    const { changeApp } = await import('../domain/auth/apps.ts');
    await changeApp(appId, { uids: [...new Set(uids)] });
    console.log(
      `app ${appId}: acts ${uids.length ? `only as users ${[...new Set(uids)].join(', ')}` : 'as any user'} (running functions see it within 30 s)`,
    );
    return true;
  }
  if (command === 'app' && sub === 'signature' && args.length === 3) {
    const appId = id(first, 'APP');
    if (second !== 'request' && second !== 'any')
      throw ValidationError.of('signature', 'must be request or any');
    const { changeApp } = await import('../domain/auth/apps.ts');
    await changeApp(appId, { requestSignature: second === 'request' });
    console.log(
      `app ${appId}: ${second === 'request' ? 'every request must carry the request-bound signature' : 'the interface signature is accepted too'} (running functions see it within 30 s)`,
    );
    return true;
  }
  return false;
}

function id(raw: string | undefined, what: string): number {
  const n = Number(raw);
  if (!raw || !/^\d{1,15}$/.test(raw) || !Number.isSafeInteger(n) || n < 1)
    throw ValidationError.of(what, 'must be a positive integer');
  return n;
}
