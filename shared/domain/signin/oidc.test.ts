import { describe, expect, it } from 'vitest';
import { emailRefusal } from './oidc.ts';

describe('the e-mail claim of a first single sign-on', () => {
  it.each<[string, Record<string, unknown>, boolean, string | undefined]>([
    ['a verified plain address', { email: 'kim@example.com', email_verified: true }, false, undefined],
    ['upper case ASCII', { email: 'KIM@Example.com', email_verified: 'true' }, false, undefined],
    ['no email_verified claim', { email: 'kim@example.com' }, false, 'unverified'],
    ['no claim, with the deployment’s opt-out', { email: 'kim@example.com' }, true, undefined],
    [
      'marked unverified, even with the opt-out',
      { email: 'kim@example.com', email_verified: false },
      true,
      'unverified',
    ],
    ['the Kelvin sign for K', { email: '\u212Aim@example.com', email_verified: true }, false, 'bad-email'],
    ['a dotless i', { email: 'k\u0131m@example.com', email_verified: true }, false, 'bad-email'],
    ['padding', { email: ' kim@example.com', email_verified: true }, false, 'bad-email'],
    ['a trailing newline', { email: 'kim@example.com\n', email_verified: true }, false, 'bad-email'],
    ['two @', { email: 'kim@evil@example.com', email_verified: true }, false, 'bad-email'],
    ['a full-width @', { email: 'kim\uFF20example.com', email_verified: true }, false, 'bad-email'],
    ['no address', { email_verified: true }, false, 'no-email'],
    ['a number', { email: 7, email_verified: true }, false, 'no-email'],
  ])('%s', (_what, claims, allowUnverified, refusal) => {
    expect(emailRefusal(claims, allowUnverified)).toBe(refusal);
  });
});
