import { listDepartmentsView } from '#shared/domain/directory/service.ts';
import { httpHandler } from '#shared/http/handler.ts';

/** GET /department/simple */
export const handler = httpHandler({ auth: 'app|person', input: 'none' }, () => listDepartmentsView());
