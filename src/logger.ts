import { pino, type Logger } from 'pino';

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

/** One JSON logger for the process; callers take children per cluster, delivery or job. */
export function createLogger(options: { level?: string; stream?: NodeJS.WritableStream } = {}): Logger {
  const level = (LOG_LEVELS as readonly string[]).includes(options.level ?? '') ? (options.level as LogLevel) : 'info';
  return pino({ name: 'pve-gitops', level, redact: { paths: REDACT, censor: '[redacted]' } }, options.stream ?? process.stderr);
}
