import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  type ClaimLink,
  linkKey,
  mintClaimToken,
  PAGE_SLOT_SECONDS,
  pageNonce,
  pageNonceMatches,
  readClaimToken,
} from './claim-token.ts';

/** Claim link tokens: what they say, and that nothing but the service's own, unaltered, is read. */
const seal = randomBytes(32);
const k1 = linkKey(seal, 1);
const k2 = linkKey(seal, 2);
const live = (...keys: ReturnType<typeof linkKey>[]) => {
  const byId = new Map(keys.map((k) => [k.id, k]));
  return (id: number) => byId.get(id);
};
const LINK = {
  workflowId: 123_456,
  round: 2,
  uid: 70_001,
  channel: 'email' as const,
  expiresAt: 1_800_000_000,
};
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

describe('claim link tokens', () => {
  it('say what they were minted with, and fit an SMS beside the alarm', () => {
    // Act
    const token = mintClaimToken(LINK, k1);
    const read = readClaimToken(token, live(k1));
    // Assert
    expect(read).toEqual<ClaimLink>({ ...LINK, nonce: expect.stringMatching(/^[0-9a-f]{16}$/), keyId: 1 });
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(token.length).toBeLessThanOrEqual(60);
    // A fresh nonce each time: two links for the same person and workflow differ.
    expect(mintClaimToken(LINK, k1)).not.toBe(token);
  });

  it('carry the largest ids and a group link (uid 0) intact', () => {
    const big = {
      ...LINK,
      workflowId: Number.MAX_SAFE_INTEGER,
      round: 0,
      uid: 0,
      channel: 'yachgroup' as const,
    };
    expect(readClaimToken(mintClaimToken(big, k1), live(k1))).toMatchObject(big);
  });

  it('are refused when any bit of them is flipped', () => {
    // Arrange
    const raw = Buffer.from(mintClaimToken(LINK, k1), 'base64url');
    // Act
    const accepted: number[] = [];
    for (let bit = 0; bit < raw.length * 8; bit++) {
      const flipped = Buffer.from(raw);
      flipped[bit >> 3] ^= 1 << (bit & 7);
      if (readClaimToken(flipped.toString('base64url'), live(k1, k2))) accepted.push(bit);
    }
    // Assert
    expect(accepted).toEqual([]);
  });

  it('are refused when any character is replaced, the unused bits of the last one included', () => {
    const token = mintClaimToken(LINK, k1);
    const accepted: string[] = [];
    for (let i = 0; i < token.length; i++) {
      for (const c of B64) {
        if (c === token[i]) continue;
        const other = token.slice(0, i) + c + token.slice(i + 1);
        if (readClaimToken(other, live(k1))) accepted.push(other);
      }
    }
    expect(accepted).toEqual([]);
    expect(readClaimToken(`${token}A`, live(k1))).toBeUndefined();
    expect(readClaimToken(token.slice(0, -1), live(k1))).toBeUndefined();
  });

  it('are refused when the uid or the workflow of one is put into another', () => {
    // Arrange: two links that differ in one field each, spliced.
    const a = Buffer.from(mintClaimToken({ ...LINK, uid: 5 }, k1), 'base64url');
    const b = Buffer.from(mintClaimToken({ ...LINK, uid: 6 }, k1), 'base64url');
    const c = Buffer.from(mintClaimToken({ ...LINK, workflowId: 123_457 }, k1), 'base64url');
    const uidAt = 2 + 3 + 1; // version, key id, workflow id (3 bytes), round (1 byte)
    const swappedUid = Buffer.from(a);
    swappedUid[uidAt] = b[uidAt];
    const swappedWf = Buffer.from(a);
    c.copy(swappedWf, 2, 2, 5);
    // Act, Assert
    expect(readClaimToken(a.toString('base64url'), live(k1))?.uid).toBe(5);
    expect(readClaimToken(swappedUid.toString('base64url'), live(k1))).toBeUndefined();
    expect(readClaimToken(swappedWf.toString('base64url'), live(k1))).toBeUndefined();
  });

  it('are read under the live keys only: the previous key while rotating, not a retired one', () => {
    const old = mintClaimToken(LINK, k1);
    expect(readClaimToken(old, live(k2, k1))?.keyId).toBe(1);
    expect(readClaimToken(old, live(k2))).toBeUndefined();
    // Another seal key derives other link keys.
    expect(readClaimToken(old, live(linkKey(randomBytes(32), 1)))).toBeUndefined();
    expect(linkKey(seal, 1).key.equals(linkKey(seal, 2).key)).toBe(false);
  });

  it('refuse what is not a token at all', () => {
    for (const bad of [undefined, 42, '', 'a', 'x'.repeat(81), 'not base64!', { t: 1 }, 'AQEA'])
      expect(readClaimToken(bad, live(k1))).toBeUndefined();
  });
});

describe('page nonces', () => {
  it('are good for their slot and the next, then no more, and only for their token', () => {
    // Arrange
    const token = mintClaimToken(LINK, k1);
    const at = 1_800_000_000;
    const nonce = pageNonce(token, k1, at);
    // Act, Assert
    expect(pageNonceMatches(token, k1, nonce, at)).toBe(true);
    expect(pageNonceMatches(token, k1, nonce, at + PAGE_SLOT_SECONDS)).toBe(true);
    expect(pageNonceMatches(token, k1, nonce, at + 2 * PAGE_SLOT_SECONDS)).toBe(false);
    expect(pageNonceMatches(mintClaimToken(LINK, k1), k1, nonce, at)).toBe(false);
    expect(pageNonceMatches(token, k2, nonce, at)).toBe(false);
    for (const bad of [undefined, '', 'é'.repeat(22), `${nonce}x`])
      expect(pageNonceMatches(token, k1, bad, at)).toBe(false);
  });
});
