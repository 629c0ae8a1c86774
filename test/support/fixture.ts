import { readFileSync } from 'node:fs';
import { fixturePath } from './seed.ts';

/** The seeded directory fixture and its records as the API shows them. */

// biome-ignore lint/suspicious/noExplicitAny: fixture records
export const fixture = JSON.parse(readFileSync(fixturePath, 'utf8')) as Record<string, any[]>;
export const user = (uid: number) => fixture.users.find((u) => u.uid === uid);
export const summary = (uid: number) => {
  const u = user(uid);
  return { uid, username: u.username, email: u.email, department: u.department };
};
export const person = (uid: number) => ({ ...summary(uid), user: user(uid).user });
export const dept = (id: number) => fixture.departments.find((d) => d.id === id);
export const group = (id: number) => fixture.alarm_groups.find((g) => g.id === id);
export const tag = (id: number) => fixture.tags.find((t) => t.id === id);
export const template = (id: number) => fixture.templates.find((t) => t.id === id);
