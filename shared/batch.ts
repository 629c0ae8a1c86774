/**
 * Calls made in one turn of the event loop, answered by one call of `many`: work started together
 * (the units of a consumer batch) shares one request instead of making one each. `many` gets the
 * inputs in the order they came and answers one output per input; its failure fails them all.
 */
export function batchPerTurn<I, O>(many: (inputs: I[]) => Promise<O[]>): (input: I) => Promise<O> {
  let pending: { input: I; done: (o: O) => void; fail: (e: unknown) => void }[] = [];
  const flush = async () => {
    const batch = pending;
    pending = [];
    try {
      const out = await many(batch.map((p) => p.input));
      for (const [i, p] of batch.entries()) p.done(out[i]);
    } catch (err) {
      for (const p of batch) p.fail(err);
    }
  };
  return (input) =>
    new Promise((done, fail) => {
      if (pending.length === 0) setImmediate(() => void flush());
      pending.push({ input, done, fail });
    });
}
