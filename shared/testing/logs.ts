import { vi } from 'vitest';
import { logger } from '../log.ts';

export type Logged = [message: string, attributes: Record<string, unknown>];

/**
 * What `run` logged at `level`, kept from the output (tests only): a test that expects an error or a
 * warning asserts it instead of letting it print. Returns what `run` returned and the log calls.
 */
export async function logged<T>(level: 'error' | 'warn', run: () => Promise<T>): Promise<[T, Logged[]]> {
  const spy = vi.spyOn(logger, level).mockImplementation(() => undefined);
  try {
    const result = await run();
    return [
      result,
      spy.mock.calls.map(([message, attributes]) => [String(message), toAttributes(attributes)]),
    ];
  } finally {
    spy.mockRestore();
  }
}

const toAttributes = (a: unknown): Record<string, unknown> =>
  a && typeof a === 'object' ? (a as Record<string, unknown>) : {};
