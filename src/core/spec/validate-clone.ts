/**
 * The checks `validate` runs on a guest's `create.clone` and `template: true`
 * (docs/design.md#creating-guests-by-cloning, #templates-in-git): what Proxmox would refuse for a
 * linked clone, options that contradict a clone, and `config: template`, which Proxmox would write
 * as a flag without converting the disks. Whether the template exists is the plan's to say: it
 * needs the cluster.
 */
import type { GuestSpec, SourceRef } from '../model.js';
import type { DocumentPositions } from './document-positions.js';

type Report = (ref: SourceRef, message: string, key?: string) => void;

/** Reports what is wrong with the guest's clone and template settings. */
export function validateCloneAndTemplate(guest: GuestSpec, at: DocumentPositions, report: Report): void {
  if (guest.config.template !== undefined) {
    report(
      at.value(['config', 'template']),
      'config.template: write `template: true` on the document instead; Proxmox would set the flag without converting the disks to base images',
      'template',
    );
  }
  if (guest.template === true && guest.power === 'running') {
    report(at.value(['power']), 'power: running is impossible for a template (template: true); a template is never started');
  }
  const clone = guest.clone;
  if (!clone) return;
  const full = clone.full === true;
  for (const option of ['storage', 'format'] as const) {
    if (clone[option] !== undefined && !full) {
      report(
        at.value(['create', 'clone', option]),
        `create.clone.${option}: Proxmox refuses it for a linked clone ("parameter '${option}' not allowed for linked clones"); set full: true or leave it out`,
      );
    }
  }
  for (const option of ['storage', 'ostemplate'] as const) {
    if (guest.createOptions?.[option] !== undefined) {
      const instead = option === 'storage' ? 'use create.clone.storage with full: true' : 'the template gives the root disk';
      report(at.value(['create', option]), `create.${option} does nothing for a clone (${instead})`);
    }
  }
}
