import { ID_SCHEMA } from '../validation.ts';
import { MAX_BATCH_IDS, type Operation } from './model.ts';

/** Input schemas of the workflow endpoints (API guide §10.3). Distinctness is checked by the service. */
const id = ID_SCHEMA;

const ids = {
  type: 'array',
  minItems: 1,
  maxItems: MAX_BATCH_IDS,
  items: id,
};

const remark = (required: boolean) => ({
  type: 'string',
  maxLength: 200,
  ...(required ? { minLength: 1 } : {}),
});

/** GET /workflow/show */
export const showWorkflowSchema = { type: 'object', required: ['id'], properties: { id } };

function operationSchema(required: string[], extra: Record<string, unknown> = {}) {
  return {
    type: 'object',
    required: ['ids', ...required],
    properties: {
      ids,
      remark: remark(required.includes('remark')),
      created_by: id,
      ...extra,
    },
  };
}

/** PUT /workflow/<op>: the body of each operation. */
export const operationSchemas: Record<Operation, object> = {
  claim: operationSchema([]),
  assign: operationSchema(['remark', 'assignto'], {
    assignto: { type: 'array', minItems: 1, maxItems: 100, items: id },
  }),
  processed: operationSchema(['remark', 'created_by']),
  reactive: operationSchema(['remark']),
  close: operationSchema(['remark']),
};

export interface OperationInput {
  ids: number[];
  remark?: string;
  created_by?: number;
  assignto?: number[];
}
