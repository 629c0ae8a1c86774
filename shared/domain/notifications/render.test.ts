import { formatDateTime } from '../../clock.ts';
import { describe, expect, it } from 'vitest';
import type { RenderContext } from '../../contracts/messages.ts';
import type { Task, TemplateConfig } from '../tasks/model.ts';
import {
  buildRenderValues,
  plainText,
  type RenderValues,
  renderMessage,
  renderTemplate,
  truncate,
} from './render.ts';
import {
  defaultTemplate,
  effectiveTemplate,
  NOTIFY_CHANNELS,
  NOTIFY_SCENES,
  resolveTemplate,
} from '../tasks/templates.ts';
import type { Template } from '../directory/model.ts';

const task = {
  id: 12,
  name: 'payments-api',
  pinyin: 'payments-api',
  department_id: 1,
  flag_save_db: 1,
  status: 1,
  created_by: 1,
  created_at: 100,
  updated_at: 200,
  token: 'tok-should-never-render',
  secret: 'sec-should-never-render',
  compress: { enable: true, method: 3, strategy: 4, strategy_cycle: 5, strategy_count: 3 },
} as unknown as Task;

const context: RenderContext = {
  task: { id: 12, name: 'payments-api' },
  history: {
    id: 7,
    uuid: 'u-1',
    batch: 3,
    metric: 'abc',
    level: 2,
    leve: 2,
    ctn: { hostname: 'web-1', n: 5, nested: { a: [1, 2] } },
    notice_time: 1582650647,
  },
  context: { rule: { interval: 10, count: 5 }, zcount: 6 },
  workflow: { id: 99, status: 0, created_at: 1582650000 },
  pipeline: {
    remark: 'on it',
    user: { uid: 2, username: '张三', user: 'zhangsan' },
    assignto: [
      { uid: 1, username: 'Ann Lee', user: 'annlee' },
      { uid: 4, username: 'Bob Stone', user: 'bobstone' },
    ],
  },
};

const values = (): RenderValues => buildRenderValues(context, task, { env: 'staging', timeZone: 'UTC' });

describe('renderTemplate', () => {
  it.each([
    ['{common.env}', 'staging'],
    ['{task.name}', 'payments-api'],
    ['{task.id}', '12'],
    ['{task.compress_method}', 'content'],
    ['{task.compress_type}', 'count-cycle'],
    ['{history.level}', 'error'],
    ['{history.leve}', 'error'],
    ['{history.ctn}', '{"hostname":"web-1","n":5,"nested":{"a":[1,2]}}'],
    ['{history.ctn.hostname}', 'web-1'],
    ['{history.ctn.n}', '5'],
    ['{history.ctn.nested}', '{"a":[1,2]}'],
    ['{history.ctn.nested.a.1}', '2'],
    ['{history.notice_at}', '2020-02-25 17:10:47'],
    ['{context.rule.interval}', '10'],
    ['{context.rule.count}', '5'],
    ['{context.zcount}', '6'],
    ['{workflow.id}', '99'],
    ['{pipeline.remark}', 'on it'],
    ['{pipeline.user.username}', '张三'],
    ['{pipeline.by}', '张三'],
    ['{pipeline.assignto_names}', 'Ann Lee, Bob Stone'],
  ])('%s renders as %s', (tpl, expected) => {
    expect(renderTemplate(tpl, values())).toBe(expected);
  });

  it.each([
    '{history.ctn.missing}',
    '{history.ctn.hostname.deeper}',
    '{context.rule.level}',
    '{unknown.thing}',
    '{task.token}',
    '{task.secret}',
    '{task}x',
    '{ task.name }',
  ])('leaves %s as written', (tpl) => {
    const out = renderTemplate(tpl, values());
    expect(out).toBe(tpl === '{task}x' ? `${JSON.stringify(values().task)}x` : tpl);
    expect(out).not.toContain('should-never-render');
  });

  it('keeps text around placeholders and renders several of them', () => {
    expect(
      renderTemplate('[{common.env}] {task.name}: {history.level} on {history.ctn.hostname}!', values()),
    ).toBe('[staging] payments-api: error on web-1!');
  });

  it('leaves placeholders of absent namespaces as written', () => {
    const v = buildRenderValues({ task: { id: 1, name: 'x' } }, undefined, { env: 'e', timeZone: 'UTC' });
    expect(renderTemplate('{history.level} {workflow.id} {pipeline.by} {context.zcount}', v)).toBe(
      '{history.level} {workflow.id} {pipeline.by} {context.zcount}',
    );
    expect(renderTemplate('{task.compress_method}', v)).toBe('{task.compress_method}');
  });

  it('renders compression as none when it is off and an unknown level as its number', () => {
    const off = { ...task, compress: { enable: false } } as Task;
    const v = buildRenderValues({ task: { id: 12, name: 'n' }, history: { level: 7 } }, off, {
      env: 'e',
      timeZone: 'UTC',
    });
    expect(renderTemplate('{task.compress_method}/{task.compress_type}/{history.level}', v)).toBe(
      'none/none/7',
    );
  });

  it.each([
    [0, 'notice'],
    [1, 'warning'],
    [2, 'error'],
    [3, 'urgent'],
  ])('level %i renders as %s', (level, name) => {
    const v = buildRenderValues({ task: { id: 1, name: 'x' }, history: { level } }, undefined, {
      env: 'e',
      timeZone: 'UTC',
    });
    expect(renderTemplate('{history.level}', v)).toBe(name);
  });

  it('says "application" when no user acted', () => {
    const v = buildRenderValues(
      { task: { id: 1, name: 'x' }, pipeline: { remark: 'r', user: null } },
      undefined,
      {
        env: 'e',
        timeZone: 'UTC',
      },
    );
    expect(renderTemplate('{pipeline.by}', v)).toBe('application');
  });

  it('escapes inserted values, not the template, in HTML', () => {
    const v = buildRenderValues(
      { task: { id: 1, name: '<b>&"x"</b>' }, history: { ctn: { a: "<script>'" } } },
      undefined,
      { env: 'e', timeZone: 'UTC' },
    );
    expect(renderTemplate('<p>{task.name}</p>{history.ctn.a}', v, { html: true })).toBe(
      '<p>&lt;b&gt;&amp;&quot;x&quot;&lt;/b&gt;</p>&lt;script&gt;&#39;',
    );
    expect(renderTemplate('{task.name}', v)).toBe('<b>&"x"</b>');
  });

  it('formats times in the configured zone', () => {
    expect(formatDateTime(1582650647, 'Asia/Shanghai')).toBe('2020-02-26 01:10:47');
  });
});

