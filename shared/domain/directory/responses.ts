/**
 * What the directory routes answer with (the envelope's `data`): the types the use cases return and
 * the OpenAPI document describes (npm run gen:openapi).
 */
import type { Person } from './model.ts';

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

/** A directory user as the API shows them. */
export interface UserView {
  uid: number;
  username: string;
  pinyin: string;
  /** The account name. */
  user: string;
  email: string;
  department: string;
  phone: string;
  wechatid: string;
  /** 9: super administrator. */
  role: number;
  created_at: number;
  updated_at: number;
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
