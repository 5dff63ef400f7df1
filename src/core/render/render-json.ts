/**
 * The plan as stored JSON: written after review, read back before apply. Rendering goes through
 * the schema too, so a plan that could not be read back is never stored.
 */
import type { z } from 'zod';
import type { Plan } from '../model.js';
import { guestKeyText } from '../kinds/resource-key.js';
import { objectKind } from '../kinds/registry.js';
import { PlanFormatError, PlanVersionError } from './plan-errors.js';
import { PLAN_VERSION, PlanSchema } from './plan-schema.js';

/** Most issues listed in one error message; the rest stay on `PlanFormatError.issues`. */
const MAX_LISTED_ISSUES = 5;

/** Serialises a plan: schema key order, sorted record keys, 2-space indent, trailing newline. */
export function renderPlanJson(plan: Plan): string {
  const result = PlanSchema.safeParse(plan);
  if (!result.success) throw formatError('plan cannot be stored', result.error);
  return `${JSON.stringify(result.data, null, 2)}\n`;
}

/**
 * Reads a stored plan. Throws {@link PlanVersionError} for another format version and
 * {@link PlanFormatError} (with the path of the bad field) for anything malformed.
 */
export function parsePlanJson(text: string): Plan {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new PlanFormatError(`plan is not valid JSON: ${(error as Error).message}`, '');
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new PlanFormatError('plan is malformed: expected a JSON object', '');
  }
  // The version decides how everything else is read, so it is checked before the rest.
  if (!('version' in raw)) throw new PlanFormatError('plan is malformed at version: missing (not a pve-gitops plan?)', 'version');
  const upgraded = raw.version === 1 ? upgradePlan(raw as Record<string, unknown>) : raw;
  if (upgraded.version !== PLAN_VERSION) throw new PlanVersionError(upgraded.version, PLAN_VERSION);
  const result = PlanSchema.safeParse(upgraded);
  if (!result.success) throw formatError('plan is malformed', result.error);
  checkObjects(result.data);
  return result.data;
}

/**
 * A guest item as version 1 stored it, read as version 2 (docs/adding-a-kind.md, "Stored plans
 * across versions"): version 2 added only `kind` and `key`, both derived from what version 1 held
 * (the guest kind, `cluster/vmid`). Anything else the item holds is left for the schema to judge,
 * so a field this build does not know still refuses the plan. A version-2 item passes unchanged.
 */
export function upgradeGuestItem(raw: unknown): unknown {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || 'kind' in raw) return raw;
  const item = raw as Record<string, unknown>;
  if (typeof item.cluster !== 'string' || typeof item.vmid !== 'number') return raw;
  return { kind: 'guest', key: guestKeyText(item.cluster, item.vmid), ...item };
}

/** A version-1 plan as version 2: its guests upgraded one by one, no items of other kinds. */
function upgradePlan(raw: Record<string, unknown>): Record<string, unknown> {
  if ('objects' in raw) return raw;
  const guests = Array.isArray(raw.guests) ? raw.guests.map(upgradeGuestItem) : raw.guests;
  return { ...raw, version: PLAN_VERSION, guests, objects: [] };
}

/**
 * Items of other kinds are read by their kind: a kind this build does not know (a plan from a newer
 * build, a kind since removed) or an item its kind's check refuses is never applied as misread.
 */
function checkObjects(plan: Plan): void {
  plan.objects.forEach((item, index) => {
    const kind = objectKind(item.kind);
    if (!kind) {
      throw new PlanFormatError(
        `plan is malformed at objects[${index}].kind: this pve-gitops does not know the kind '${item.kind}'; plan again with this version (comment /pve plan)`,
        `objects[${index}].kind`,
      );
    }
    try {
      kind.checkStored(item);
    } catch (err) {
      throw new PlanFormatError(
        `plan is malformed at objects[${index}] (${item.kind} ${item.name}): ${err instanceof Error ? err.message : String(err)}; plan again with this version (comment /pve plan)`,
        `objects[${index}]`,
      );
    }
  });
}

/** `['guests', 3, 'changes']` → `guests[3].changes`; odd keys are quoted so the path stays readable. */
function formatIssuePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else if (typeof part === 'string' && /^[A-Za-z_$][\w$-]*$/.test(part)) out += out === '' ? part : `.${part}`;
    else out += `[${JSON.stringify(String(part))}]`;
  }
  return out;
}

function formatError(prefix: string, error: z.ZodError): PlanFormatError {
  const issues = error.issues.map((issue) => ({ path: formatIssuePath(issue.path), message: issue.message }));
  const listed = issues.slice(0, MAX_LISTED_ISSUES).map((issue) => `${issue.path || '(plan)'}: ${issue.message}`);
  const more = issues.length > MAX_LISTED_ISSUES ? ` (and ${issues.length - MAX_LISTED_ISSUES} more)` : '';
  const first = issues[0];
  return new PlanFormatError(`${prefix} at ${listed.join('; ')}${more}`, first?.path ?? '', issues);
}
