import { BadRequestError } from '../domain/errors.ts';
import { isRawJson, parseJson as parseLossless } from '../json.ts';
import { type HttpEvent, header, rawBody } from './event.ts';

/**
 * Where a handler's input comes from, each source one the route names:
 * - `noInput`: none;
 * - `queryInput`: the query string (GET);
 * - `jsonBody`: a JSON body (`application/json`, charset optional; an empty body is `{}`);
 * - `formOrQuery`: a form-encoded (or JSON) body merged over the query string (DELETE);
 * - `anyJsonBody`: a JSON body whatever the content type says (alarm senders: many existing shell
 *   clients post JSON with `curl -d`, which labels it form-encoded, or with no content type at all),
 *   parsed losslessly (numbers keep their digits: see shared/json.ts).
 * Numbers in the query string and form bodies are coerced by the route's validator (API guide §1.4);
 * JSON keeps its types. Every body is refused above 256 KiB (413) and, when it is not a JSON object
 * where one is wanted, with 400.
 *
 * The JSON bodies are parsed here rather than by `@middy/http-json-body-parser`, which refuses keys the
 * contract ignores, answers 415 and 422 where it wants 400, and parses with a reviver, several times
 * slower on large bodies (docs/handlers.md, "Why not middy's JSON body parser").
 */
export type InputSource = 'none' | 'query' | 'json' | 'any-json' | 'form-or-query';

export interface Input {
  readonly source: InputSource;
  /** Whether its numbers arrive as strings (query strings, form bodies): its validators coerce them. */
  readonly coerces: boolean;
  /** The input of a request; throws 400/413 on malformed bodies. */
  read(event: HttpEvent): Record<string, unknown>;
}

/** A request body as a JSON object (400 when it is not one; an empty body is `{}`). */
export function parseJson(body: string, lossless = false): Record<string, unknown> {
  if (body.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = lossless ? parseLossless(body) : JSON.parse(body);
  } catch {
    throw new BadRequestError('request body is not valid JSON');
  }
  // (a number kept as written is an object too, without being one)
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed) || isRawJson(parsed)) {
    throw new BadRequestError('request body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

const query = (event: HttpEvent) => ({ ...(event.queryStringParameters ?? {}) }) as Record<string, unknown>;
const contentType = (event: HttpEvent) =>
  (header(event, 'content-type') ?? '').split(';')[0].trim().toLowerCase();

export const noInput: Input = { source: 'none', coerces: false, read: () => ({}) };

export const queryInput: Input = { source: 'query', coerces: true, read: query };

export const jsonBody: Input = {
  source: 'json',
  coerces: false,
  read(event) {
    const body = rawBody(event);
    if (body.trim() !== '' && contentType(event) !== 'application/json') {
      throw new BadRequestError('content type must be application/json');
    }
    return parseJson(body);
  },
};

export const anyJsonBody: Input = {
  source: 'any-json',
  coerces: false,
  read: (event) => parseJson(rawBody(event), true),
};

export const formOrQuery: Input = {
  source: 'form-or-query',
  coerces: true,
  read(event) {
    const body = rawBody(event);
    if (body.trim() === '') return query(event);
    const type = contentType(event);
    if (type === 'application/x-www-form-urlencoded') {
      return { ...query(event), ...Object.fromEntries(new URLSearchParams(body)) };
    }
    if (type === 'application/json') return { ...query(event), ...parseJson(body) };
    throw new BadRequestError('content type must be application/x-www-form-urlencoded or application/json');
  },
};
