import { isRawJson } from '../../json.ts';
import { formatDateTime } from '../../clock.ts';
import type { RenderContext } from '../../contracts/messages.ts';
import type { Task } from '../tasks/model.ts';
import { LEVEL_NAMES } from '../../contracts/levels.ts';
import { FORMAT_HTML, type ResolvedTemplate, type TemplateFormat } from '../tasks/templates.ts';

/**
 * Template rendering (API guide §11.4). Pure: no I/O, no clock. Placeholders are `{namespace.path}` with
 * the namespaces below; a value that is missing (or null) leaves the placeholder exactly as written;
 * objects and arrays render as compact JSON; HTML bodies get every inserted value escaped.
 */
export const NAMESPACES = ['common', 'task', 'history', 'context', 'workflow', 'pipeline'] as const;
export type Namespace = (typeof NAMESPACES)[number];
export type RenderValues = Partial<Record<Namespace, Record<string, unknown>>>;

export const COMPRESS_METHOD_NAMES: Record<number, string> = { 1: 'condition', 3: 'content', 4: 'full' };
export const COMPRESS_TYPE_NAMES: Record<number, string> = {
  1: 'cycle',
  2: 'delay',
  3: 'cycle-count',
  4: 'count-cycle',
  5: 'count',
};

/** Task fields a template may show (never the token, the secret or the receivers). */
const TASK_FIELDS = [
  'id',
  'name',
  'pinyin',
  'department_id',
  'flag_save_db',
  'status',
  'created_by',
  'created_at',
  'updated_at',
] as const;
const HIDDEN = /token|secret|sealed|sign/i;

function levelName(level: unknown): unknown {
  return typeof level === 'number' && Number.isInteger(level) && LEVEL_NAMES[level]
    ? LEVEL_NAMES[level]
    : level;
}

/**
 * The values of every namespace for one message: the job's context, the stored task's public fields
 * (plus `compress_method` / `compress_type` by name, `none` when compression is off), the level by
 * name, and a few derived conveniences used by the default templates: `history.notice_at` (the
 * notice time as text), `pipeline.by` (who acted: a username, or `application`),
 * `pipeline.assignto_names`.
 */
export function buildRenderValues(
  context: RenderContext,
  task: Task | undefined,
  opts: { env: string; timeZone: string },
): RenderValues {
  const taskValues: Record<string, unknown> = {};
  if (task) {
    for (const f of TASK_FIELDS) if (task[f] !== undefined) taskValues[f] = task[f];
    const compressOn = task.compress?.enable === true;
    taskValues.compress_method = compressOn
      ? (COMPRESS_METHOD_NAMES[task.compress.method ?? 0] ?? 'none')
      : 'none';
    taskValues.compress_type = compressOn
      ? (COMPRESS_TYPE_NAMES[task.compress.strategy ?? 0] ?? 'none')
      : 'none';
  }
  for (const [k, v] of Object.entries(context.task ?? {})) if (!HIDDEN.test(k)) taskValues[k] = v;

  const values: RenderValues = { common: { env: opts.env }, task: taskValues };
  if (context.history) {
    const h: Record<string, unknown> = { ...context.history };
    if ('level' in h) h.level = levelName(h.level);
    if ('leve' in h) h.leve = levelName(h.leve);
    if (typeof h.notice_time === 'number') h.notice_at = formatDateTime(h.notice_time, opts.timeZone);
    values.history = h;
  }
  if (context.context) values.context = context.context;
  if (context.workflow) values.workflow = context.workflow;
  if (context.pipeline) {
    const p: Record<string, unknown> = { ...context.pipeline };
    const user = p.user as { username?: string } | null | undefined;
    if (!('by' in p)) p.by = user?.username ?? (user === null ? 'application' : undefined);
    if (Array.isArray(p.assignto) && !('assignto_names' in p)) {
      p.assignto_names = (p.assignto as { username?: string }[]).map((u) => u?.username ?? '').join(', ');
    }
    values.pipeline = p;
  }
  return values;
}

function lookup(values: RenderValues, path: string[]): unknown {
  const [ns, ...rest] = path;
  if (!(NAMESPACES as readonly string[]).includes(ns)) return undefined;
  let cur: unknown = values[ns as Namespace];
  for (const seg of rest) {
    if (cur === null || typeof cur !== 'object' || isRawJson(cur)) return undefined;
    if (!Object.hasOwn(cur, seg)) return undefined;
    cur = (cur as Record<string, unknown>)[seg];
  }
  return cur;
}

function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);

const PLACEHOLDER = /\{([A-Za-z_][\w-]*(?:\.[^{}\s.]+)*)\}/g;

/** Replaces the placeholders of `template`; `html` escapes every inserted value. */
export function renderTemplate(
  template: string,
  values: RenderValues,
  opts: { html?: boolean } = {},
): string {
  return template.replace(PLACEHOLDER, (whole, path: string) => {
    const value = lookup(values, path.split('.'));
    if (value === undefined || value === null) return whole;
    const s = text(value);
    return opts.html ? escapeHtml(s) : s;
  });
}

export interface RenderedMessage {
  format: TemplateFormat;
  /** Plain text (subject / markdown title); never escaped. */
  title: string;
  body: string;
}

export function renderMessage(t: ResolvedTemplate, values: RenderValues): RenderedMessage {
  return {
    format: t.format,
    title: renderTemplate(t.title, values),
    body: renderTemplate(t.template, values, { html: t.format === FORMAT_HTML }),
  };
}

/** Plain text of a rendered body (HTML tags removed, entities decoded) for text-only channels. */
export function plainText(m: RenderedMessage): string {
  if (m.format !== FORMAT_HTML) return m.body;
  return m.body
    .replace(/<br\s*\/?>|<\/(p|div|tr|h\d|li)>/gi, '\n')
    .replace(/<\/t[hd]>/gi, ' ')
    .replace(/<[^>]*>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** Cuts text to at most `max` characters (code points), marking the cut with an ellipsis. */
export function truncate(s: string, max: number): string {
  const chars = [...s];
  if (chars.length <= max) return s;
  return `${chars.slice(0, max - 1).join('')}…`;
}
