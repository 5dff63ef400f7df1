/**
 * What the conformance test asks of every kind (docs/adding-a-kind.md): kept apart from the test so
 * the test can show it failing on a deliberately incomplete kind.
 */
import { APPLY_PHASES, type KindFacts, type ObjectKind } from '../../src/core/kinds/kind.js';
import { specJsonSchema } from '../../src/core/spec/json-schema.js';
import { loadSpecs } from '../../src/core/spec/load-specs.js';
import { ROUTE_MODULES } from '../../src/pve/sim/routes.js';

/** Whether the kind is one of the generic pipeline's (it has a plan and an executor). */
export function isObjectKind(kind: KindFacts): kind is ObjectKind {
  return 'plan' in kind || 'execute' in kind || 'observe' in kind;
}

const OBJECT_FUNCTIONS = ['load', 'validate', 'observe', 'plan', 'checkStored', 'label', 'describe', 'execute'] as const;

/**
 * Everything missing or wrong in a kind's declaration, one line each (empty: it conforms). `adapted`
 * are the kinds with a Proxmox adapter; `schema` the editor's JSON Schema.
 */
export function kindProblems(kind: KindFacts, adapted: readonly string[], schema = specJsonSchema()): string[] {
  const problems: string[] = [];
  const name = kind.name || '(unnamed)';
  if (!/^[a-z][a-z0-9-]*$/.test(kind.name ?? '')) problems.push(`${name}: a kind name is lower-case words joined by '-'`);
  if (!APPLY_PHASES.includes(kind.phase)) problems.push(`${name}: no apply phase (one of ${APPLY_PHASES.join(', ')})`);
  if (typeof kind.hasNode !== 'boolean') problems.push(`${name}: does not say whether its objects live on a node`);
  if (!Array.isArray(kind.operations) || kind.operations.length === 0) problems.push(`${name}: declares no operations`);
  if (typeof kind.testFactory !== 'function') problems.push(`${name}: has no test factory`);
  const served = new Set(ROUTE_MODULES.map((m) => m.name));
  if (!Array.isArray(kind.simRoutes) || kind.simRoutes.length === 0) problems.push(`${name}: names no simulator routes`);
  for (const routes of kind.simRoutes ?? [])
    if (!served.has(routes)) problems.push(`${name}: the simulator has no route module '${routes}'`);
  const documents = kind.documents ?? [];
  const objectKind = isObjectKind(kind) ? kind : undefined;
  if (documents.length === 0 && (objectKind?.guestKeys ?? []).length === 0) {
    problems.push(`${name}: declares no document and no key on guest documents: nothing can ask for it`);
  }
  const entries = (schema.oneOf as { properties?: { kind?: { const?: string } } }[] | undefined) ?? [];
  for (const document of documents) {
    if (!document.schema || typeof (document.schema as { safeParse?: unknown }).safeParse !== 'function') {
      problems.push(`${name}: document ${document.name} has no schema`);
    }
    if (!entries.some((entry) => entry.properties?.kind?.const === document.name)) {
      problems.push(`${name}: document ${document.name} has no entry in the JSON Schema for editors`);
    }
  }
  if (kind.name !== 'guest') {
    if (!objectKind) problems.push(`${name}: has neither a plan nor an executor`);
    for (const fn of OBJECT_FUNCTIONS) {
      if (typeof (kind as unknown as Record<string, unknown>)[fn] !== 'function') problems.push(`${name}: has no ${fn}`);
    }
    if (!adapted.includes(kind.name)) problems.push(`${name}: has no Proxmox adapter (src/pve/kinds/adapters.ts)`);
  }
  if (typeof kind.testFactory === 'function') {
    const loaded = loadSpecs([{ path: `${name}.yaml`, text: kind.testFactory().yaml }]);
    for (const error of loaded.errors) problems.push(`${name}: its test factory's specs do not load: ${error.message}`);
  }
  return problems;
}
