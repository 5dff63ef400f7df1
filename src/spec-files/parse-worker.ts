/**
 * Worker thread entry for `loadSpecFiles`: parses the batches of spec files it is sent and answers
 * each with the plain-data result, until it is terminated.
 */
import { parentPort } from 'node:worker_threads';
import type { SpecFile } from '../core/spec/load-specs.js';
import { parseSpecFiles, type ParsedSpecFile } from '../core/spec/parse-spec-file.js';

/** A batch of files to parse; `batch` identifies it in the reply. */
export interface ParseRequest {
  batch: number;
  files: SpecFile[];
}

/** The parsed batch, or why it could not be parsed or sent here (the main thread then parses it itself). */
export type ParseReply = { batch: number; parsed: ParsedSpecFile[] } | { batch: number; failed: string };

const port = parentPort;
if (!port) throw new Error('parse-worker runs as a worker thread of loadSpecFiles');

port.on('message', (request: ParseRequest) => {
  try {
    port.postMessage({ batch: request.batch, parsed: parseSpecFiles(request.files) } satisfies ParseReply);
  } catch (error) {
    // Also a value that cannot be cloned (DataCloneError): the main thread parses this batch.
    port.postMessage({ batch: request.batch, failed: error instanceof Error ? error.message : String(error) } satisfies ParseReply);
  }
});