describe('templates', () => {
  it('has a default with a title for every scene and channel, rendering without leftovers', () => {
    for (const scene of NOTIFY_SCENES) {
      for (const channel of NOTIFY_CHANNELS) {
        const t = defaultTemplate(scene, channel);
        expect(t.type).toBe(0);
        expect(t.title.length).toBeGreaterThan(0);
        expect(t.template.length).toBeGreaterThan(0);
        const m = renderMessage(t, values());
        expect(`${m.title}\n${m.body}`, `${scene}/${channel}`).not.toMatch(/\{(task|history|common)\./);
      }
    }
  });

  it('uses HTML for e-mail, markdown for robots and text for sms by default', () => {
    expect(defaultTemplate('compressed', 'email').format).toBe(3);
    expect(defaultTemplate('compressed', 'email').template).toContain('<table>');
    expect(defaultTemplate('compressed', 'dinggroup').format).toBe(2);
    expect(defaultTemplate('compressed', 'dinggroup').template).toMatch(/^### /);
    expect(defaultTemplate('compressed', 'sms').format).toBe(1);
  });

  const predefined = {
    id: 1,
    template: {
      compressed: { email: { format: 1, template: 'PRE {task.name}' }, sms: { format: 1 } },
      recovery: { dinggroup: { template: 'PRE-REC {task.name}' } },
    },
  } as never;

  it('resolves udf over predefined over default, per scene and channel', () => {
    const cfg = {
      template_id: 1,
      udf: {
        compressed: { email: { format: 2, template: 'UDF {task.name}' } },
        upgrade: { sms: { template: 'U' } },
      },
    } as never;
    expect(resolveTemplate(cfg, predefined, 'compressed', 'email')).toMatchObject({
      type: 2,
      format: 2,
      template: 'UDF {task.name}',
    });
    expect(resolveTemplate({ template_id: 1 }, predefined, 'compressed', 'email')).toMatchObject({
      type: 1,
      format: 1,
      template: 'PRE {task.name}',
    });
    // Predefined format only: the default text in that format.
    expect(resolveTemplate({ template_id: 1 }, predefined, 'compressed', 'sms')).toMatchObject({
      type: 1,
      format: 1,
      template: defaultTemplate('compressed', 'sms').template,
    });
    // Predefined text only: the channel's default format.
    expect(resolveTemplate({ template_id: 1 }, predefined, 'recovery', 'dinggroup')).toMatchObject({
      type: 1,
      format: 2,
      template: 'PRE-REC {task.name}',
    });
    expect(resolveTemplate(cfg, predefined, 'upgrade', 'sms')).toMatchObject({
      type: 2,
      format: 1,
      template: 'U',
    });
    // Nothing configured for that scene/channel: the default.
    expect(resolveTemplate(cfg, predefined, 'not_compress', 'email')).toEqual(
      defaultTemplate('not_compress', 'email'),
    );
    expect(resolveTemplate(undefined, undefined, 'claim', 'wechat')).toEqual(
      defaultTemplate('claim', 'wechat'),
    );
  });

  it('places the claim link in every default but a call, before the content, when asked to (API guide §11.7)', () => {
    for (const channel of NOTIFY_CHANNELS) {
      for (const format of [undefined, 1, 2, 3, 4] as const) {
        const plain = defaultTemplate('generated', channel, format);
        const linked = defaultTemplate('generated', channel, format, { claimLink: true });
        expect(plain.template).not.toContain('{workflow.claim_url}');
        if (channel === 'phone') {
          expect(linked).toEqual(plain);
          continue;
        }
        const at = linked.template.indexOf('{workflow.claim_url}');
        expect(at, `${channel}/${format}`).toBeGreaterThan(0);
        expect(at, `${channel}/${format}`).toBeLessThan(linked.template.indexOf('{history.ctn}'));
      }
    }
    expect(defaultTemplate('remind_pending', 'email', undefined, { claimLink: true }).template).toContain(
      '<a href="{workflow.claim_url}">Claim this workflow</a>',
    );
    expect(
      resolveTemplate(undefined, undefined, 'upgrade', 'dinggroup', { claimLink: true }).template,
    ).toContain('[Claim this workflow]({workflow.claim_url})');
  });

  it('renders a custom format with the default text in that format', () => {
    const cfg = { udf: { compressed: { email: { format: 1 } } } } as never;
    const t = resolveTemplate(cfg, undefined, 'compressed', 'email');
    expect(t.format).toBe(1);
    expect(t.template).not.toContain('<');
  });
});

describe('text helpers', () => {
  it('turns HTML into plain text', () => {
    const m = renderMessage(defaultTemplate('not_compress', 'email'), values());
    const t = plainText(m);
    expect(t).not.toMatch(/<[a-z]/);
    expect(t).toContain('payments-api');
    expect(t).toContain('"hostname":"web-1"');
  });

  it('truncates by characters', () => {
    expect(truncate('abcdef', 10)).toBe('abcdef');
    expect(truncate('日志中心日志中心', 5)).toBe('日志中心…');
    expect([...truncate('x'.repeat(400), 300)].length).toBe(300);
  });
});

describe('effectiveTemplate (API guide §5.8)', () => {
  const predefined = {
    id: 1,
    name: 'short',
    template: { compressed: { email: { format: 1, template: 'pre {task.name}' } } },
  } as unknown as Template;

  it('lists all four scenes with every channel, each with where it comes from', () => {
    // Arrange: a predefined template for compressed/email, a custom entry for compressed/sms
    const config: TemplateConfig = {
      template_id: 1,
      udf: { compressed: { sms: { format: 1, template: 'mine' } } },
    };
    // Act
    const t = effectiveTemplate(config, predefined) as Record<
      string,
      Record<string, { type: number; format: number; template: string }>
    >;
    // Assert
    expect(Object.keys(t)).toEqual(['compressed', 'not_compress', 'upgrade', 'recovery']);
    for (const scene of Object.values(t))
      expect(Object.keys(scene).sort()).toEqual([...NOTIFY_CHANNELS].sort());
    expect(t.compressed.sms).toEqual({ type: 2, format: 1, template: 'mine' });
    expect(t.compressed.email).toEqual({ type: 1, format: 1, template: 'pre {task.name}' });
    expect(t.upgrade.email.type).toBe(0);
    expect(t.upgrade.email.template).toBe(defaultTemplate('upgrade', 'email').template);
  });

  it('is the system default everywhere for a task without a template', () => {
    const t = effectiveTemplate({}, undefined) as Record<string, Record<string, { type: number }>>;
    expect(new Set(Object.values(t).flatMap((s) => Object.values(s).map((e) => e.type)))).toEqual(
      new Set([0]),
    );
  });
});
