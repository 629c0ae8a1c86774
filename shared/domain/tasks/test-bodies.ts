import { ValidationError } from '../errors.ts';

/** Test support of the task rules' unit tests: request bodies and their refusals. */

// biome-ignore lint/suspicious/noExplicitAny: request bodies under test
export type Body = Record<string, any>;

export const base = (over: Body = {}): Body => ({
  created_by: 1,
  name: 'disk usage',
  department_id: 1,
  flag_save_db: 1,
  receiver: { channels: { email: [1] } },
  ...over,
});

export function validationOf(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ValidationError) return err;
    throw err;
  }
  throw new Error('expected a ValidationError');
}

export const cond = (operator: string, threshold?: string) => ({
  rule: [{ field: 'ctn.host', operator, ...(threshold !== undefined ? { threshold } : {}) }],
});
