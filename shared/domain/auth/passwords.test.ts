import { describe, expect, it } from 'vitest';
import { hashPassword, needsRehash, passwordProblem, verifyNothing, verifyPassword } from './passwords.ts';

describe('password hashing (scrypt)', () => {
  it('stores the parameters, a random salt and the hash, never the password', async () => {
    // Act
    const a = await hashPassword('correct horse battery');
    const b = await hashPassword('correct horse battery');
    // Assert
    expect(a).toMatch(/^scrypt\$17\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(a).not.toContain('correct');
    expect(b).not.toBe(a);
  });

  it('verifies the right password only', async () => {
    // Arrange
    const stored = await hashPassword('correct horse battery');
    // Act / Assert
    expect(await verifyPassword('correct horse battery', stored)).toBe(true);
    expect(await verifyPassword('correct horse batterY', stored)).toBe(false);
    expect(await verifyPassword('', stored)).toBe(false);
  });

  it('treats the same text typed in two Unicode forms as one password (NFC)', async () => {
    // Arrange: é as one code point, and as e + combining acute accent
    const stored = await hashPassword('caf\u00e9-au-lait');
    // Act / Assert
    expect(await verifyPassword('cafe\u0301-au-lait', stored)).toBe(true);
  });

  it('keeps working when the parameters change: the stored ones are used', async () => {
    // Arrange: a hash made with cheaper parameters (as an older deployment might have)
    const stored = await hashPassword('an older password', { logN: 12, r: 8, p: 1 });
    // Act / Assert
    expect(stored.startsWith('scrypt$12$8$1$')).toBe(true);
    expect(await verifyPassword('an older password', stored)).toBe(true);
  });

  it.each([
    ['not a hash', 'plain-text-password'],
    ['an unknown scheme', 'bcrypt$10$abc'],
    [
      'parameters out of range (a cost bomb)',
      'scrypt$30$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    ],
    ['a truncated hash', 'scrypt$15$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAA'],
  ])('never matches %s', async (_what, stored) => {
    expect(await verifyPassword('plain-text-password', stored)).toBe(false);
  });

  it('refuses to hash past the length cap, and says what a new password needs', async () => {
    // Arrange
    const stored = await hashPassword('x'.repeat(256));
    // Act / Assert
    expect(await verifyPassword('x'.repeat(257), stored)).toBe(false);
    expect(passwordProblem('short')).toBe('must be at least 8 characters');
    expect(passwordProblem('x'.repeat(257))).toBe('must be at most 256 characters');
    expect(passwordProblem('🔥🧯'.repeat(4))).toBeUndefined();
    expect(passwordProblem('a good one')).toBeUndefined();
  });

  it.each([
    ['password', 'is a common password (it appears in lists of breached passwords): choose another'],
    ['PassWord', 'is a common password (it appears in lists of breached passwords): choose another'],
    ['1qaz2wsx', 'is a common password (it appears in lists of breached passwords): choose another'],
    ['iloveyou', 'is a common password (it appears in lists of breached passwords): choose another'],
    [' '.repeat(8), 'must not be one character repeated'],
    ['\t'.repeat(9), 'must not be one character repeated'],
    ['aaaaaaaaaa', 'must not be one character repeated'],
  ])('refuses %j as a new password', (password, problem) => {
    expect(passwordProblem(password)).toBe(problem);
  });

  it('bundles a few thousand common passwords, none shorter than the minimum', async () => {
    const { default: list } = await import('./data/common-passwords.json', { with: { type: 'json' } });
    expect(list.length).toBeGreaterThanOrEqual(3000);
    expect(list.every((p: string) => [...p].length >= 8 && p === p.toLowerCase())).toBe(true);
  });

  it('tells a hash made with older parameters from a current one', async () => {
    expect(needsRehash(await hashPassword('an older password', { logN: 15, r: 8, p: 1 }))).toBe(true);
    expect(needsRehash(await hashPassword('a current password'))).toBe(false);
    expect(needsRehash('not a hash')).toBe(false);
  });

  it('spends a verification on nothing for an account without a password', async () => {
    expect(await verifyNothing('whatever was typed')).toBe(false);
  });
});
