import { createRequire } from 'node:module';
import type { TemplateScenes } from '../tasks/model.ts';
import type { ReceiverConfig } from '../../contracts/receivers.ts';

/** Directory entities (API guide §4.1, §4.2; behaviour §4), as stored. */
export interface BusinessUnit {
  id: number;
  name: string;
  remark: string;
  pinyin: string;
  created_at: number;
  updated_at: number;
}

export interface Department {
  id: number;
  bu_id: number;
  name: string;
  remark: string;
  pinyin: string;
  created_by: number;
  updated_by: number;
  created_at: number;
  updated_at: number;
}

export interface User {
  uid: number;
  username: string;
  pinyin: string;
  user: string;
  email: string;
  department: string;
  phone: string;
  wechatid: string;
  role: number;
  created_at: number;
  updated_at: number;
}

export interface AlarmGroup {
  id: number;
  name: string;
  remark: string;
  receiver: Pick<ReceiverConfig, 'channels'>;
  created_at: number;
  updated_at: number;
}

export interface Tag {
  id: number;
  name: string;
  remark: string;
  created_by: number;
  created_at: number;
  updated_at: number;
}

export interface Template {
  id: number;
  name: string;
  pinyin: string;
  remark: string;
  created_by: number;
  /** uids allowed to edit the template. */
  permission: number[];
  template: TemplateScenes;
  created_at: number;
  updated_at: number;
}

export const ROLE_SUPER_ADMIN = 9;

let pinyinPro: typeof import('pinyin-pro') | undefined;

/** Pinyin per behaviour §4: no tones, `ü` as `v`, syllables joined, non-Chinese text kept as is. */
export function toPinyin(text: string): string {
  if (!text) return '';
  // pinyin-pro is loaded on first use, not at import: with its dictionary it is ~450 KB of the
  // task bundles and ~75 ms of their cold import (its first call takes ~90 ms more), paid now only
  // by a request that names something (creating a task, renaming one; a kept name keeps its pinyin).
  // esbuild turns this `require` into its lazily evaluated copy of the module; unbundled ESM has none.
  pinyinPro ??= (
    typeof require === 'function' ? require('pinyin-pro') : createRequire(import.meta.url)('pinyin-pro')
  ) as typeof import('pinyin-pro');
  return pinyinPro.pinyin(text, { toneType: 'none', type: 'array', v: true, nonZh: 'consecutive' }).join('');
}

/** Summary person used inside tasks (API guide §4.3). */
export interface SummaryPerson {
  uid: number;
  username: string;
  email: string;
  department: string;
}

/** Person object (API guide §4.3: department creator/updator). */
export interface Person extends SummaryPerson {
  user: string;
}

export function summaryPerson(u: User): SummaryPerson {
  return { uid: u.uid, username: u.username, email: u.email, department: u.department };
}

export function person(u: User): Person {
  return { uid: u.uid, username: u.username, user: u.user, email: u.email, department: u.department };
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

/** The user view of API guide §4.2. */
export function userView(u: User): UserView {
  return {
    uid: u.uid,
    username: u.username,
    pinyin: u.pinyin,
    user: u.user,
    email: u.email,
    department: u.department,
    phone: u.phone,
    wechatid: u.wechatid,
    role: u.role,
    created_at: u.created_at,
    updated_at: u.updated_at,
  };
}
