/**
 * The plan as stored JSON: written after review, read back before apply. Rendering goes through
 * the schema too, so a plan that could not be read back is never stored.
 */
import type { z } from 'zod';
import type { Plan } from '../model.js';
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
  if (raw.version !== PLAN_VERSION) throw new PlanVersionError(raw.version, PLAN_VERSION);
  const result = PlanSchema.safeParse(raw);
  if (!result.success) throw formatError('plan is malformed', result.error);
  return result.data;
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
