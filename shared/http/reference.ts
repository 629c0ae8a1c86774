/**
 * The API reference page (`GET /docs`): the OpenAPI document rendered as one self-contained HTML page
 * — no script, no external resource (deployments often have no internet), inline CSS — grouped by
 * tag, with each operation's auth, parameters and body fields (type, required, constraints,
 * descriptions, the conditions under which fields apply), responses with their codes and an example
 * request. Every text from the document is HTML-escaped; the page is served with a CSP that allows no
 * script at all. Pure: document in, HTML out.
 */
import { isObject } from '../json.ts';

type Json = Record<string, unknown>;

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** Escaped text with `code` spans and **bold** (the only markup descriptions use). */
function inline(text: string): string {
  return escapeHtml(text)
    .replace(/`([^`]+)`/g, '<code>$1</code>')
    .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>');
}

/** The markdown subset of the document's descriptions: paragraphs, `- ` lists, `|` tables. */
export function markdown(text: string): string {
  return text
    .trim()
    .split(/\n\s*\n/)
    .map((block) => {
      const lines = block.split('\n').map((l) => l.trim());
      if (lines.every((l) => l.startsWith('|'))) {
        const cells = (l: string) =>
          l
            .replace(/^\||\|$/g, '')
            .split('|')
            .map((c) => c.trim());
        const [head, , ...body] = lines;
        return `<table><thead><tr>${cells(head)
          .map((c) => `<th>${inline(c)}</th>`)
          .join('')}</tr></thead><tbody>${body
          .map(
            (r) =>
              `<tr>${cells(r)
                .map((c) => `<td>${inline(c)}</td>`)
                .join('')}</tr>`,
          )
          .join('')}</tbody></table>`;
      }
      if (lines.every((l) => l.startsWith('- '))) {
        return `<ul>${lines.map((l) => `<li>${inline(l.slice(2))}</li>`).join('')}</ul>`;
      }
      return `<p>${inline(lines.join(' '))}</p>`;
    })
    .join('\n');
}

/** `#/components/...` of the document. */
function resolve(doc: Json, schema: unknown): Json {
  let s = schema;
  for (let i = 0; i < 10 && isObject(s) && typeof s.$ref === 'string'; i++) {
    const ref = s.$ref;
    s = ref
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>(
        (node, key) => (isObject(node) ? node[key.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined),
        doc,
      );
  }
  return isObject(s) ? s : {};
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const num = (n: unknown) => (n === MAX_SAFE ? '2^53-1' : String(n));
const value = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

function typeText(doc: Json, schema: unknown): string {
  const s = resolve(doc, schema);
  if (s.const !== undefined) return typeof s.const;
  if (Array.isArray(s.enum)) {
    const types = [...new Set(s.enum.map((v) => (Number.isInteger(v) ? 'integer' : typeof v)))];
    return types.join(' | ');
  }
  const branches = (s.anyOf ?? s.oneOf) as unknown[] | undefined;
  if (branches) return [...new Set(branches.map((b) => typeText(doc, b)))].join(' | ');
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  if (types.length === 0) return s.properties ? 'object' : 'any';
  return types
    .map((t) => (t === 'array' && s.items ? `array of ${typeText(doc, s.items)}` : String(t)))
    .join(' | ');
}

function rulesOf(s: Json): string[] {
  const out: string[] = [];
  if (s.const !== undefined) out.push(`= ${value(s.const)}`);
  if (Array.isArray(s.enum)) out.push(`one of ${s.enum.map(value).join(', ')}`);
  const lo =
    s.exclusiveMinimum !== undefined
      ? `> ${num(s.exclusiveMinimum)}`
      : s.minimum !== undefined
        ? `≥ ${num(s.minimum)}`
        : '';
  const hi =
    s.exclusiveMaximum !== undefined
      ? `< ${num(s.exclusiveMaximum)}`
      : s.maximum !== undefined
        ? `≤ ${num(s.maximum)}`
        : '';
  if (lo || hi) out.push([lo, hi].filter(Boolean).join(', '));
  const range = (min: unknown, max: unknown, unit: string) => {
    if (min === undefined && max === undefined) return;
    if (min !== undefined && max !== undefined) out.push(`${unit} ${min}..${max}`);
    else out.push(min !== undefined ? `${unit} ≥ ${min}` : `${unit} ≤ ${max}`);
  };
  range(s.minLength, s.maxLength, 'length');
  range(s.minItems, s.maxItems, 'items');
  range(s.minProperties, s.maxProperties, 'fields');
  if (s.uniqueItems === true) out.push('unique');
  if (typeof s.pattern === 'string') out.push(`pattern ${s.pattern}`);
  if (s.default !== undefined) out.push(`default ${value(s.default)}`);
  if (isObject(s.additionalProperties)) out.push('any keys');
  return out;
}

/** A schema's rules, and those of each `anyOf`/`oneOf` branch (`string: pattern ...`). */
function allRules(doc: Json, s: Json): string[] {
  const branches = ((s.anyOf ?? s.oneOf) as unknown[] | undefined) ?? [];
  return [
    ...rulesOf(s),
    ...branches.flatMap((b) => {
      const bs = resolve(doc, b);
      const rules = rulesOf(bs);
      return rules.length ? [`${typeText(doc, bs)}: ${rules.join(', ')}`] : [];
    }),
  ];
}

/** `if` of a conditional as words: `enable = true`, `operator not one of isset, ...`. */
function conditionText(doc: Json, cond: unknown, prefix: string): string {
  const s = resolve(doc, cond);
  const parts = Object.entries((s.properties as Json) ?? {}).map(([k, p]) => {
    const ps = resolve(doc, p);
    const name = prefix + k;
    if (ps.const !== undefined) return `${name} = ${value(ps.const)}`;
    if (Array.isArray(ps.enum)) return `${name} one of ${ps.enum.map(value).join(', ')}`;
    const not = isObject(ps.not) ? ps.not : undefined;
    if (not && Array.isArray(not.enum)) return `${name} not one of ${not.enum.map(value).join(', ')}`;
    return `${name} matches`;
  });
  return parts.join(' and ') || 'conditions hold';
}

interface Row {
  name: string;
  type: string;
  required: string;
  rules: string[];
  notes: string[];
}

const MAX_DEPTH = 12;

/** Rows of a schema's fields (nested ones with dotted names, array items with `[]`). */
function fieldRows(
  doc: Json,
  schema: unknown,
  prefix = '',
  depth = 0,
  out: Row[] = [],
  when?: string,
): Row[] {
  const s = resolve(doc, schema);
  if (depth > MAX_DEPTH) return out;
  const parts = [s, ...((s.allOf as unknown[]) ?? []).map((b) => resolve(doc, b))];
  const props: [string, unknown, Json][] = [];
  const required = new Set<string>();
  const conditional = new Map<string, string[]>();
  for (const part of parts) {
    for (const r of (part.required as string[]) ?? []) required.add(r);
    for (const [k, p] of Object.entries((part.properties as Json) ?? {})) props.push([k, p, part]);
    if (part.if && part.then) {
      const cond = conditionText(doc, part.if, prefix);
      const then = resolve(doc, part.then);
      for (const r of (then.required as string[]) ?? [])
        conditional.set(r, [...(conditional.get(r) ?? []), cond]);
      for (const [k, p] of Object.entries((then.properties as Json) ?? {}))
        props.push([k, p, { when: cond }]);
      // Conditional requirements of the `then` branch's own parts.
      for (const branch of (then.allOf as unknown[]) ?? []) {
        const b = resolve(doc, branch);
        if (b.if && b.then) {
          const inner = `${cond} and ${conditionText(doc, b.if, prefix)}`;
          for (const r of (resolve(doc, b.then).required as string[]) ?? [])
            conditional.set(r, [...(conditional.get(r) ?? []), inner]);
        }
      }
    }
  }
  const seen = new Set<string>();
  for (const [k, p, origin] of props) {
    const name = prefix + k;
    const ps = resolve(doc, p);
    const cond = typeof origin.when === 'string' ? origin.when : when;
    const notes: string[] = [];
    if (typeof ps.description === 'string') notes.push(ps.description);
    if (typeof ps['x-message'] === 'string') notes.push(`refused as: ${name} ${ps['x-message']}`);
    if (cond) notes.push(`when ${cond}`);
    const condReq = conditional.get(k);
    const row: Row = {
      name,
      type: typeText(doc, ps),
      required: required.has(k) && !origin.when ? 'yes' : condReq ? `when ${condReq.join('; or when ')}` : '',
      rules: allRules(doc, ps),
      notes,
    };
    if (seen.has(name)) {
      // A property refined by a conditional part: one row, with the part's rules and condition.
      const prev = out.find((r) => r.name === name);
      if (prev && cond) prev.notes.push(`when ${cond}: ${[...row.rules].join(', ') || 'see below'}`);
    } else out.push(row);
    seen.add(name);
    childRows(doc, ps, name, depth + 1, out, cond);
  }
  if (!prefix && props.length === 0 && (s.type || s.anyOf)) {
    out.push({
      name: '(body)',
      type: typeText(doc, s),
      required: 'yes',
      rules: rulesOf(s),
      notes: s.description ? [String(s.description)] : [],
    });
  }
  return out;
}

function childRows(doc: Json, s: Json, name: string, depth: number, out: Row[], when?: string) {
  const items = s.items ? resolve(doc, s.items) : undefined;
  if (items && (items.properties || items.allOf || items.if))
    fieldRows(doc, items, `${name}[].`, depth, out, when);
  if (s.properties || s.allOf || s.if) fieldRows(doc, s, `${name}.`, depth, out, when);
  for (const b of ((s.anyOf ?? s.oneOf) as unknown[]) ?? []) {
    const bs = resolve(doc, b);
    if (bs.properties)
      fieldRows(doc, bs, `${name}.`, depth, out, [when, 'as an object'].filter(Boolean).join(', '));
    const bi = bs.items ? resolve(doc, bs.items) : undefined;
    if (bi?.properties) fieldRows(doc, bi, `${name}[].`, depth, out, when);
  }
}

function rowsTable(rows: Row[]): string {
  const body = rows
    .map(
      (r) =>
        `<tr><td><code>${escapeHtml(r.name)}</code></td><td>${escapeHtml(r.type)}</td><td>${escapeHtml(r.required)}</td><td>${r.rules
          .map((x) => `<code>${escapeHtml(x)}</code>`)
          .join(' ')}</td><td>${r.notes.map(inline).join('<br>')}</td></tr>`,
    )
    .join('');
  const table = `<table class="fields"><thead><tr><th>field</th><th>type</th><th>required</th><th>constraints</th><th>notes</th></tr></thead><tbody>${body}</tbody></table>`;
  return rows.length > 40 ? `<details><summary>${rows.length} fields</summary>${table}</details>` : table;
}

function parameterRows(doc: Json, params: Json[]): Row[] {
  return params.map((p) => {
    const s = resolve(doc, p.schema);
    return {
      name: String(p.name),
      type: typeText(doc, s),
      required: p.required ? 'yes' : '',
      rules: allRules(doc, s),
      notes: [
        ...(typeof p.description === 'string' ? [p.description] : []),
        ...(typeof s['x-message'] === 'string' ? [`refused as: ${String(p.name)} ${s['x-message']}`] : []),
      ],
    };
  });
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

const AUTH_PLACEHOLDERS: Record<string, string[]> = {
  app: ['X-App-Id: <app id>', 'X-App-Timestamp: <unix seconds>', 'X-App-Sign: <signature>'],
};

/** A curl command from the operation's examples. */
export function exampleRequest(doc: Json, method: string, path: string, op: Json, server: string): string {
  const auth = String(op['x-tocsin-auth'] ?? 'none');
  const params = ((op.parameters as Json[]) ?? []).map((p) => resolve(doc, p));
  const query = new URLSearchParams();
  if (auth === 'intake-query') {
    query.set('taskid', '<task id>');
    query.set('token', '<intake token>');
  }
  for (const p of params)
    if (p.in === 'query' && p.example !== undefined) query.set(String(p.name), String(p.example));
  const body = resolve(doc, op.requestBody);
  const [type, media] =
    Object.entries((body.content as Record<string, Json>) ?? {}).find(([, m]) => m.example !== undefined) ??
    [];
  const qs = query.toString().replace(/%3C/g, '<').replace(/%3E/g, '>').replace(/\+/g, '%20');
  const lines = [
    `curl -X ${method} ${shellQuote(`${server}${path}${qs && !type?.includes('form') ? `?${qs}` : ''}`)}`,
  ];
  // Routes a person may call with the session cookie are shown as an app calls them.
  const signs = ['app+task', 'app|person', 'reader', 'admin'].includes(auth) ? 'app' : auth;
  for (const h of AUTH_PLACEHOLDERS[signs] ?? []) lines.push(`  -H ${shellQuote(h)}`);
  if (type && media) {
    const ex = media.example;
    const text =
      type === 'application/json'
        ? JSON.stringify(ex)
        : type === 'application/x-www-form-urlencoded'
          ? new URLSearchParams(ex as Record<string, string>).toString()
          : String(ex);
    lines.push(`  -H ${shellQuote(`Content-Type: ${type}`)}`, `  --data ${shellQuote(text)}`);
  }
  return lines.join(' \\\n');
}

const METHODS = ['get', 'post', 'put', 'delete', 'patch'];

interface Op {
  method: string;
  path: string;
  op: Json;
}

function operationHtml(doc: Json, { method, path, op }: Op, server: string): string {
  const id = escapeHtml(op.operationId ?? `${method}-${path}`);
  const auth = String(op['x-tocsin-auth'] ?? 'none');
  const authText = (doc['x-auth-kinds'] as Record<string, string> | undefined)?.[auth] ?? auth;
  const parts = [
    `<section class="op" id="${id}">`,
    `<h3><span class="m m-${escapeHtml(method)}">${escapeHtml(method.toUpperCase())}</span> <code>${escapeHtml(path)}</code> <span class="sum">${inline(String(op.summary ?? ''))}</span></h3>`,
  ];
  if (typeof op.description === 'string') parts.push(`<p>${inline(op.description)}</p>`);
  parts.push(`<p class="auth"><strong>Auth</strong>: ${inline(authText)}</p>`);
  const params = ((op.parameters as unknown[]) ?? []).map((p) => resolve(doc, p));
  if (params.length) parts.push('<h4>Query parameters</h4>', rowsTable(parameterRows(doc, params)));
  const body = op.requestBody ? resolve(doc, op.requestBody) : undefined;
  for (const [type, media] of Object.entries((body?.content as Record<string, Json>) ?? {})) {
    parts.push(
      `<h4>Request body <code>${escapeHtml(type)}</code>${body?.required ? ' (required)' : ''}</h4>`,
      ...(typeof body?.description === 'string' ? [`<p>${inline(body.description)}</p>`] : []),
      rowsTable(fieldRows(doc, media.schema)),
    );
  }
  const responses = Object.entries((op.responses as Json) ?? {}).map(([status, r]) => {
    const res = resolve(doc, r);
    return `<li><strong>${escapeHtml(status)}</strong> ${inline(String(res.description ?? ''))}</li>`;
  });
  parts.push('<h4>Responses</h4>', `<ul>${responses.join('')}</ul>`);
  parts.push(
    '<h4>Example request</h4>',
    `<pre>${escapeHtml(exampleRequest(doc, method.toUpperCase(), path, op, server))}</pre>`,
  );
  parts.push('</section>');
  return parts.join('\n');
}

const STYLE = `
body{margin:0;font:14px/1.5 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:#1f2328;background:#fff}
nav{position:fixed;top:0;bottom:0;left:0;width:270px;overflow:auto;padding:16px;background:#f6f8fa;border-right:1px solid #d0d7de;box-sizing:border-box}
nav h2{font-size:13px;margin:14px 0 4px;text-transform:uppercase;color:#57606a}
nav a{display:block;color:#1f2328;text-decoration:none;font-size:12px;padding:1px 0;word-break:break-all}
nav a:hover{text-decoration:underline}
main{margin-left:270px;padding:16px 32px;max-width:1100px}
h2.tag{border-bottom:2px solid #d0d7de;padding-bottom:4px;margin-top:40px}
section.op{border:1px solid #d0d7de;border-radius:6px;padding:4px 16px 12px;margin:16px 0}
h3{font-size:16px}h4{margin:12px 0 4px}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
pre{background:#f6f8fa;padding:8px;overflow:auto;white-space:pre-wrap;word-break:break-all}
table{border-collapse:collapse;width:100%;margin:4px 0}
th,td{border:1px solid #d0d7de;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
table.fields{table-layout:fixed}
table.fields td{overflow-wrap:anywhere}
table.fields th:nth-child(1){width:30%}table.fields th:nth-child(2){width:11%}table.fields th:nth-child(3){width:13%}table.fields th:nth-child(4){width:20%}
.m{display:inline-block;min-width:54px;text-align:center;color:#fff;border-radius:4px;padding:0 4px;font-size:12px}
.m-get{background:#1a7f37}.m-post{background:#0969da}.m-put{background:#9a6700}.m-delete{background:#cf222e}.m-patch{background:#8250df}
.sum{font-weight:normal;color:#57606a}
@media (max-width:800px){nav{position:static;width:auto;border:0}main{margin:0;padding:8px}}
`;

/** The whole page. `server`: the base URL of the example requests (the document's first server). */
export function renderReference(doc: Json, server?: string): string {
  const info = (doc.info as Json) ?? {};
  const base = (server ?? String(((doc.servers as Json[]) ?? [])[0]?.url ?? '')).replace(/\/+$/, '');
  const byTag = new Map<string, Op[]>();
  for (const t of (doc.tags as Json[]) ?? []) byTag.set(String(t.name), []);
  for (const [path, item] of Object.entries((doc.paths as Record<string, Json>) ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!isObject(op)) continue;
      const tag = String(((op.tags as string[]) ?? [])[0] ?? 'Other');
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)!.push({ method, path, op });
    }
  }
  const tagDescriptions = new Map(((doc.tags as Json[]) ?? []).map((t) => [String(t.name), t.description]));
  const tags = [...byTag].filter(([, ops]) => ops.length > 0);
  const slug = (t: string) => `tag-${t.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  const nav = tags
    .map(
      ([tag, ops]) =>
        `<h2><a href="#${escapeHtml(slug(tag))}">${escapeHtml(tag)}</a></h2>${ops
          .map(
            (o) =>
              `<a href="#${escapeHtml(o.op.operationId ?? '')}">${escapeHtml(o.method.toUpperCase())} ${escapeHtml(o.path)}</a>`,
          )
          .join('')}`,
    )
    .join('');
  const sections = tags
    .map(([tag, ops]) => {
      const desc = tagDescriptions.get(tag);
      return [
        `<h2 class="tag" id="${escapeHtml(slug(tag))}">${escapeHtml(tag)}</h2>`,
        ...(typeof desc === 'string' ? [`<p>${inline(desc)}</p>`] : []),
        ...ops.map((o) => operationHtml(doc, o, base)),
      ].join('\n');
    })
    .join('\n');
  const title = `${String(info.title ?? 'API')} ${String(info.version ?? '')}`.trim();
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(title)} API reference</title>`,
    `<style>${STYLE}</style></head><body>`,
    `<nav><strong>${escapeHtml(title)}</strong><br><a href="openapi.json">openapi.json</a>${nav}</nav>`,
    '<main>',
    `<h1>${escapeHtml(title)} API reference</h1>`,
    ...(typeof info.summary === 'string' ? [`<p><em>${inline(info.summary)}</em></p>`] : []),
    typeof info.description === 'string' ? markdown(info.description) : '',
    sections,
    '</main></body></html>',
    '',
  ].join('\n');
}
