/** Answers shared by several domains. */

/** Nothing to return: the envelope's `data` is `{}`. */
export type NoData = Record<string, never>;
