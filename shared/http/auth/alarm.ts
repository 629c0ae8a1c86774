import { count, countByVersion } from '../../metrics.ts';
import type { Authentication } from '../handler.ts';

/**
 * The `alarm` authentication mode: an alarm intake (`/alarm/report`, the monitor adapters). No
 * application auth: the use case authenticates with the task token or the intake token (API guide
 * §3.3, §3.4). Refused reports are counted in the `AlarmsRefused` metric by envelope code (the
 * accepted ones are counted by the pipeline); every answer and every refusal per function version
 * (`IntakeReports`, `IntakeRefused`): a version that refuses what the others accept rolls its
 * deployment back.
 */
export const alarmSender: Authentication = {
  kind: 'alarm',
  refused(response) {
    const code = (JSON.parse(String(response.body)) as { code: number }).code;
    count('AlarmsRefused', { code });
    countByVersion('IntakeRefused');
  },
  answered() {
    countByVersion('IntakeReports');
  },
};
