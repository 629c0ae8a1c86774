/**
 * Every answer the integration tests receive from the stack is checked against the OpenAPI document
 * (shared/generated/openapi.json), so the document cannot drift from what the service answers: the
 * status must be one the operation lists, the content type one it documents, and a JSON body must
 * match the response's schema (the envelope, its code and its `data`), compiled once per operation,
 * status and media type. A mismatch fails the test that received it, naming the operation, the
 * status and where in the body the answer differs.
 *
 * An unknown route (or a method a path does not take) must answer the 404 envelope; the local-only
 * routes (`/_local/...`) and HEAD requests (no body) are not checked.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { projectRoot } from '../../shared/local/paths.ts';

type Json = Record<string, unknown>;

const DOC_ID = 'https://tocsin.invalid/openapi.json';
const NOT_FOUND = '#/components/responses/NotFound';

let doc: Json | undefined;
let ajv: Ajv2020 | undefined;
const validators = new Map<string, ValidateFunction>();

function document(): Json {
  doc ??= JSON.parse(readFileSync(join(projectRoot, 'shared/generated/openapi.json'), 'utf8')) as Json;
  return doc;
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const pointerKey = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

/** The object a local `$ref` names, and its pointer (followed until it is no reference). */
function follow(value: unknown, at: string): { value: Json; at: string } {
  let v = value;
  let where = at;
  for (let i = 0; i < 8 && isObject(v) && typeof v.$ref === 'string'; i++) {
    where = v.$ref;
    v = v.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>(
        (node, k) => (isObject(node) ? node[k.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined),
        document(),
      );
  }
  if (!isObject(v)) throw new Error(`the OpenAPI document has nothing at ${where}`);
  return { value: v, at: where };
}

function validatorAt(pointer: string): ValidateFunction {
  let fn = validators.get(pointer);
  if (!fn) {
    if (!ajv) {
      ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
      ajv.addSchema(document(), DOC_ID);
    }
    fn = ajv.compile({ $ref: `${DOC_ID}${pointer}` });
    validators.set(pointer, fn);
  }
  return fn;
}

const errorText = (e: ErrorObject) =>
  `${e.instancePath || '(body)'} ${e.message ?? e.keyword}${
    e.keyword === 'additionalProperties'
      ? ` (${String((e.params as { additionalProperty: string }).additionalProperty)})`
      : ''
  }`;

/** What one answer was. */
export interface Answer {
  method: string;
  url: string;
  status: number;
  contentType: string | undefined;
  body: string;
}

/** The stacks whose answers are checked: their base URLs. */
const watched = new Set<string>();

/** Checks the answers of the API served at `baseUrl` from now on (the shared stack's is watched). */
export function watchApi(baseUrl: string): void {
  watched.add(baseUrl.replace(/\/$/, ''));
}

/** The route path of a URL of a watched stack, or undefined for any other URL. */
function routePath(url: string): string | undefined {
  for (const base of watched) {
    if (url === base || url.startsWith(`${base}/`) || url.startsWith(`${base}?`)) {
      return new URL(url).pathname.slice(new URL(base).pathname.replace(/\/$/, '').length) || '/';
    }
  }
  return undefined;
}

/** Why an answer does not match the document, or undefined when it does (or is not checked). */
export function mismatchOf(answer: Answer): string | undefined {
  const path = routePath(answer.url);
  const method = answer.method.toUpperCase();
  if (path === undefined || method === 'HEAD' || path.startsWith('/_local/')) return undefined;
  const item = (document().paths as Record<string, Json>)[path];
  const operation = item?.[method.toLowerCase()] as Json | undefined;
  const name = operation ? `${method} ${path}` : `${method} ${path} (no such operation)`;
  const responses = operation ? (operation.responses as Json) : ({ '404': { $ref: NOT_FOUND } } as Json);
  const base = operation
    ? `#/paths/${pointerKey(path)}/${method.toLowerCase()}/responses`
    : '#/components/responses';
  const listed = responses[String(answer.status)];
  if (!listed) {
    return `${name} answered HTTP ${answer.status}, which the document does not list (it lists ${Object.keys(responses).join(', ')}): ${answer.body.slice(0, 300)}`;
  }
  const response = follow(listed, `${base}/${answer.status}`);
  const content = response.value.content as Record<string, Json> | undefined;
  if (!content) return undefined;
  const media = (answer.contentType ?? '').split(';')[0].trim().toLowerCase();
  if (!content[media]) {
    return `${name} answered HTTP ${answer.status} as ${media || 'no content type'}, which the document does not list (it lists ${Object.keys(content).join(', ')})`;
  }
  if (media !== 'application/json') return undefined;
  let body: unknown;
  try {
    body = JSON.parse(answer.body);
  } catch {
    return `${name} answered HTTP ${answer.status} with a body that is not JSON: ${answer.body.slice(0, 300)}`;
  }
  const validate = validatorAt(`${response.at}/content/${pointerKey(media)}/schema`);
  if (validate(body)) return undefined;
  const problems = [...new Set((validate.errors ?? []).map(errorText))].slice(0, 8).join('; ');
  return `${name} answered HTTP ${answer.status} with a body the document does not describe: ${problems}; body: ${answer.body.slice(0, 500)}`;
}

/** Throws when the answer does not match the document. */
export function checkAnswer(answer: Answer): void {
  const mismatch = mismatchOf(answer);
  if (mismatch) throw new Error(`OpenAPI document and answer differ: ${mismatch}`);
}

/** `fetch`, with every answer of a watched stack checked against the document. */
export function checkingFetch(fetchFn: typeof fetch): typeof fetch & { checksAnswers: true } {
  const checking: typeof fetch = async (input, init) => {
    const res = await fetchFn(input, init);
    const request = input instanceof Request ? input : undefined;
    const method = init?.method ?? request?.method ?? 'GET';
    // After a redirect the answer is the last URL's, fetched with GET (a 303 or a GET to begin with).
    const url = res.redirected ? res.url : request ? request.url : String(input);
    if (routePath(url) === undefined || (res.redirected && method.toUpperCase() !== 'GET')) return res;
    checkAnswer({
      method,
      url,
      status: res.status,
      contentType: res.headers.get('content-type') ?? undefined,
      body: await res.clone().text(),
    });
    return res;
  };
  return Object.assign(checking, { checksAnswers: true as const });
}
