import { describe, expect, it } from 'vitest';
import type { TaskConfig } from './model.ts';
import { normPermission } from './normalize.ts';
import { parseCreateBody } from './rules.ts';
import { base, type Body, cond, validationOf } from './test-bodies.ts';

describe('parseCreateBody: validation (API guide §5.2, §5.4, §5.6, §2, §16)', () => {
  const cases: [string, Body, string][] = [
    ['name too long', base({ name: 'x'.repeat(101) }), 'name must be at most 100 characters'],
    ['name missing', base({ name: undefined }), 'name is required'],
    ['created_by missing', base({ created_by: undefined }), 'created_by is required'],
    ['created_by a string', base({ created_by: '1' }), 'created_by must be an integer'],
    ['department missing', base({ department_id: undefined }), 'department_id is required'],
    ['flag_save_db 2', base({ flag_save_db: 2 }), 'flag_save_db must be one of 0, 1'],
    ['receiver missing', base({ receiver: undefined }), 'receiver is required'],
    ['receiver empty', base({ receiver: {} }), 'receiver must have alarmgroup or channels'],
    [
      'receiver with empty lists',
      base({ receiver: { alarmgroup: [], channels: { sms: [] } } }),
      'receiver must have alarmgroup or channels',
    ],
    [
      'uid not an integer',
      base({ receiver: { channels: { email: ['a'] } } }),
      'receiver.channels.email.0 must be an integer',
    ],
    [
      'seven robots',
      base({
        receiver: {
          channels: { dinggroup: Array.from({ length: 7 }, (_, i) => ({ webhook: `w${i}`, secret: 's' })) },
        },
      }),
      'receiver.channels.dinggroup must have at most 6 items',
    ],
    [
      'task-level robot without secret',
      base({ receiver: { channels: { yachgroup: [{ webhook: 'w' }] } } }),
      'receiver.channels.yachgroup.0.secret is required',
    ],
    [
      'webhook not a URL',
      base({ receiver: { channels: { webhook: 'ftp://x' } } }),
      'receiver.channels.webhook must be an http(s) URL',
    ],
    ['duplicate tags', base({ task_tags: [1, 1] }), 'task_tags must not contain duplicates'],
    [
      'dispatch without conditions',
      base({
        receiver: {
          channels: { email: [1] },
          dispatch: [{ conditions: [], receiver: { channels: { email: [2] } } }],
        },
      }),
      'receiver.dispatch.0.conditions must not be empty',
    ],
    [
      'dispatch receiver empty',
      base({
        receiver: { channels: { email: [1] }, dispatch: [{ conditions: [cond('eq', 'a')], receiver: {} }] },
      }),
      'receiver.dispatch.0.receiver must have alarmgroup or channels',
    ],
    [
      'filter without mode',
      base({ filter: { enable: true, conditions: [{ ...cond('eq', 'a'), level: 1 }] } }),
      'filter.mode is required',
    ],
    [
      'filter without conditions',
      base({ filter: { enable: true, mode: 1, conditions: [] } }),
      'filter.conditions must not be empty',
    ],
    [
      'filter level 5',
      base({ filter: { enable: true, mode: 1, conditions: [{ ...cond('eq', 'a'), level: 5 }] } }),
      'filter.conditions.0.level must be one of 0, 1, 2, 3, 9',
    ],
    [
      'unknown operator',
      base({ filter: { enable: true, mode: 2, conditions: [{ ...cond('like', 'a'), level: 1 }] } }),
      'filter.conditions.0.rule.0.operator must be one of eq-self, eq, neq, gt, gte, lt, lte, in, not-in, contain, not-contain, isset, not-isset',
    ],
    [
      'threshold missing',
      base({ filter: { enable: true, mode: 2, conditions: [{ ...cond('gt'), level: 1 }] } }),
      'filter.conditions.0.rule.0.threshold is required',
    ],
    [
      'reminder without interval',
      base({ workflow: { enable: true, reminds: [{ mode: 'once', status: 0, reuse_receiver: 1 }] } }),
      'workflow.reminds.0.interval is required',
    ],
    [
      'reminder interval 0',
      base({
        workflow: { enable: true, reminds: [{ mode: 'once', status: 0, interval: 0, reuse_receiver: 1 }] },
      }),
      'workflow.reminds.0.interval must be greater than 0',
    ],
    [
      'reminder interval 1.5',
      base({
        workflow: { enable: true, reminds: [{ mode: 'cycle', status: 1, interval: 1.5, reuse_receiver: 1 }] },
      }),
      'workflow.reminds.0.interval must be an integer',
    ],
    [
      'reminder mode',
      base({
        workflow: { enable: true, reminds: [{ mode: 'twice', status: 0, interval: 5, reuse_receiver: 1 }] },
      }),
      'workflow.reminds.0.mode must be one of once, cycle',
    ],
    [
      'reminder needs receiver',
      base({
        workflow: { enable: true, reminds: [{ mode: 'once', status: 0, interval: 5, reuse_receiver: 0 }] },
      }),
      'workflow.reminds.0.receiver is required',
    ],
    [
      'upgrade without strategies',
      base({ upgrade: { enable: true, strategies: [] } }),
      'upgrade.strategies must not be empty',
    ],
    [
      'upgrade level 9',
      base({
        upgrade: { enable: true, strategies: [{ interval: 5, count: 3, level: 9, reuse_receiver: 1 }] },
      }),
      'upgrade.strategies.0.level must be one of 0, 1, 2, 3',
    ],
    [
      'compress method 2',
      base({ compress: { enable: true, method: 2, strategy: 1, strategy_cycle: 5 } }),
      'compress method 2 is not supported',
    ],
    [
      'compress method 1 needs conditions',
      base({ compress: { enable: true, method: 1, strategy: 1, strategy_cycle: 5 } }),
      'compress.conditions is required',
    ],
    [
      'compress count strategy needs a count',
      base({ compress: { enable: true, method: 4, strategy: 5, strategy_cycle: 5 } }),
      'compress.strategy_count is required',
    ],
    [
      'compress cycle 0',
      base({ compress: { enable: true, method: 4, strategy: 1, strategy_cycle: 0 } }),
      'compress.strategy_cycle must be greater than 0',
    ],
    [
      'recovery delay needs interval',
      base({ recovery: { enable: true, mode: 2 } }),
      'recovery.delay_interval is required',
    ],
    [
      'recovery conditions need rules',
      base({ recovery: { enable: true, mode: 1, conditions: [{ rule: [] }] } }),
      'recovery.conditions.0.rule must not be empty',
    ],
    [
      'udf without template_id',
      base({ template: { udf: { compressed: { email: { format: 1 } } } } }),
      'template.template_id is required when udf is given',
    ],
    [
      'udf format 5',
      base({ template: { template_id: 0, udf: { upgrade: { sms: { format: 5 } } } } }),
      'template.udf.upgrade.sms.format must be one of 1, 2, 3, 4',
    ],
    ['enable not boolean', base({ filter: { enable: 1 } }), 'filter.enable must be a boolean'],
    [
      'too many permission users',
      base({
        permission: {
          rw: Array.from({ length: 60 }, (_, i) => i + 2),
          ro: Array.from({ length: 40 }, (_, i) => i + 100),
        },
      }),
      'permission must name at most 90 distinct users',
    ],
  ];
  it.each(cases)('%s', (_label, body, message) => {
    const err = validationOf(() => parseCreateBody(body));
    expect(err.message).toBe(message);
    expect(err.status).toBe(422);
    expect(err.errors[0]).toMatchObject({ field: expect.any(String), message: expect.any(String) });
  });

  it('lists every problem in data.errors', () => {
    const err = validationOf(() =>
      parseCreateBody(
        base({
          name: 'x'.repeat(101),
          receiver: {},
          compress: { enable: true, method: 2, strategy: 1, strategy_cycle: 1 },
        }),
      ),
    );
    expect(err.errors.map((e) => e.field)).toEqual(['name', 'receiver', 'compress']);
    expect(err.data).toEqual({ errors: err.errors });
  });

  it.each(['isset', 'not-isset', 'eq-self'])('accepts %s without a threshold', (op) => {
    const { config } = parseCreateBody(
      base({ compress: { enable: true, method: 1, conditions: [cond(op)], strategy: 1, strategy_cycle: 5 } }),
    );
    expect(config.compress.conditions).toEqual([{ rule: [{ field: 'ctn.host', operator: op }] }]);
  });

  it('does not check the inside of a disabled module and keeps what was sent', () => {
    const { config } = parseCreateBody(
      base({ filter: { mode: 7, whatever: 'x' }, upgrade: { enable: false } }),
    );
    expect(config.filter).toEqual({ mode: 7, whatever: 'x', enable: false });
    expect(config.upgrade).toEqual({ enable: false });
    expect(config.workflow).toEqual({ enable: false });
  });

  it('refuses disabled-module content that would not read back as sent (422 naming the field, not a 500)', () => {
    let deep: Body = { x: 1 };
    for (let i = 0; i < 30; i++) deep = { a: deep };
    const range = `must be a number between -${Number.MAX_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER}`;
    const cases: [Body, string][] = [
      [{ filter: { enable: false, '': 1 } }, 'filter must not have an empty key'],
      [{ workflow: { reminds: [{ x: { '': 1 } }] } }, 'workflow.reminds.0.x must not have an empty key'],
      [{ upgrade: { enable: false, n: 1e-300 } }, 'upgrade.n must be 0 or at least 1e-130 in magnitude'],
      [{ compress: { n: Number.POSITIVE_INFINITY } }, `compress.n ${range}`],
      [{ filter: { enable: false, n: 1e20 } }, `filter.n ${range}`],
      [{ filter: { enable: false, n: [2 ** 53 + 2] } }, `filter.n.0 ${range}`],
      [
        { filter: JSON.parse('{"enable":false,"x":{"__proto__":1}}') },
        'filter.x.__proto__ is a reserved key',
      ],
      [
        { workflow: JSON.parse('{"enable":false,"constructor":{"a":1}}') },
        'workflow.constructor is a reserved key',
      ],
      [
        { recovery: { enable: false, deep } },
        'recovery.deep.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a must not be nested deeper than 24 levels',
      ],
    ];
    for (const [over, msg] of cases)
      expect(validationOf(() => parseCreateBody(base(over))).message).toBe(msg);
    expect(
      parseCreateBody(base({ filter: { enable: false, n: [0, -2.5, 9007199254740991], s: '' } })).config
        .filter,
    ).toEqual({
      enable: false,
      n: [0, -2.5, 9007199254740991],
      s: '',
    });
  });
});

