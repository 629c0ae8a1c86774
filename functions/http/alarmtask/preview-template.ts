import { type PreviewInput, previewTemplate } from '#shared/domain/deliveries/preview.ts';
import { previewTemplateSchema } from '#shared/domain/deliveries/schemas.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { TemplatePreview } from '#shared/domain/deliveries/responses.ts';
import { reader } from '#shared/http/auth/reader.ts';
import { jsonBody } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/alarmtask/preview-template.ts';

/** POST /alarmtask/template/preview {uid, task_id, scene, channel, uuid?}: a rendered template. */
export const handler = httpHandler<PreviewInput, TemplatePreview>(
  { auth: reader(), input: jsonBody, schema: previewTemplateSchema, validate },
  (input) => previewTemplate(input),
);
