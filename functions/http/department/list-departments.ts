import { listDepartmentsView } from '#shared/domain/directory/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { appOrPerson } from '#shared/http/auth/app-or-person.ts';
import { noInput } from '#shared/http/input.ts';

/** GET /department/simple */
export const handler = httpHandler({ auth: appOrPerson(), input: noInput }, () => listDepartmentsView());
