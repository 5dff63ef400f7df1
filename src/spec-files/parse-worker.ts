/**
 * Worker thread entry for `loadSpecFiles`: parses the batches of spec texts it is sent with the YAML
 * library (they are the texts the fast reader left to it) and answers each with the plain-data
 * result, until it is terminated.
 */
import { parentPort } from 'node:worker_threads';
import { parseWithLibrary } from '../core/spec/parse-spec-file.js';
import type { ParsedSpecText } from '../core/spec/parsed-spec.js';
import type { SpecLimits } from '../core/spec/spec-limits.js';
import { errorMessage } from '../util/error-message.js';

/** A batch of texts to parse under `limits`; `batch` identifies it in the reply. */
export interface ParseRequest {
  batch: number;
  texts: string[];
  limits: SpecLimits;
}

/** The parsed batch, or why it could not be parsed or sent here (the main thread then parses it itself). */
export type ParseReply = { batch: number; parsed: ParsedSpecText[] } | { batch: number; failed: string };

const port = parentPort;
if (!port) throw new Error('parse-worker runs as a worker thread of loadSpecFiles');

// This thread exists only to parse, and the YAML library reads process.env once per token (see
// env-snapshot.ts): a plain copy for the thread's whole life, which is ours.
process.env = { ...process.env };

port.on('message', (request: ParseRequest) => {
  try {
    port.postMessage({
      batch: request.batch,
      parsed: request.texts.map((text) => parseWithLibrary(text, request.limits)),
    } satisfies ParseReply);
  } catch (error) {
    // Also a value that cannot be cloned (DataCloneError): the main thread parses this batch.
    port.postMessage({ batch: request.batch, failed: errorMessage(error) } satisfies ParseReply);
  }
});
