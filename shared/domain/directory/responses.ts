/**
 * What the directory routes answer with (the envelope's `data`): the types the use cases return and
 * the OpenAPI document describes (npm run gen:openapi).
 */
import type { Person, UserView } from './model.ts';

/** A department in the listing. */
export interface DepartmentEntry {
  id: number;
  pinyin: string;
  name: string;
  remark: string;
}

/** GET /department/simple */
export interface DepartmentList {
  departments: DepartmentEntry[];
}

/** A department with its business unit and the people who created and last changed it. */
export interface DepartmentDetail {
  id: number;
  bu_id: number;
  name: string;
  pinyin: string;
  remark: string;
  created_by: number;
  updated_by: number;
  created_at: number;
  updated_at: number;
  creator: Person;
  updator: Person;
  business_unit: { id: number; name: string; remark: string; pinyin: string };
}

/** GET /department/show */
export interface DepartmentShown {
  department: DepartmentDetail;
}

/** GET /user/profile */
export interface UserProfile {
  user: UserView;
  permission: {
    role: number;
    /** The tasks the user may read. */
    read: number[];
    /** The tasks the user may change. */
    write: number[];
  };
}

/** PUT /user/updatephone */
export interface UserUpdated {
  user: UserView;
}
