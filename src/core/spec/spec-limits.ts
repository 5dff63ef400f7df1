/**
 * Bounds on the spec repository. A pull request's specs are untrusted input: without bounds a
 * 50 MB file takes gigabytes of memory in the YAML library, a few lines of nested aliases expand
 * into millions of values ("billion laughs"), and deep nesting exhausts the stack of every walk.
 * Each limit is far above what a large real estate uses (see docs/spec-loading.md for what 10,000
 * guests use of each) and can be raised by the operator, never by the repository.
 */

/** The bounds loading enforces. */
export interface SpecLimits {
  /** Bytes of one spec file. */
  maxFileBytes: number;
  /** Spec files in the repository. */
  maxFiles: number;
  /** Bytes of all spec files together. */
  maxTotalBytes: number;
  /** Alias nodes (`*name`) in one YAML document. */
  maxAliases: number;
  /**
   * Values (YAML nodes) of the whole repository with every alias expanded: what the checks after
   * parsing walk. Aliases are cheap to write and expensive to expand ("billion laughs").
   */
  maxExpandedNodes: number;
  /** Nesting depth of one YAML document (the document's mapping is depth 1). */
  maxDepth: number;
}

/** The default bounds. */
export const DEFAULT_SPEC_LIMITS: Readonly<SpecLimits> = Object.freeze({
  maxFileBytes: 8 * 1024 * 1024,
  maxFiles: 50_000,
  maxTotalBytes: 64 * 1024 * 1024,
  maxAliases: 1_000,
  maxExpandedNodes: 5_000_000,
  maxDepth: 32,
});

/**
 * The environment variable that sets each limit: the edge that owns the process reads them
 * (`src/spec-files/spec-limits-env.ts`); messages name them so a refused repository says how to
 * raise the bound.
 */
export const SPEC_LIMIT_SETTINGS: Readonly<Record<keyof SpecLimits, string>> = Object.freeze({
  maxFileBytes: 'PVE_GITOPS_MAX_FILE_BYTES',
  maxFiles: 'PVE_GITOPS_MAX_FILES',
  maxTotalBytes: 'PVE_GITOPS_MAX_TOTAL_BYTES',
  maxAliases: 'PVE_GITOPS_MAX_YAML_ALIASES',
  maxExpandedNodes: 'PVE_GITOPS_MAX_YAML_NODES',
  maxDepth: 'PVE_GITOPS_MAX_YAML_DEPTH',
});

/** `partial` over the defaults; every value must be a positive safe integer. */
export function resolveSpecLimits(partial: Partial<SpecLimits> = {}): SpecLimits {
  const limits = { ...DEFAULT_SPEC_LIMITS, ...partial };
  for (const [key, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 1)
      throw new RangeError(`spec limit ${key} must be a positive integer, got ${String(value)}`);
  }
  return limits;
}

/** `4194304` → `4 MiB`, `1500` → `1,500 bytes`: sizes in messages. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${trim(bytes / (1024 * 1024))} MiB`;
  if (bytes >= 1024) return `${trim(bytes / 1024)} KiB`;
  return `${bytes.toLocaleString('en-US')} bytes`;
}

const trim = (n: number): string => (Number.isInteger(n) ? String(n) : n.toFixed(1));

/** The end of a message about a limit: what it is and how to raise it. */
export function limitHint(limits: SpecLimits, key: keyof SpecLimits): string {
  const value = key === 'maxFileBytes' || key === 'maxTotalBytes' ? formatBytes(limits[key]) : limits[key].toLocaleString('en-US');
  return `the limit is ${value} (${SPEC_LIMIT_SETTINGS[key]})`;
}
