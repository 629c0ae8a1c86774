import { nowSeconds } from '../../clock.ts';
import { putApp } from '../auth/apps.ts';
import { audit } from '../auth/audit.ts';
import { setDeactivated } from '../auth/credentials.ts';
import { NotFoundError, ValidationError } from '../errors.ts';
import type { TemplateScenes } from '../tasks/model.ts';
import { alarmGroupOutboundUrlErrors } from '../channels/outbound-urls.ts';
import { compileSchema } from '../validation.ts';
import { type AlarmGroup, type Department, person, toPinyin, type User, userView } from './model.ts';
import * as repo from './repository.ts';
import type { DepartmentDetail, DepartmentList, DepartmentShown, UserUpdated } from './responses.ts';
import { directorySchema } from './schemas.ts';

const validateDirectory = compileSchema(directorySchema);

// biome-ignore lint/suspicious/noExplicitAny: raw import entries, validated by the schema
type Raw = Record<string, any>;

export interface ImportSummary {
  business_units: number;
  departments: number;
  users: number;
  alarm_groups: number;
  tags: number;
  templates: number;
  apps: number;
}

/**
 * Loads a directory export (behaviour §4): the whole document is validated first (an unknown key or
 * malformed entry is reported with its path and nothing is written), then every list is upserted
 * by id. Re-running it is safe.
 */
export async function importDirectory(
  doc: unknown,
  deps = { put: repo.putDirectoryItems, putApp, setDeactivated },
): Promise<ImportSummary> {
  validateDirectory(doc);
  const d = doc as Record<string, Raw[] | undefined>;
  const now = nowSeconds();
  const stamp = (e: Raw) => ({ created_at: e.created_at ?? now, updated_at: e.updated_at ?? now });
  const items: repo.DirectoryItem[] = [
    ...(d.business_units ?? []).map(
      (e): repo.DirectoryItem => ({
        entity: 'business_unit',
        value: { id: e.id, name: e.name, remark: e.remark ?? '', pinyin: toPinyin(e.name), ...stamp(e) },
      }),
    ),
    ...(d.departments ?? []).map(
      (e): repo.DirectoryItem => ({
        entity: 'department',
        value: {
          id: e.id,
          bu_id: e.bu_id,
          name: e.name,
          remark: e.remark ?? '',
          pinyin: toPinyin(e.name),
          created_by: e.created_by ?? 0,
          updated_by: e.updated_by ?? e.created_by ?? 0,
          ...stamp(e),
        },
      }),
    ),
    ...(d.users ?? []).map(
      (e): repo.DirectoryItem => ({
        entity: 'user',
        value: {
          uid: e.uid,
          username: e.username,
          pinyin: toPinyin(e.username),
          user: e.user,
          email: e.email,
          department: e.department ?? '',
          phone: e.phone ?? '',
          wechatid: e.wechatid ?? '',
          role: e.role ?? 0,
          ...stamp(e),
        },
      }),
    ),
    ...(d.alarm_groups ?? []).map(
      (e): repo.DirectoryItem => ({
        entity: 'alarm_group',
        value: {
          id: e.id,
          name: e.name,
          remark: e.remark ?? '',
          receiver: { channels: normalizeWebhook(e.receiver.channels) },
          ...stamp(e),
        },
      }),
    ),
    ...(d.tags ?? []).map(
      (e): repo.DirectoryItem => ({
        entity: 'tag',
        value: { id: e.id, name: e.name, remark: e.remark ?? '', created_by: e.created_by ?? 0, ...stamp(e) },
      }),
    ),
    ...(d.templates ?? []).map(
      (e): repo.DirectoryItem => ({
        entity: 'template',
        value: {
          id: e.id,
          name: e.name,
          pinyin: toPinyin(e.name),
          remark: e.remark ?? '',
          created_by: e.created_by ?? 0,
          permission: e.permission ?? [],
          template: e.template as TemplateScenes,
          ...stamp(e),
        },
      }),
    ),
  ];
  // Alarm groups' webhook and robot URLs go through the outbound guard like a task's (API guide §12.7).
  const errors = [...findDuplicateIds(d), ...(await alarmGroupOutboundUrlErrors(d.alarm_groups ?? []))];
  if (errors.length > 0) throw new ValidationError(errors);
  await deps.put(items);
  for (const app of d.apps ?? []) await deps.putApp({ id: app.id, name: app.name, token: app.token });
  // `active` (optional): false deactivates a person (sessions end, sign-in refused), true makes them
  // active again; kept on the credential item, so a later import without it changes nothing.
  for (const u of d.users ?? []) {
    if (typeof u.active !== 'boolean') continue;
    await deps.setDeactivated(u.uid, !u.active, now * 1000);
    audit(u.active ? 'user-activated' : 'user-deactivated', { uid: u.uid, by: 'directory import' });
  }
  return {
    business_units: d.business_units?.length ?? 0,
    departments: d.departments?.length ?? 0,
    users: d.users?.length ?? 0,
    alarm_groups: d.alarm_groups?.length ?? 0,
    tags: d.tags?.length ?? 0,
    templates: d.templates?.length ?? 0,
    apps: d.apps?.length ?? 0,
  };
}

