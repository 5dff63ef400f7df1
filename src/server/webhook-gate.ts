/**
 * What a webhook delivery must pass before Probot's handlers see it. Probot's middleware reads the
 * whole body into memory before it checks the signature, with no bound: an unsigned 300 MB body
 * sent chunked (no Content-Length to refuse it by) took the App from 110 to 2,250 MB. Here the
 * headers are checked before a byte of the body is read, the body is read only up to GitHub's
 * payload cap, and its signature is checked before anything parses it. A refusal is reported by
 * its size and reason, never its body (docs/github-app.md, "Webhooks"). An admitted delivery is
 * handed on verified (`web-role.ts`), not through the middleware, which would check it again.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Largest webhook body accepted. GitHub caps payloads at 25 MB and does not deliver larger ones;
 * anything bigger is not from GitHub and is refused without being read further.
 */
export const MAX_WEBHOOK_BYTES = 25 * 1024 * 1024;

/** A delivery refused before any handler ran. Header values are the sender's, clipped. */
interface WebhookRefusal {
  status: 400 | 413 | 415;
  reason: string;
  /** Bytes of the body read before refusing (0: refused on its headers alone). */
  bytesRead: number;
  /** The Content-Length the sender declared, if any. */
  declaredBytes?: number;
  event?: string;
  delivery?: string;
}

/** Options of {@link createWebhookGate}. */
interface WebhookGateOptions {
  /** The webhook secret deliveries are signed with. */
  secret: string;
  /** Default {@link MAX_WEBHOOK_BYTES}. */
  maxBytes?: number;
  /** Told of every refusal (to log it): the refusal's size and reason, never its body. */
  onRefused?: (refusal: WebhookRefusal) => void;
}

/** A delivery the gate admitted: its headers are there and its body's signature matched. */
export interface AdmittedDelivery {
  /** `X-GitHub-Delivery`. */
  id: string;
  /** `X-GitHub-Event`. */
  name: string;
  /** The body as sent, decoded as UTF-8, not yet parsed. */
  body: string;
}

/**
 * Checks a request to the webhook path; resolves the delivery when it is admitted (the body read
 * and its signature checked: nothing need check it again), `answered` when the gate answered it
 * (or the sender went away), `not-a-delivery` for a method other than POST, which carries none.
 */
type WebhookGate = (req: IncomingMessage, res: ServerResponse) => Promise<AdmittedDelivery | 'answered' | 'not-a-delivery'>;

// Probot's middleware checks these too, but only after it has read the body.
const JSON_TYPE = /^\s*(application\/json)\s*(?:;|$)/u;
const REQUIRED_HEADERS = ['x-github-event', 'x-hub-signature-256', 'x-github-delivery'] as const;
const SIGNATURE = /^sha256=([0-9a-f]{64})$/i;
const SIGNATURE_MISMATCH = '[@octokit/webhooks] signature does not match event payload and secret';

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** A header value as a refusal reports it: the sender chose it, so it is clipped. */
function clip(value: string | undefined): string | undefined {
  return value === undefined ? undefined : value.slice(0, 100);
}

/** Answers as Probot's middleware does (JSON `{ error }`), so a refusal looks the same whoever made it. */
function answer(res: ServerResponse, status: number, error: string, close: boolean): void {
  const body = JSON.stringify({ error });
  const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
  // The rest of a refused body is not wanted: the connection ends with the answer.
  if (close) headers.connection = 'close';
  res.writeHead(status, headers).end(body);
}

/** Reads the body up to `maxBytes`: the bytes, or how far it got before the bound or the sender's end. */
function readBody(req: IncomingMessage, maxBytes: number): Promise<{ body: Buffer } | { over: number } | { aborted: number }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let read = 0;
    const done = (result: { body: Buffer } | { over: number } | { aborted: number }): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onClose);
      req.off('close', onClose);
      resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      read += chunk.length;
      if (read > maxBytes) {
        // Stop reading: what is still in flight stays in the socket's buffers, not in the heap.
        req.pause();
        chunks.length = 0;
        done({ over: read });
      } else chunks.push(chunk);
    };
    const onEnd = (): void => done({ body: Buffer.concat(chunks, read) });
    const onClose = (): void => done({ aborted: read });
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onClose);
    req.on('close', onClose);
  });
}

/** A {@link WebhookGate} for deliveries signed with `options.secret`. */
export function createWebhookGate(options: WebhookGateOptions): WebhookGate {
  const maxBytes = options.maxBytes ?? MAX_WEBHOOK_BYTES;
  const secret = options.secret;
  return async (req, res) => {
    // Other methods carry no delivery: the middleware answers them without reading a body.
    if (req.method !== 'POST') return 'not-a-delivery';
    const declared = header(req, 'content-length');
    const declaredBytes = declared !== undefined && /^\d+$/.test(declared) ? Number(declared) : undefined;
    const refuse = (status: WebhookRefusal['status'], reason: string, bytesRead: number, error = reason): 'answered' => {
      // Anything unread is dropped with the connection; a body read whole can keep it.
      answer(res, status, error, !req.complete);
      if (!req.complete) res.once('finish', () => req.destroy());
      const event = clip(header(req, 'x-github-event'));
      const delivery = clip(header(req, 'x-github-delivery'));
      options.onRefused?.({
        status,
        reason,
        bytesRead,
        ...(declaredBytes !== undefined ? { declaredBytes } : {}),
        ...(event !== undefined ? { event } : {}),
        ...(delivery !== undefined ? { delivery } : {}),
      });
      return 'answered';
    };

    const contentType = header(req, 'content-type');
    if (contentType === undefined || !JSON_TYPE.test(contentType)) {
      return refuse(415, 'content type is not application/json', 0, 'Unsupported "Content-Type" header value. Must be "application/json"');
    }
    const name = header(req, 'x-github-event');
    const id = header(req, 'x-github-delivery');
    const signatureHeader = header(req, 'x-hub-signature-256');
    if (name === undefined || id === undefined || signatureHeader === undefined) {
      const missing = REQUIRED_HEADERS.filter((required) => header(req, required) === undefined);
      return refuse(400, `Required headers missing: ${missing.join(', ')}`, 0);
    }
    const signature = SIGNATURE.exec(signatureHeader);
    if (!signature?.[1]) return refuse(400, 'the signature header is not sha256=<64 hex digits>', 0, SIGNATURE_MISMATCH);
    if (declaredBytes !== undefined && declaredBytes > maxBytes) {
      return refuse(413, `body larger than ${maxBytes} bytes`, 0, `payload larger than ${maxBytes} bytes`);
    }

    const read = await readBody(req, maxBytes);
    if ('aborted' in read) return 'answered';
    if ('over' in read) return refuse(413, `body larger than ${maxBytes} bytes`, read.over, `payload larger than ${maxBytes} bytes`);
    const expected = createHmac('sha256', secret).update(read.body).digest();
    if (!timingSafeEqual(expected, Buffer.from(signature[1], 'hex'))) {
      return refuse(400, 'signature does not match', read.body.length, SIGNATURE_MISMATCH);
    }
    return { id, name, body: read.body.toString('utf8') };
  };
}
