/**
 * The read views of `npm run admin` (API guide §13): the same domain reads the HTTP API serves, as tables
 * for a person (or the API's JSON with --json). The operator at the CLI holds the table's
 * credentials, so reads run as OPERATOR (everything is visible).
 */

export type Row = Record<string, unknown>;

const cell = (v: unknown): string => {
  if (v === undefined || v === null) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
};

/** Fixed-width columns; long cells are cut to `max` characters. */
export function table(rows: Row[], columns: string[], max = 48): string {
  if (rows.length === 0) return '(none)';
  const text = rows.map((r) =>
    columns.map((c) => {
      const s = cell(r[c]).replace(/\s+/g, ' ');
      return s.length > max ? `${s.slice(0, max - 1)}…` : s;
    }),
  );
  const widths = columns.map((c, i) => Math.max(c.length, ...text.map((t) => t[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((s, i) => s.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...text.map(line)].join('\n');
}

/** A message's text on one line, markup and entities out (for a terminal). */
const plain = (text: string) =>
  text
    .replace(/<[^>]*>/g, ' ')
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ')
    .trim();

/** Unix seconds as UTC `YYYY-MM-DD hh:mm:ss`. */
export const time = (t: unknown) =>
  typeof t === 'number' && t > 0 ? new Date(t * 1000).toISOString().replace('T', ' ').slice(0, 19) : '';

/** A decision trace as a timeline (stages, receivers, notifications, webhooks, workflow). */
// biome-ignore lint/suspicious/noExplicitAny: the trace view is read as data here
export function traceText(t: any): string {
  const out: string[] = [];
  const a = t.alarm;
  out.push(
    `alarm ${a.uuid} of task ${a.task.id} (${a.task.name})`,
    `  history id ${a.history_id || '-'}, level ${a.level_name}${a.reported_level !== a.level ? ` (reported ${a.reported_level})` : ''}, processed ${time(a.processed_at ?? a.created_at)}`,
    ...(a.ctn ? [`  content ${JSON.stringify(a.ctn)}`] : []),
    `  => ${t.summary}`,
    ...(t.delivery ? [`  delivery: ${t.delivery.result}`] : []),
    `  configuration: ${t.configuration.note}`,
    '',
    'stages',
  );
  for (const s of t.stages) {
    out.push(`  ${s.stage.padEnd(9)} ${s.result.padEnd(12)} ${s.text ?? ''}`);
    for (const r of s.match?.rules ?? [])
      out.push(
        `      matched: ${r.field} ${r.operator}${r.threshold !== undefined ? ` ${r.threshold}` : ''} (saw ${r.value ?? 'nothing'})`,
      );
    for (const m of s.misses ?? [])
      for (const r of m.rules)
        out.push(
          `      condition ${m.index} failed: ${r.field} ${r.operator}${r.threshold !== undefined ? ` ${r.threshold}` : ''} (saw ${r.value ?? 'nothing'})`,
        );
    for (const u of s.strategies ?? [])
      out.push(
        `      strategy ${u.index}: ${u.counted} in ${u.interval} min (threshold ${u.count})${u.fired ? ' FIRED' : ''}`,
      );
  }
  if (t.receivers) {
    out.push('', `receivers: ${t.receivers.text}`);
    for (const m of t.receivers.misses ?? [])
      for (const r of m.rules)
        out.push(
          `  dispatch item ${m.index} not matched: ${r.field} ${r.operator}${r.threshold !== undefined ? ` ${r.threshold}` : ''} (saw ${r.value ?? 'nothing'})`,
        );
    const names = new Map<number, string>((t.users ?? []).map((u: Row) => [u.uid, u.username]));
    const person = (uid: number) => (names.get(uid) ? `${names.get(uid)} (uid ${uid})` : `uid ${uid}`);
    for (const [ch, who] of Object.entries(t.receivers.people ?? {}))
      out.push(`  ${ch}: ${Array.isArray(who) ? who.map(person).join(', ') : cell(who)}`);
    for (const r of t.receivers.robots ?? []) out.push(`  ${r.channel} (${r.set}): ${r.robots.join(', ')}`);
  }
  out.push('', 'notifications');
  if (!t.notifications.length) out.push('  (none)');
  for (const n of t.notifications) {
    out.push(`  ${n.job_id}  ${n.status ?? ''}`);
    if (n.message?.title) out.push(`    title: ${n.message.title}`);
    if (n.message?.text) out.push(`    text: ${plain(n.message.text).slice(0, 160)}`);
    for (const at of n.attempts ?? [])
      out.push(
        `    ${time(at.at)}  ${at.target ?? ''}  ${at.outcome}${at.code ? ` (${at.code}${at.detail ? `: ${at.detail}` : ''})` : ''}`,
      );
  }
  out.push('', 'webhooks');
  if (!t.webhooks.length) out.push('  (none)');
  for (const w of t.webhooks) {
    out.push(`  ${w.event_id}`);
    for (const at of w.attempts ?? [])
      out.push(
        `    #${at.attempt} ${time(at.at)}  ${at.outcome}${at.status ? ` HTTP ${at.status}` : ''}${at.error ? `: ${at.error}` : ''} (${at.duration_ms} ms)`,
      );
  }
  out.push('', `workflow: ${t.workflow ? `#${t.workflow.id}, status ${t.workflow.status}` : '(none)'}`);
  return out.join('\n');
}

/** The options the read views take (strings: validated by each route's own schema). */
export const VIEW_OPTIONS = [
  'q',
  'status',
  'department',
  'tag',
  'outcome',
  'level',
  'metric',
  'batch',
  'from',
  'to',
  'limit',
  'claimer',
  'assignee',
  'kind',
  'task',
] as const;

type Values = Partial<Record<(typeof VIEW_OPTIONS)[number], string>> & { json?: boolean; all?: boolean };

/**
 * The input of a route's domain function from the command line, checked by the schema the route's
 * handler validates with (so the CLI takes exactly what the API takes), then run as the operator.
 */
async function inputFor(handlerFile: string, raw: Record<string, string | undefined>) {
  const { handler } = (await import(/* @vite-ignore */ `../../${handlerFile}`)) as {
    handler: { spec: { schema?: object } };
  };
  const { compileCoercingSchema } = await import('../domain/validation.ts');
  const { OPERATOR } = await import('../domain/tasks/access.ts');
  const input: Record<string, unknown> = { uid: '1' };
  for (const [k, v] of Object.entries(raw)) if (v !== undefined) input[k] = v;
  if (handler.spec.schema) compileCoercingSchema(handler.spec.schema)(input);
  return { ...input, uid: OPERATOR };
}

// biome-ignore lint/suspicious/noExplicitAny: the views print what the domain returns
type Data = any;

/** One read view: the route it stands for, its input from the command line, its text. */
interface View {
  /** Whether the positional arguments (and options) are this view's. */
  fits: (args: string[], values: Values) => boolean;
  /** The route's handler: its schema checks the input, so the CLI takes exactly what the API takes. */
  route: string;
  input: (args: string[], values: Values) => Record<string, string | undefined>;
  /** The domain read the route serves, loaded when the view runs. */
  read: () => Promise<(input: never) => Promise<Data>>;
  text: (data: Data) => string;
}

/** The views of each command, the first that fits runs. */
const VIEWS = new Map<string, View[]>([
  [
    'tasks',
    [
      {
        fits: (args) => args.length === 0,
        route: 'functions/http/alarmtask/list-tasks.ts',
        input: (_, v) => ({
          q: v.q,
          status: v.status,
          department_id: v.department,
          tag_id: v.tag,
          limit: v.limit,
        }),
        read: async () => (await import('../domain/tasks/list.ts')).listTasks,
        text: (data) =>
          table(
            data.tasks.map((t: Row & { department: { name: string }; tags: { name: string }[] }) => ({
              ...t,
              department: t.department.name,
              tags: t.tags.map((x) => x.name).join(','),
              updated: time(t.updated_at),
            })),
            ['id', 'name', 'status', 'department', 'tags', 'updated'],
          ),
      },
    ],
  ],
  [
    'alarms',
    [
      {
        fits: (args) => args.length === 1,
        route: 'functions/http/alarmtask/list-alarms.ts',
        input: ([task], v) => ({
          task_id: task,
          outcome: v.outcome,
          level: v.level,
          metric: v.metric,
          batch: v.batch,
          from: v.from,
          to: v.to,
          limit: v.limit,
        }),
        read: async () => (await import('../domain/reads/alarm-history.ts')).listAlarms,
        text: (data) =>
          table(
            data.alarms.map((a: Row) => ({ ...a, time: time(a.created_at), id: a.history_id || '' })),
            ['time', 'uuid', 'id', 'level_name', 'outcome', 'batch', 'k', 'ctn'],
          ),
      },
    ],
  ],
  [
    'trace',
    [
      {
        fits: (args) => args.length === 2,
        route: 'functions/http/alarmtask/trace-alarm.ts',
        input: ([task, uuid]) => ({ task_id: task, uuid }),
        read: async () => (await import('../domain/reads/alarm-trace.ts')).traceAlarm,
        text: traceText,
      },
    ],
  ],
  [
    'workflows',
    [
      {
        fits: (args) => args.length === 1,
        route: 'functions/http/workflow/list-workflows.ts',
        input: ([task], v) => ({
          task_id: task,
          status: v.status,
          claimer: v.claimer,
          assignee: v.assignee,
          from: v.from,
          to: v.to,
          limit: v.limit,
        }),
        read: async () => (await import('../domain/workflows/list.ts')).listWorkflows,
        text: (data) =>
          table(
            data.workflows.map((w: Row & { claimer?: { username: string }; history?: { uuid: string } }) => ({
              ...w,
              created: time(w.created_at),
              claimer: w.claimer?.username ?? '',
              alarm: w.history?.uuid ?? '',
            })),
            ['id', 'status', 'created', 'claimer', 'alarm'],
          ),
      },
    ],
  ],
  [
    'deliveries',
    [
      {
        fits: (args) => args.length === 1,
        route: 'functions/http/alarmtask/list-deliveries.ts',
        input: ([task], v) => ({ task_id: task, kind: v.kind, limit: v.limit }),
        read: async () => (await import('../domain/deliveries/service.ts')).listDeliveries,
        text: (data) =>
          table(
            data.deliveries.map((d: Row) => ({ ...d, time: time(d.at) })),
            ['time', 'kind', 'id', 'channel', 'target', 'attempt', 'outcome', 'status', 'error'],
          ),
      },
    ],
  ],
  [
    'dlq',
    [
      {
        // dlq redrive QUEUE (MESSAGE_ID | --all)
        fits: (args, v) => {
          const [sub, queue, id] = args;
          return sub === 'redrive' && !!queue && (id === undefined) !== !v.all && args.length <= 3;
        },
        route: 'functions/http/delivery/redrive-dead-letters.ts',
        input: ([, queue, id], v) => ({
          queue,
          ...(id ? { message_id: id } : { all: '1' }),
          task_id: v.task,
        }),
        read: async () => (await import('../domain/deliveries/dlq.ts')).redriveDeadLetters,
        text: (data) => `redriven: ${data.redriven}${data.more ? ' (more left: run again)' : ''}`,
      },
      {
        // dlq [QUEUE]
        fits: (args) => args[0] !== 'redrive' && args.length <= 1,
        route: 'functions/http/delivery/list-dead-letters.ts',
        input: ([queue], v) => ({ queue: queue ?? 'webhook', task_id: v.task, limit: v.limit }),
        read: async () => (await import('../domain/deliveries/dlq.ts')).listDeadLetters,
        text: (data) =>
          [
            table(
              data.dead_letters.map((d: Row & { reason?: { error?: string; status?: number } }) => ({
                ...d,
                carries: d.event_id ?? d.job_id ?? d.uuid ?? d.kind,
                why: d.reason ? `${d.reason.status ?? ''} ${d.reason.error ?? ''}`.trim() : '',
                last: time(d.last_failure_at),
              })),
              ['message_id', 'task_id', 'carries', 'attempts', 'last', 'why'],
              64,
            ),
            ...(data.note ? [`note: ${data.note}`] : []),
            ...(data.more ? ['(more dead letters than listed)'] : []),
          ].join('\n'),
      },
    ],
  ],
]);

/** Runs a read view; false when `command` is not one, or its arguments fit none of its views. */
export async function view(command: string | undefined, args: string[], values: Values): Promise<boolean> {
  const chosen = command === undefined ? undefined : VIEWS.get(command)?.find((v) => v.fits(args, values));
  if (!chosen) return false;
  const read = await chosen.read();
  const data = await read((await inputFor(chosen.route, chosen.input(args, values))) as never);
  console.log(values.json ? JSON.stringify(data, null, 2) : chosen.text(data));
  return true;
}
