import { describe, expect, it } from 'vitest';
import type { NotifyScene } from '../../contracts/messages.ts';
import type { AlarmRecord } from '../alarms/model.ts';
import type { Template } from '../directory/model.ts';
import { NotFoundError } from '../errors.ts';
import { NOTIFY_SCENES } from '../tasks/templates.ts';
import type { Task } from '../tasks/model.ts';
import { type PreviewDeps, previewTemplate } from './preview.ts';

const task = (template: Task['template'] = {}) =>
  ({
    id: 7,
    name: 'payments',
    compress: { enable: true, method: 4, strategy: 1 },
    upgrade: { enable: true, strategies: [{ interval: 5, count: 3, level: 3, reuse_receiver: 1 }] },
    template,
  }) as unknown as Task;

const predefined: Template = {
  id: 3,
  name: 'short',
  remark: '',
  created_by: 1,
  permission: [1],
  template: { compressed: { email: { format: 1, template: 'PRE {task.name}' } } },
} as unknown as Template;

const record = {
  uuid: 'u-1',
  task_id: 7,
  outcome: 'compressed',
  history: {
    id: 42,
    uuid: 'u-1',
    task_id: 7,
    batch: 41,
    metric: 'm'.repeat(40),
    level: 3,
    ctn: { hostname: 'db-9', detail: 'y'.repeat(600) },
    notice_time: 1_700_000_000,
    created_at: 1_700_000_000,
  },
  upgrades: [{ index: 0, key: '0.5.3', zcount: 4 }],
} as unknown as AlarmRecord;

function deps(t: Task, stored?: AlarmRecord): PreviewDeps {
  return {
    taskForUser: async () => t,
    getTemplate: async (id) => (id === 3 ? predefined : undefined),
    getAlarmRecord: async (_t, uuid) => (stored && uuid === stored.uuid ? stored : undefined),
    now: () => 1_700_000_100,
    env: () => ({ env: 'prod', timeZone: 'UTC' }),
  };
}

describe('previewTemplate', () => {
  it('renders a custom template with a sample alarm', async () => {
    // Arrange
    const t = task({
      udf: { compressed: { email: { format: 1, template: 'CUSTOM {task.name} {history.level}' } } },
    });
    // Act
    const out = await previewTemplate({ uid: 1, task_id: 7, scene: 'compressed', channel: 'email' }, deps(t));
    // Assert
    expect(out).toEqual({
      scene: 'compressed',
      channel: 'email',
      source: 'custom',
      alarm: 'sample',
      format: 1,
      title: '[prod] payments: alarm (error)',
      text: 'CUSTOM payments error',
    });
  });

  it('falls back on the predefined template, then on the default', async () => {
    const t = task({ template_id: 3 });
    const pre = await previewTemplate({ uid: 1, task_id: 7, scene: 'compressed', channel: 'email' }, deps(t));
    expect(pre).toMatchObject({ source: 'predefined', text: 'PRE payments' });
    const def = await previewTemplate(
      { uid: 1, task_id: 7, scene: 'recovery', channel: 'dinggroup' },
      deps(t),
    );
    expect(def).toMatchObject({ source: 'default', format: 2, title: '[prod] payments: recovered' });
    expect(def.text).toContain('- **Task**: payments');
  });

  it('cuts an SMS to 300 characters, as the provider sends it', async () => {
    const out = await previewTemplate(
      { uid: 1, task_id: 7, scene: 'compressed', channel: 'sms', uuid: 'u-1' },
      deps(task(), record),
    );
    expect([...out.text]).toHaveLength(300);
    expect(out.text.startsWith('[prod] payments: alarm (urgent) {"hostname":"db-9"')).toBe(true);
    expect(out).toMatchObject({ alarm: 'stored', uuid: 'u-1', source: 'default' });
    expect(out).not.toHaveProperty('title');
  });

  it('renders an upgrade with the rule and count the stored alarm fired', async () => {
    const t = task({
      udf: { upgrade: { sms: { template: '{context.zcount} in {context.rule.interval}m' } } },
    });
    const out = await previewTemplate(
      { uid: 1, task_id: 7, scene: 'upgrade', channel: 'sms', uuid: 'u-1' },
      deps(t, record),
    );
    expect(out.text).toBe('4 in 5m');
  });

  it('shows where a claim link goes in the messages that carry one, without a token', async () => {
    // Arrange
    const withBase: PreviewDeps = {
      ...deps(task()),
      env: () => ({ env: 'prod', timeZone: 'UTC', publicBaseUrl: 'https://alarms.example.com' }),
    };
    const preview = (scene: NotifyScene, channel: 'email' | 'sms' | 'phone', d = withBase) =>
      previewTemplate({ uid: 1, task_id: 7, scene, channel }, d);
    // Act, Assert: a pending workflow's scenes; not a call, not without a base URL, not a recovery.
    expect((await preview('generated', 'email')).text).toContain(
      '<a href="https://alarms.example.com/claim?t=…">Claim this workflow</a>',
    );
    expect((await preview('remind_pending', 'sms')).text).toContain(
      'Claim: https://alarms.example.com/claim?t=…',
    );
    expect((await preview('generated', 'phone')).text).not.toContain('claim');
    expect((await preview('generated', 'email', deps(task()))).text).not.toContain('Claim');
    expect((await preview('recovery', 'email')).text).not.toContain('Claim');
    // A compressed alarm's notice, when the task's alarms open workflows.
    expect((await preview('compressed', 'email')).text).not.toContain('Claim');
    const opening = {
      ...withBase,
      taskForUser: async () => ({ ...task(), workflow: { enable: true } }) as Task,
    };
    expect((await preview('compressed', 'email', opening)).text).toContain('/claim?t=…');
  });

  it('404s an unknown stored alarm', async () => {
    await expect(
      previewTemplate(
        { uid: 1, task_id: 7, scene: 'compressed', channel: 'sms', uuid: 'nope' },
        deps(task()),
      ),
    ).rejects.toThrowError(NotFoundError);
  });

  it.each(NOTIFY_SCENES.map((s) => [s]))(
    'renders every placeholder of the default %s template',
    async (scene) => {
      const out = await previewTemplate(
        { uid: 1, task_id: 7, scene: scene as NotifyScene, channel: 'email' },
        deps(task()),
      );
      expect(`${out.title} ${out.text}`).not.toMatch(/\{[a-z_]+\.[^}]*\}/);
    },
  );
});
