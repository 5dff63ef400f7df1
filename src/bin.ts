#!/usr/bin/env node
/**
 * The installed `pve-gitops` executable: runs the command line and turns its result into the exit
 * status, printing an unexpected error on one line. Everything else is `cli.ts`.
 */
import { main } from './cli.js';
import { errorMessage } from './util/error-message.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`pve-gitops: ${errorMessage(err)}\n`);
    process.exitCode = 1;
  },
);
