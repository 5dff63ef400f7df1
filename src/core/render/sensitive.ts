/** Keys whose values must never be shown in a comment or a terminal (cipassword, sshkeys, tokens). */
export const SENSITIVE_KEY_RE = /password|sshkeys|secret|token/i;

/** True for keys whose values are secrets. */
export function isSensitiveKey(key: string): boolean {
  return SENSITIVE_KEY_RE.test(key);
}

/** What the reader may see of `value`: `(sensitive)` for secrets; undefined stays undefined (unset). */
export function visibleValue(key: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  return isSensitiveKey(key) ? SENSITIVE_PLACEHOLDER : value;
}

/** Shown instead of a secret's value. */
export const SENSITIVE_PLACEHOLDER = '(sensitive)';
