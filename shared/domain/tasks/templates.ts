import type { NotificationJob, NotifyScene } from '../../contracts/messages.ts';
import type { Template } from '../directory/model.ts';
import { NOTIFY_SCENES, TEMPLATE_SCENES, type TemplateConfig, type TemplateEntry } from './model.ts';
import { NOTIFY_CHANNELS as TASK_NOTIFY_CHANNELS } from '../../contracts/receivers.ts';
import type { EffectiveTemplate } from './responses.ts';

/**
 * Message templates (API guide §5.5, §11.3): the system defaults for every scene and channel,
 * and the resolution order of a task's templates (custom udf > predefined > default, per scene and
 * channel, each of `format` / `template` falling back on its own).
 */
export type NotifyChannel = NotificationJob['channel'];
export type TemplateFormat = 1 | 2 | 3 | 4;
export const FORMAT_TEXT = 1;
export const FORMAT_MARKDOWN = 2;
export const FORMAT_HTML = 3;
export const FORMAT_ACTION_CARD = 4;

export const NOTIFY_CHANNELS: readonly NotifyChannel[] = TASK_NOTIFY_CHANNELS;

export { NOTIFY_SCENES };

/** A template ready to render. `type`: 0 system default, 1 predefined, 2 custom (API guide §5.8). */
export interface ResolvedTemplate {
  type: 0 | 1 | 2;
  format: TemplateFormat;
  /** Title / e-mail subject / markdown title (itself a template). */
  title: string;
  template: string;
}

interface SceneText {
  title: string;
  /** Label and value lines of the message body. */
  lines: [string, string][];
}

const TASK: [string, string] = ['Task', '{task.name}'];
const LEVEL: [string, string] = ['Level', '{history.level}'];
const TIME: [string, string] = ['Time', '{history.notice_at}'];
const CONTENT: [string, string] = ['Content', '{history.ctn}'];
const WORKFLOW: [string, string] = ['Workflow', '#{workflow.id}'];
const BY: [string, string] = ['By', '{pipeline.by}'];
const REMARK: [string, string] = ['Remark', '{pipeline.remark}'];

const SCENES: Record<NotifyScene, SceneText> = {
  compressed: {
    title: '[{common.env}] {task.name}: alarm ({history.level})',
    lines: [TASK, LEVEL, ['Compression', '{task.compress_method} / {task.compress_type}'], TIME, CONTENT],
  },
  not_compress: {
    title: '[{common.env}] {task.name}: alarm ({history.level})',
    lines: [TASK, LEVEL, TIME, CONTENT],
  },
  upgrade: {
    title: '[{common.env}] {task.name}: alarm upgraded ({history.level})',
    lines: [
      TASK,
      LEVEL,
      [
        'Upgrade',
        '{context.zcount} alarms within {context.rule.interval} minutes (threshold {context.rule.count})',
      ],
      TIME,
      CONTENT,
    ],
  },
  recovery: { title: '[{common.env}] {task.name}: recovered', lines: [TASK, LEVEL, TIME, CONTENT] },
  generated: {
    title: '[{common.env}] {task.name}: workflow #{workflow.id} created',
    lines: [TASK, WORKFLOW, LEVEL, TIME, CONTENT],
  },
  claim: {
    title: '[{common.env}] {task.name}: workflow #{workflow.id} claimed',
    lines: [TASK, WORKFLOW, BY, REMARK, CONTENT],
  },
  assign: {
    title: '[{common.env}] {task.name}: workflow #{workflow.id} assigned',
    lines: [TASK, WORKFLOW, BY, ['Assigned to', '{pipeline.assignto_names}'], REMARK, CONTENT],
  },
  processed: {
    title: '[{common.env}] {task.name}: workflow #{workflow.id} processed',
    lines: [TASK, WORKFLOW, BY, REMARK, CONTENT],
  },
  reactive: {
    title: '[{common.env}] {task.name}: workflow #{workflow.id} reactivated',
    lines: [TASK, WORKFLOW, BY, REMARK, CONTENT],
  },
  close: {
    title: '[{common.env}] {task.name}: workflow #{workflow.id} closed',
    lines: [TASK, WORKFLOW, BY, REMARK, CONTENT],
  },
  remind_pending: {
    title: '[{common.env}] {task.name}: workflow #{workflow.id} is waiting to be claimed',
    lines: [TASK, WORKFLOW, LEVEL, TIME, CONTENT],
  },
  remind_processing: {
    title: '[{common.env}] {task.name}: workflow #{workflow.id} is waiting to be processed',
    lines: [TASK, WORKFLOW, LEVEL, TIME, CONTENT],
  },
};

/** The default format of each channel: robots and work notices markdown, e-mail HTML, the rest text. */
export const DEFAULT_FORMAT: Record<NotifyChannel, TemplateFormat> = {
  sms: FORMAT_TEXT,
  phone: FORMAT_TEXT,
  wechat: FORMAT_TEXT,
  email: FORMAT_HTML,
  dinggroup: FORMAT_MARKDOWN,
  yachgroup: FORMAT_MARKDOWN,
  dingworker: FORMAT_MARKDOWN,
  yachworker: FORMAT_MARKDOWN,
};

