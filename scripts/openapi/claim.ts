/**
 * The answers of the claim link routes (`GET|HEAD|POST /claim`, API guide §11.7): a browser gets an
 * HTML page for every answer, refusals included (the same page, with the reason); a caller that sends
 * `Accept: application/json` (and not text/html) gets the envelope, with the page's content as `data`.
 */
type Json = Record<string, unknown>;

const envelope = (codes: number[], data: string): Json => ({
  allOf: [
    { $ref: '#/components/schemas/Envelope' },
    {
      properties: {
        code: codes.length === 1 ? { const: codes[0] } : { enum: codes },
        data: { type: 'object', description: data },
      },
    },
  ],
});

const VIEW =
  'The claim view: `status`, `code`, `msg`, `channel`, `workflow` {id, status, status_name, task {id, name}, ' +
  'level, level_name, summary, created_at, created_at_text}, `claim` {uid, username, at, at_text, you, link?} ' +
  'when claimed, `offer` {claimant {uid, username} or null, page_nonce} while it can be claimed.';

function answer(description: string, code: number, data = VIEW, headers?: Json): Json {
  return {
    description,
    ...(headers ? { headers } : {}),
    content: {
      'text/html': { schema: { type: 'string', description: 'The claim page (no script, under 20 KB).' } },
      'application/json': { schema: envelope([code], data) },
    },
  };
}

/** The responses of `GET /claim` (and HEAD) or `POST /claim`. */
export function claimResponses(method: string): Json {
  const post = method === 'POST';
  const refusal = 'The reason only (`{}`).';
  return {
    '200': answer(
      post
        ? 'Claimed (by this request, or earlier by the same person: "you claimed workflow [5] at ...").'
        : 'The workflow, its status, and while it is pending the form to claim it (`offer`).',
      0,
    ),
    ...(post
      ? {
          '303': {
            description:
              'A group link and nobody signed in: to the console sign-in, which comes back to the link (`Location`).',
            headers: { Location: { schema: { type: 'string' } } },
          },
        }
      : {}),
    ...(post
      ? {
          '400': {
            description: 'A body that is not a form (or JSON).',
            content: { 'application/json': { schema: envelope([400], refusal) } },
          },
        }
      : {}),
    '401': answer(
      `The link is not valid (altered, unknown key) or has expired${post ? '; JSON callers: a group link and nobody signed in' : ''}.`,
      401,
      refusal,
    ),
    ...(post
      ? {
          '403': answer(
            'An `Origin` of another site (reason only), or a form older than 20 minutes: the page again, with a fresh form.',
            403,
          ),
        }
      : {}),
    ...(post
      ? {
          '413': {
            description: 'A body larger than 256 KiB.',
            content: { 'application/json': { schema: envelope([413], refusal) } },
          },
        }
      : {}),
    '404': answer('The workflow is gone; for a claim, the person is not in the directory.', 404, refusal),
    '409': answer(
      'Claimed by someone else ("workflow [5] was claimed by Ann at ..."), done, closed, or reactivated since the link was sent.',
      409,
    ),
    '429': answer('Too many requests from the address, or claims with the link.', 429, refusal, {
      'Retry-After': { $ref: '#/components/headers/RetryAfter' },
    }),
    '500': answer('Unexpected failure.', 500, refusal),
  };
}