describe('parseCreateBody: normalization to the stored form', () => {
  it('applies defaults and drops unknown fields', () => {
    const { created_by, config } = parseCreateBody(
      base({ extra: 1, receiver: { channels: { email: [1, 1, 2] }, junk: 1 } }),
    );
    expect(created_by).toBe(1);
    expect(config).toEqual({
      name: 'disk usage',
      department_id: 1,
      flag_save_db: 1,
      task_tags: [],
      permission: { rw: [1], ro: [] },
      receiver: { channels: { email: [1, 2] }, mode: 1 },
      workflow: { enable: false },
      filter: { enable: false },
      upgrade: { enable: false },
      compress: { enable: false },
      recovery: { enable: false },
      template: { template_id: 0 },
    } satisfies TaskConfig);
  });

  it('stores a webhook given as {url} as the URL string and an empty one as none', () => {
    const a = parseCreateBody(base({ receiver: { channels: { webhook: { url: 'https://h.example/x' } } } }));
    const b = parseCreateBody(base({ receiver: { channels: { email: [1], webhook: '' } } }));
    expect(a.config.receiver.channels).toEqual({ webhook: 'https://h.example/x' });
    expect(b.config.receiver.channels).toEqual({ email: [1] });
  });

  it('keeps only the fields of the chosen compress method, recovery mode and reuse choice', () => {
    const { config } = parseCreateBody(
      base({
        compress: {
          enable: true,
          method: 4,
          conditions: [cond('eq', 'a')],
          strategy: 2,
          strategy_cycle: 5,
          strategy_count: 3,
        },
        recovery: { enable: true, mode: 2, delay_interval: 10, conditions: [cond('eq', 'a')] },
        upgrade: {
          enable: true,
          strategies: [{ interval: 5, count: 3, level: 2, reuse_receiver: 1, receiver: { alarmgroup: [9] } }],
        },
        filter: { enable: true, mode: 1, conditions: [{ ...cond('eq', 'a'), level: 9 }] },
      }),
    );
    expect(config.compress).toEqual({
      enable: true,
      method: 4,
      strategy: 2,
      strategy_cycle: 5,
      not_match: 1,
    });
    expect(config.recovery).toEqual({ enable: true, mode: 2, delay_interval: 10 });
    expect(config.upgrade.strategies).toEqual([{ interval: 5, count: 3, level: 2, reuse_receiver: 1 }]);
    expect(config.filter.not_match).toBe(0);
  });

  it('gives the creator rw; a uid in rw and ro is rw', () => {
    expect(normPermission({ rw: [2, 2], ro: [2, 3, 1] }, 1)).toEqual({ rw: [1, 2], ro: [3] });
    expect(normPermission(undefined, 5)).toEqual({ rw: [5], ro: [] });
  });
});