/** The claim link (API guide §11.7), as each format shows it. */
const CLAIM_URL = '{workflow.claim_url}';
const CLAIM_LINE: Record<TemplateFormat, string> = {
  [FORMAT_TEXT]: CLAIM_URL,
  [FORMAT_MARKDOWN]: `[Claim this workflow](${CLAIM_URL})`,
  [FORMAT_HTML]: `<a href="${CLAIM_URL}">Claim this workflow</a>`,
  [FORMAT_ACTION_CARD]: `[Claim this workflow](${CLAIM_URL})`,
};

/** The scene's lines with the claim line before the content (long content must not push it out of sight). */
function withClaim(lines: [string, string][], format: TemplateFormat): [string, string][] {
  const claim: [string, string] = ['Claim', CLAIM_LINE[format]];
  const at = lines.indexOf(CONTENT);
  return at < 0 ? [...lines, claim] : [...lines.slice(0, at), claim, ...lines.slice(at)];
}

function body(scene: SceneText, format: TemplateFormat, channel: NotifyChannel, claim: boolean): string {
  if (channel === 'phone') {
    // Spoken: short, no JSON dump, and no link (a spoken URL is of no use).
    return `${scene.title.replace('[{common.env}] ', '')}. Level {history.level}.`;
  }
  // SMS: the link before the content, which is what gets cut at 300 characters.
  if (channel === 'sms') return `${scene.title}${claim ? ` Claim: ${CLAIM_URL}` : ''} {history.ctn}`;
  const lines = claim ? withClaim(scene.lines, format) : scene.lines;
  switch (format) {
    case FORMAT_HTML:
      return [
        `<h3>${scene.title}</h3>`,
        '<table>',
        ...lines.map(([k, v]) => `<tr><th align="left">${k}</th><td>${v}</td></tr>`),
        '</table>',
      ].join('\n');
    case FORMAT_MARKDOWN:
    case FORMAT_ACTION_CARD:
      return [`### ${scene.title}`, '', ...lines.map(([k, v]) => `- **${k}**: ${v}`)].join('\n');
    default:
      return [scene.title, ...lines.map(([k, v]) => `${k}: ${v}`)].join('\n');
  }
}

/** Options of a template: `claimLink`, the message carries a claim link (API guide §11.7). */
export interface TemplateOptions {
  claimLink?: boolean;
}

/**
 * The system default template of a scene and channel (in the channel's default format, or `format`);
 * with `claimLink`, a line with the claim link (`{workflow.claim_url}`), except for calls.
 */
export function defaultTemplate(
  scene: NotifyScene,
  channel: NotifyChannel,
  format?: TemplateFormat,
  opts: TemplateOptions = {},
): ResolvedTemplate {
  const s = SCENES[scene];
  const f = format ?? DEFAULT_FORMAT[channel];
  return { type: 0, format: f, title: s.title, template: body(s, f, channel, opts.claimLink === true) };
}

function entryOf(
  scenes: Template['template'] | undefined,
  scene: NotifyScene,
  channel: NotifyChannel,
): TemplateEntry | undefined {
  const byChannel = (scenes as Record<string, Record<string, TemplateEntry> | undefined> | undefined)?.[
    scene
  ];
  const entry = byChannel?.[channel];
  return entry && typeof entry === 'object' ? entry : undefined;
}

const isFormat = (f: unknown): f is TemplateFormat => f === 1 || f === 2 || f === 3 || f === 4;

/**
 * The template of one scene and channel for a task: the custom (udf) entry, else the predefined
 * template's entry, else the default; `format` and `template` each fall back independently. A custom
 * format without a custom text reuses the default text in that format (with a claim line as `opts`
 * says: see defaultTemplate).
 */
export function resolveTemplate(
  config: TemplateConfig | undefined,
  predefined: Template | undefined,
  scene: NotifyScene,
  channel: NotifyChannel,
  opts: TemplateOptions = {},
): ResolvedTemplate {
  const udf = entryOf(config?.udf, scene, channel);
  const pre = predefined ? entryOf(predefined.template, scene, channel) : undefined;
  const format = [udf?.format, pre?.format].find(isFormat) ?? DEFAULT_FORMAT[channel];
  const fallback = defaultTemplate(scene, channel, format, opts);
  if (typeof udf?.template === 'string' && udf.template !== '') {
    return { type: 2, format, title: fallback.title, template: udf.template };
  }
  if (typeof pre?.template === 'string' && pre.template !== '') {
    return { type: udf?.format ? 2 : 1, format, title: fallback.title, template: pre.template };
  }
  return { ...fallback, type: udf?.format ? 2 : pre?.format ? 1 : 0 };
}

/**
 * The effective template of every customisable scene and channel of a task (API guide §5.8): what its
 * messages are rendered with, and where each entry comes from (0 system default, 1 the predefined
 * template, 2 the task's udf).
 */
export function effectiveTemplate(
  config: TemplateConfig | undefined,
  predefined: Template | undefined,
): EffectiveTemplate {
  return Object.fromEntries(
    TEMPLATE_SCENES.map((scene) => [
      scene,
      Object.fromEntries(
        NOTIFY_CHANNELS.map((channel) => {
          const r = resolveTemplate(config, predefined, scene, channel);
          return [channel, { type: r.type, format: r.format, template: r.template }];
        }),
      ),
    ]),
  ) as EffectiveTemplate;
}
