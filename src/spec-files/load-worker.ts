/**
 * Worker thread entry for `SpecLoadThread`: loads and validates the spec files it is sent — parsing
 * and every check — and answers with the specs and the errors as plain data, until it is
 * terminated. It keeps its own parse cache (bounded by bytes) for the loads it is sent.
 */
import { parentPort } from 'node:worker_threads';
import type { SpecFile } from '../core/spec/load-specs.js';
import type { SpecSet } from '../core/model.js';
import { loadSpecFiles } from './load-spec-files.js';
import { createSpecParseCache } from '../core/spec/parse-cache.js';
import { errorMessage } from '../util/error-message.js';

/** Files to load; `id` identifies the request in the reply. */
export interface LoadRequest {
  id: number;
  files: SpecFile[];
}

/** A spec error as plain data (an Error's own fields do not survive the copy between threads). */
interface PlainSpecError {
  file: string;
  line: number;
  col: number;
  message: string;
}

/** The loaded specs, or why they could not be loaded here (the caller then loads them itself). */
export type LoadReply = { id: number; specs: SpecSet; errors: PlainSpecError[] } | { id: number; failed: string };

const port = parentPort;
if (!port) throw new Error('load-worker runs as a worker thread of SpecLoadThread');

// The YAML library reads process.env once per token (see env-snapshot.ts): this thread's own copy.
process.env = { ...process.env };
const cache = createSpecParseCache();

port.on('message', (request: LoadRequest) => {
  // Parsed in this thread too: it is already off the thread that answers webhooks.
  loadSpecFiles(request.files, { cache, workers: 0 }).then(
    (loaded) => {
      const errors = loaded.errors.map(({ file, line, col, message }) => ({ file, line, col, message }));
      port.postMessage({ id: request.id, specs: loaded.specs, errors } satisfies LoadReply);
    },
    (error: unknown) => port.postMessage({ id: request.id, failed: errorMessage(error) } satisfies LoadReply),
  );
});
