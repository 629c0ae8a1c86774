import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
// The installed fauxqs, as patches/fauxqs+2.4.1+004+batch-transactions.patch changes it.
import { PersistenceManager } from '../../../node_modules/fauxqs/dist/persistence.js';

interface Db {
  exec(sql: string): void;
  readonly isTransaction: boolean;
}

/** PersistenceManager.inTransaction run against `db` (the store's own connection in fauxqs). */
const inTransaction = <T>(p: { db: Db }, fn: () => T): T =>
  (PersistenceManager.prototype.inTransaction as (this: { db: Db }, f: () => T) => T).call(p, fn);

function store() {
  const db = new DatabaseSync(':memory:');
  db.exec('CREATE TABLE m (id TEXT PRIMARY KEY)');
  const insert = db.prepare('INSERT INTO m (id) VALUES (?)');
  const ids = () =>
    db
      .prepare('SELECT id FROM m ORDER BY id')
      .all()
      .map((r) => r.id);
  return { p: { db }, db, insert, ids };
}

describe("the SQS emulator's inTransaction (a batch request or a receive commits at once)", () => {
  it('commits every write of the call in one transaction and returns its result', () => {
    const { p, db, insert, ids } = store();
    const out = inTransaction(p, () => {
      insert.run('a');
      insert.run('b');
      expect(db.isTransaction).toBe(true);
      return 2;
    });
    expect(out).toBe(2);
    expect(db.isTransaction).toBe(false);
    expect(ids()).toEqual(['a', 'b']);
  });

  it('keeps the writes made before a throw (as one-by-one writes did) and rethrows', () => {
    const { p, db, insert, ids } = store();
    expect(() =>
      inTransaction(p, () => {
        insert.run('a');
        insert.run('a'); // primary key conflict
      }),
    ).toThrow(/UNIQUE/);
    expect(db.isTransaction).toBe(false);
    expect(ids()).toEqual(['a']);
  });

  it('joins a transaction already open instead of nesting one', () => {
    const { p, db, insert, ids } = store();
    inTransaction(p, () => {
      insert.run('a');
      inTransaction(p, () => insert.run('b'));
      expect(db.isTransaction).toBe(true);
    });
    expect(ids()).toEqual(['a', 'b']);
  });

  it('never leaves a transaction open when the commit fails', () => {
    const { db, insert } = store();
    let commits = 0;
    const failingCommit = {
      get isTransaction() {
        return db.isTransaction;
      },
      exec(sql: string) {
        if (sql === 'COMMIT' && commits++ === 0) throw new Error('database is locked');
        db.exec(sql);
      },
    };
    expect(() => inTransaction({ db: failingCommit }, () => insert.run('a'))).toThrow(/locked/);
    expect(db.isTransaction).toBe(false);
    expect(db.prepare('SELECT count(*) AS n FROM m').get()?.n).toBe(0);
  });
});
