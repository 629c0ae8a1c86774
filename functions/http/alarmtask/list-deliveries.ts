import { listDeliveriesSchema } from '#shared/domain/deliveries/schemas.ts';
import { type ListDeliveriesInput, listDeliveries } from '#shared/domain/deliveries/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { DeliveryList } from '#shared/domain/deliveries/responses.ts';
import { reader } from '#shared/http/auth/reader.ts';
import { queryInput } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/alarmtask/list-deliveries.ts';

/** GET /alarmtask/deliveries?uid&task_id&kind&limit&cursor: a task's webhook and notification attempts. */
export const handler = httpHandler<ListDeliveriesInput, DeliveryList>(
  { auth: reader(), input: queryInput, schema: listDeliveriesSchema, validate },
  (input) => listDeliveries(input),
);
