import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * Requests the local API cannot parse never reach a handler: Node's HTTP parser refuses them (a
 * header section over Node's 16 KiB, a malformed request line or header, a bad chunk) and emits
 * `clientError`, whose default answer is a bare status line. Here they get what every other refusal
 * gets: the envelope `{code, msg, data: {}}` with the HTTP status as its code, then the connection
 * closes (what follows on it cannot be framed). API Gateway answers these itself on AWS.
 */
const FRAMING: Record<string, [status: number, msg: string]> = {
  HPE_HEADER_OVERFLOW: [431, 'request header fields too large'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'request chunk extensions too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'request timeout'],
};
const MALFORMED: [number, string] = [400, 'malformed HTTP request'];

/** The raw HTTP/1.1 answer to a framing error of `code` (Node's parser error code). */
export function framingErrorResponse(code: string | undefined): string {
  const [status, msg] = (code && FRAMING[code]) || MALFORMED;
  const body = JSON.stringify({ code: status, msg, data: {} });
  return [
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    'connection: close',
    '',
    body,
  ].join('\r\n');
}

/** http.Server's `clientError` listener. */
export function answerFramingError(err: NodeJS.ErrnoException, socket: Duplex): void {
  // A connection the client reset, or one whose response is already on its way, takes nothing more.
  const sending = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
  if (err.code === 'ECONNRESET' || !socket.writable || sending) {
    socket.destroy();
    return;
  }
  socket.end(framingErrorResponse(err.code));
}
