/**
 * What the workflow routes answer with (the envelope's `data`): the types the use cases return and
 * the OpenAPI document describes (npm run gen:openapi).
 */
import type { Level } from '../../contracts/levels.ts';
import type { Person } from '../directory/model.ts';
import type { PipelineProps, PipelineStatus, WorkflowStatus } from './model.ts';

/** A process record of a workflow, oldest first. */
export interface PipelineView {
  /** 0 pending, 1 processing, 2 done, 3 remind, 4 assign, 5 reactivate, 9 closed. */
  status: PipelineStatus;
  remark: string;
  props: PipelineProps;
  /** 0: the application or the system. */
  created_by: number;
  created_at: number;
  /** Null for the application or the system. */
  creator: Person | null;
}

/** The task of a workflow as it is now (else as it was when the workflow was opened). */
export interface WorkflowTask {
  id: number;
  name: string;
  department_id: number;
  department: { id: number; name: string };
}

/** The alarm a workflow was opened for. */
export interface WorkflowHistory {
  id: number;
  uuid: string;
  batch: number;
  metric: string;
  notice_time: number;
  level: Level;
  /** The alarm content as JSON text. */
  ctn: string;
  created_at: number;
}

/** A workflow with its process records (GET /workflow/show). */
export interface WorkflowDetail {
  id: number;
  task_id: number;
  metric: string;
  history_id: number;
  /** 0 pending, 1 processing, 2 done, 9 closed. */
  status: WorkflowStatus;
  created_at: number;
  updated_at: number;
  pipelines: PipelineView[];
  task: WorkflowTask;
  history: WorkflowHistory;
}

/** GET /workflow/show */
export interface WorkflowShown {
  workflow: WorkflowDetail;
}

/** A workflow in a listing: without its process records, with who claimed it and its assignees. */
export interface WorkflowSummary {
  id: number;
  task_id: number;
  metric: string;
  history_id: number;
  status: WorkflowStatus;
  created_at: number;
  updated_at: number;
  /** Null when nobody (or the application) claimed it. */
  claimer: Person | null;
  assignees: Person[];
  task: WorkflowTask;
  history: WorkflowHistory;
}

/** GET /workflow/list */
export interface WorkflowList {
  workflows: WorkflowSummary[];
  /** Empty when there is nothing more. */
  next_cursor: string;
}

/** A task's workflows by status. */
export interface WorkflowCount {
  task_id: number;
  pending: number;
  processing: number;
  done: number;
  closed: number;
  total: number;
}

/** GET /workflow/counts: in the order asked. */
export interface WorkflowCountList {
  counts: WorkflowCount[];
}

/** PUT /workflow/claim|assign|processed|reactive|close: each workflow's status after the operation. */
export interface WorkflowsOperated {
  workflows: { id: number; status: WorkflowStatus }[];
}
