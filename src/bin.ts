#!/usr/bin/env node
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
