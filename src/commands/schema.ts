/**
 * `pve-gitops schema`: prints the JSON Schema of spec documents for editors. The schema is built in
 * the core (`src/core/spec/json-schema.ts`); this file only prints it.
 */
import { specJsonSchema } from '../core/spec/json-schema.js';
import { parseFlags } from './args.js';
import type { Command } from './types.js';

export const schemaCommand: Command = {
  name: 'schema',
  summary: 'print the JSON Schema of spec documents, for editors',
  usage: 'pve-gitops schema',
  async run(args, io) {
    parseFlags(args, {});
    io.stdout.write(`${JSON.stringify(specJsonSchema(), null, 2)}\n`);
    return 0;
  },
};
