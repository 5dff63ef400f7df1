/**
 * What every renderer shows in place of a secret's value. Which keys are secrets is not decided
 * here but in the key-rules registry (`src/core/key-rules.ts`, `isSensitiveKey`).
 */

/** Shown instead of a secret's value. */
export const SENSITIVE_PLACEHOLDER = '(sensitive)';
