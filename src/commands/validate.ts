import { plural } from '../core/render/plan-labels.js';
import { parseFlags } from './args.js';
import { loadSpecDir, note } from './shared.js';
import type { Command } from './types.js';

export const validateCommand: Command = {
  name: 'validate',
  summary: 'check the spec files; exit 0 valid, 1 invalid',
  usage: 'pve-gitops validate [--specs DIR]',
  async run(args, io) {
    const flags = parseFlags(args, { specs: { type: 'string', default: '.' } });
    const { specs, errorLines } = await loadSpecDir(flags.specs, io);
    for (const line of errorLines) io.stdout.write(`${line}\n`);
    if (errorLines.length > 0) {
      note(io, `${plural(errorLines.length, 'error')} in ${flags.specs}`);
      return 1;
    }
    const others = new Map<string, number>();
    for (const object of specs.objects ?? []) others.set(object.document, (others.get(object.document) ?? 0) + 1);
    const counted = [...others].map(([document, count]) => `${count} ${document}`);
    note(
      io,
      `${flags.specs}: valid (${[plural(specs.clusters.length, 'cluster'), plural(specs.guests.length, 'guest'), ...counted].join(', ')})`,
    );
    return 0;
  },
};
