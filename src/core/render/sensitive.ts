import { isSensitiveKey } from '../key-rules.js';

/** What the reader may see of `value`: `(sensitive)` for secrets; undefined stays undefined (unset). */
export function visibleValue(key: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  return isSensitiveKey(key) ? SENSITIVE_PLACEHOLDER : value;
}

/** Shown instead of a secret's value. */
export const SENSITIVE_PLACEHOLDER = '(sensitive)';