function normalizeWebhook(channels: Raw): AlarmGroup['receiver']['channels'] {
  const c = { ...channels };
  if (c.webhook && typeof c.webhook === 'object') c.webhook = c.webhook.url;
  return c;
}

function findDuplicateIds(d: Record<string, Raw[] | undefined>) {
  const errors: { field: string; message: string }[] = [];
  for (const [list, entries] of Object.entries(d)) {
    const seen = new Set<number>();
    (entries ?? []).forEach((e, i) => {
      const id = list === 'users' ? e.uid : e.id;
      if (seen.has(id))
        errors.push({ field: `${list}.${i}.${list === 'users' ? 'uid' : 'id'}`, message: `repeats ${id}` });
      seen.add(id);
    });
  }
  return errors;
}

/** GET /department/simple */
export async function listDepartmentsView(): Promise<DepartmentList> {
  const departments = await repo.listDepartments();
  return {
    departments: departments.map((d) => ({ id: d.id, pinyin: d.pinyin, name: d.name, remark: d.remark })),
  };
}

/** GET /department/show: API guide §4.1 detail. */
export async function showDepartment(id: number): Promise<DepartmentShown> {
  const dept = await repo.getDepartment(id);
  if (!dept) throw new NotFoundError(`department [${id}] not found`);
  const [bu, people] = await Promise.all([
    repo.getBusinessUnit(dept.bu_id),
    repo.getUsers([dept.created_by, dept.updated_by].filter((u) => u > 0)),
  ]);
  const byUid = new Map(people.map((u) => [u.uid, u]));
  return { department: departmentDetail(dept, bu, byUid) };
}

function departmentDetail(
  d: Department,
  bu: Awaited<ReturnType<typeof repo.getBusinessUnit>>,
  users: Map<number, User>,
): DepartmentDetail {
  const p = (uid: number) => {
    const u = users.get(uid);
    return u ? person(u) : { uid, username: '', user: '', email: '', department: '' };
  };
  return {
    id: d.id,
    bu_id: d.bu_id,
    name: d.name,
    pinyin: d.pinyin,
    remark: d.remark,
    created_by: d.created_by,
    updated_by: d.updated_by,
    created_at: d.created_at,
    updated_at: d.updated_at,
    creator: p(d.created_by),
    updator: p(d.updated_by),
    business_unit: bu
      ? { id: bu.id, name: bu.name, remark: bu.remark, pinyin: bu.pinyin }
      : { id: d.bu_id, name: '', remark: '', pinyin: '' },
  };
}

/** PUT /user/updatephone */
export async function updatePhone(uid: number, phone: string): Promise<UserUpdated> {
  const user = await repo.updateUserPhone(uid, phone, nowSeconds());
  if (!user) throw new NotFoundError(`user [${uid}] not found`);
  return { user: userView(user) };
}

/**
 * Gives the users stored before the sign-in index existed their index entries (AP-D12): a Scan, then
 * an update per user. Idempotent. For `npm run admin -- backfill`; a directory re-import does the same.
 */
export async function backfillUserSignInIndex(
  deps = { scan: repo.scanUsersWithoutSignInKeys, setKeys: repo.setUserSignInKeys },
): Promise<number> {
  let updated = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await deps.scan(start);
    for (const user of page.users) {
      if (!user.user && !user.email) continue;
      await deps.setKeys(user);
      updated++;
    }
    start = page.next;
  } while (start);
  return updated;
}
