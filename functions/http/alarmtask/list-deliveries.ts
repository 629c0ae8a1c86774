import { listDeliveriesSchema } from '#shared/domain/deliveries/schemas.ts';
import { type ListDeliveriesInput, listDeliveries } from '#shared/domain/deliveries/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { DeliveryList } from '#shared/domain/deliveries/responses.ts';

/** GET /alarmtask/deliveries?uid&task_id&kind&limit&cursor: a task's webhook and notification attempts. */
export const handler = httpHandler<ListDeliveriesInput, DeliveryList>(
  { auth: 'reader', input: 'query', schema: listDeliveriesSchema },
  (input) => listDeliveries(input),
);
