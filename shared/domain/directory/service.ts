import { nowSeconds } from '../../clock.ts';
import { NotFoundError } from '../errors.ts';
import { type Department, person, type User, userView } from './model.ts';
import * as repo from './repository.ts';
import type { DepartmentDetail, DepartmentList, DepartmentShown, UserUpdated } from './responses.ts';

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
