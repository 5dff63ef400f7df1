/**
 * The checks every document of another kind gets (core/kinds/): its cluster has a Cluster
 * document, no two documents declare the same object — then the kind's own `validate`, which knows
 * its references (a guest's `pool:` naming a pool).
 */
import { objectKind, OBJECT_KINDS } from '../kinds/registry.js';
import { keyText, resourceKey } from '../kinds/resource-key.js';
import type { SpecSet } from '../model.js';
import { SpecError } from './errors.js';

/** Errors in the documents of other kinds, and what their kinds find across the set. */
export function validateObjects(specs: SpecSet): SpecError[] {
  const errors: SpecError[] = [];
  const objects = specs.objects ?? [];
  const clusters = new Set(specs.clusters.map((c) => c.name));
  const seen = new Map<string, { file: string; line: number }>();
  for (const object of objects) {
    if (!objectKind(object.kind)) {
      errors.push(new SpecError(object.source, `${object.document} ${object.id}: no kind '${object.kind}' is registered`));
      continue;
    }
    if (!clusters.has(object.cluster)) {
      errors.push(new SpecError(object.source, `${object.document} ${object.id}: cluster "${object.cluster}" has no Cluster document`));
    }
    const key = keyText(resourceKey(object.cluster, object.kind, object.id));
    const first = seen.get(key);
    if (first) {
      errors.push(
        new SpecError(
          object.source,
          `${object.document} ${object.id} on cluster "${object.cluster}" is declared twice (first at ${first.file}:${first.line})`,
        ),
      );
    } else {
      seen.set(key, { file: object.source.file, line: object.source.line });
    }
  }
  for (const kind of OBJECT_KINDS) {
    for (const error of kind.validate(specs)) errors.push(new SpecError(error.at, error.message));
  }
  return errors;
}
