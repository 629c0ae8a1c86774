import { dispatchRoutes } from '#shared/http/dispatch.ts';
import { handler as notFound } from '../http/not-found.ts';
import { handler as heartbeat } from './heartbeat.ts';
import { handler as alertmanager } from './intake-alertmanager.ts';
import { handler as aliyun } from './intake-aliyun.ts';
import { handler as falcon } from './intake-falcon.ts';
import { handler as grafana } from './intake-grafana.ts';
import { handler as jsonbody } from './intake-jsonbody.ts';
import { handler as rawbody } from './intake-rawbody.ts';

/** The Lambda of the `alarm-monitors` function group (infra/definitions.ts): the adapters and heartbeat. */
export const handler = dispatchRoutes(
  {
    'POST /alarm/alertmanager': alertmanager,
    'POST /alarm/grafana': grafana,
    'POST /alarm/jsonbody': jsonbody,
    'GET /alarm/rawbody': rawbody,
    'POST /alarm/rawbody': rawbody,
    'POST /alarm/arms': rawbody,
    'GET /alarm/falcon': falcon,
    'POST /alarm/falcon': falcon,
    'POST /alarm/aliyun': aliyun,
    'GET /alarm/heartbeat': heartbeat,
    'POST /alarm/heartbeat': heartbeat,
  },
  notFound,
);
