/**
 * The spec repository's bounds as the operator configures them: one environment variable per
 * limit (`SPEC_LIMIT_SETTINGS`, e.g. `PVE_GITOPS_MAX_FILE_BYTES`), read here at the edge and
 * passed to loading as options — the core never reads the environment.
 */
import { SPEC_LIMIT_SETTINGS, type SpecLimits } from '../core/spec/spec-limits.js';

/** Thrown for a limit variable that is not a positive integer. */
export class SpecLimitSettingError extends Error {
  override readonly name = 'SpecLimitSettingError';
  constructor(
    readonly variable: string,
    readonly value: string,
  ) {
    super(`${variable} must be a positive integer (bytes or a count), got ${JSON.stringify(value)}`);
  }
}

/** The limits set in `env`; unset ones are left out (the defaults apply). */
export function specLimitsFromEnv(env: Readonly<Record<string, string | undefined>>): Partial<SpecLimits> {
  const limits: Partial<SpecLimits> = {};
  for (const [key, variable] of Object.entries(SPEC_LIMIT_SETTINGS) as [keyof SpecLimits, string][]) {
    const value = env[variable]?.trim();
    if (value === undefined || value === '') continue;
    if (!/^[1-9][0-9]*$/.test(value) || !Number.isSafeInteger(Number(value))) throw new SpecLimitSettingError(variable, value);
    limits[key] = Number(value);
  }
  return limits;
}
