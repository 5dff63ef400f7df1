/**
 * The process logger (pino on stderr, JSON, a turn's lines written together) with the log levels
 * a user may choose and the field paths that are redacted because they may carry a credential. It
 * does not decide what is logged.
 */
import { type Logger, pino, stdSerializers } from 'pino';

/** Levels a user may ask for with PVE_GITOPS_LOG_LEVEL. */
export const LOG_LEVELS = ['silent', 'fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Field paths that may carry a credential. Tokens are never interpolated into messages; this is
 * the second line of defence for anything that ends up in a log object.
 */
const REDACT = [
  'token',
  '*.token',
  'readToken',
  '*.readToken',
  'secret',
  '*.secret',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'privateKey',
  '*.privateKey',
  'webhookSecret',
  '*.webhookSecret',
  'password',
  '*.password',
  // Octokit's request errors carry the request they failed on.
  'err.request.headers.authorization',
];

/** A serialized error as pino's serializer leaves it: plain fields, nested errors under `aggregateErrors`. */
type SerializedError = Record<string, unknown> & { aggregateErrors?: unknown[] };

/**
 * The webhook event an error of `@octokit/webhooks` carries, without its payload. Probot logs such
 * an error up to three times per delivery (once per handler error, then the aggregate, which holds
 * them all again), and each copy held the whole body — up to 25 MB of someone else's JSON a line.
 */
function withoutPayload(serialized: SerializedError): SerializedError {
  const event = serialized.event;
  if (event !== null && typeof event === 'object' && 'payload' in event) {
    const { id, name, payload } = event as { id?: unknown; name?: unknown; payload?: unknown };
    const bytes = typeof payload === 'string' ? payload.length : undefined;
    serialized.event = { id, name, ...(bytes !== undefined ? { payloadChars: bytes } : {}) };
  }
  if (Array.isArray(serialized.aggregateErrors)) {
    serialized.aggregateErrors = serialized.aggregateErrors.map((nested) =>
      nested !== null && typeof nested === 'object' ? withoutPayload(nested as SerializedError) : nested,
    );
  }
  return serialized;
}

function serializeError(error: unknown): unknown {
  const serialized = stdSerializers.err(error as Error) as unknown;
  return serialized !== null && typeof serialized === 'object' ? withoutPayload(serialized as SerializedError) : serialized;
}

/**
 * `target` with the lines written in one turn of the event loop sent as one write, at the end of
 * the turn, and at once when the process exits. On a pipe or a file stderr is written
 * synchronously, a system call a line: under a burst of 200 webhook deliveries, whose Redis
 * answers arrive together and are handled in one turn, that was about 45 µs of a delivery's CPU.
 * The lines keep their order; none is held past the turn that wrote it.
 */
export function turnBuffered(target: NodeJS.WritableStream): { write(line: string): boolean } {
  let pending: string[] = [];
  const flush = (): void => {
    if (pending.length === 0) return;
    const text = pending.length === 1 ? (pending[0] as string) : pending.join('');
    pending = [];
    target.write(text);
  };
  process.on('exit', flush);
  return {
    write(line: string): boolean {
      if (pending.push(line) === 1) setImmediate(flush);
      return true;
    },
  };
}

/** One JSON logger for the process; callers take children per cluster, delivery or job. */
export function createLogger(options: { level?: string; stream?: NodeJS.WritableStream } = {}): Logger {
  const level = (LOG_LEVELS as readonly string[]).includes(options.level ?? '') ? (options.level as LogLevel) : 'info';
  return pino(
    { name: 'pve-gitops', level, redact: { paths: REDACT, censor: '[redacted]' }, serializers: { err: serializeError } },
    options.stream ?? turnBuffered(process.stderr),
  );
}
