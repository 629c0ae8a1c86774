import { MAX_PASSWORD_CHARS, MIN_PASSWORD_CHARS } from './passwords.ts';

/** Input of the sign-in routes (shared/http handlers under functions/http/auth). */
export const signInSchema = {
  type: 'object',
  required: ['account', 'password'],
  properties: {
    account: {
      type: 'string',
      minLength: 1,
      maxLength: 254,
      description: "The directory's account name (`user`) or e-mail address.",
    },
    password: { type: 'string', minLength: 1, maxLength: MAX_PASSWORD_CHARS, writeOnly: true },
  },
};

export const changePasswordSchema = {
  type: 'object',
  required: ['current', 'password'],
  properties: {
    current: { type: 'string', minLength: 1, maxLength: MAX_PASSWORD_CHARS, writeOnly: true },
    password: {
      type: 'string',
      minLength: MIN_PASSWORD_CHARS,
      maxLength: MAX_PASSWORD_CHARS,
      writeOnly: true,
      description: `The new password: ${MIN_PASSWORD_CHARS} to ${MAX_PASSWORD_CHARS} characters.`,
    },
  },
};

export const signOutSchema = {
  type: 'object',
  properties: {
    everywhere: {
      type: 'integer',
      enum: [0, 1],
      description: '1: end every session of the person, in every browser.',
    },
  },
};

/** The identity provider's redirect back (unknown parameters, like `iss` or `session_state`, pass). */
export const oidcCallbackSchema = {
  type: 'object',
  properties: {
    code: { type: 'string', maxLength: 4096 },
    state: { type: 'string', maxLength: 512 },
    error: { type: 'string', maxLength: 256 },
    error_description: { type: 'string', maxLength: 2048 },
  },
};
