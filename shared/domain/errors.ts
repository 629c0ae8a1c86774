/**
 * Typed errors with a stable code. The HTTP layer (shared/http) maps them to the envelope and status;
 * anything else becomes `500 internal error`.
 */
export interface FieldError {
  field: string;
  message: string;
}

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly data: Record<string, unknown> = {},
    /** Extra response headers (e.g. `Retry-After` of a rate limit). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class BadRequestError extends AppError {
  constructor(message: string) {
    super(400, 400, message);
  }
}

export class UnauthorizedError extends AppError {
  constructor(message: string) {
    super(401, 401, message);
  }
}

export class ForbiddenError extends AppError {
  constructor(message: string) {
    super(403, 403, message);
  }
}

export class NotFoundError extends AppError {
  constructor(message: string) {
    super(404, 404, message);
  }
}

export class ConflictError extends AppError {
  constructor(message: string) {
    super(409, 409, message);
  }
}

export class PayloadTooLargeError extends AppError {
  constructor() {
    super(413, 413, 'request body too large');
  }
}

/** 422: the first problem is the message, `data.errors` lists them all. */
export class ValidationError extends AppError {
  constructor(readonly errors: FieldError[]) {
    super(422, 422, errors[0] ? `${errors[0].field} ${errors[0].message}`.trim() : 'validation failed', {
      errors,
    });
  }

  static of(field: string, message: string): ValidationError {
    return new ValidationError([{ field, message }]);
  }
}

/** Alarm ingestion errors (API guide §2.1): 4000 invalid report, 4001 stopped, 4002 paused, 4010 rate. */
export class AlarmError extends AppError {
  static invalid(message: string) {
    return new AlarmError(400, 4000, message);
  }
  static stopped() {
    return new AlarmError(409, 4001, 'task was stopped');
  }
  static paused() {
    return new AlarmError(409, 4002, 'task was paused');
  }
  static rateLimited(taskId: number, limit: number, retryAfter = 1) {
    return new AlarmError(
      429,
      4010,
      `task [${taskId}] reached its rate limit of ${limit} alarms per second`,
      {},
      { 'retry-after': String(retryAfter) },
    );
  }
  /** A request of more alarms than the task's limit: no second can take it (docs/rate-limits.md). */
  static overRequestCap(taskId: number, limit: number, count: number, retryAfter: number) {
    return new AlarmError(
      429,
      4010,
      `request of ${count} alarms exceeds the per-request cap of ${limit} (the rate limit of task [${taskId}]): lower the monitor's max_alerts to at most ${limit}`,
      {},
      { 'retry-after': String(retryAfter) },
    );
  }
}
