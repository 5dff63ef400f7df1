/**
 * `.github/pve-gitops.yml`: what a spec repository tells the App about itself. It is read at the
 * pull request's BASE commit, never the head, so a pull request cannot point the App at other
 * files; it holds no connection or credential (those are the server's). Unknown keys are errors,
 * like in spec documents, so a misspelt key is not silently ignored.
 */
import { posix } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

/** Where the App looks for its config in a repository; `.yaml` is accepted too. */
export const REPO_CONFIG_PATHS = ['.github/pve-gitops.yml', '.github/pve-gitops.yaml'] as const;

/** A spec root: a relative path inside the repository, without `..`. */
const SpecRoot = z
  .string()
  .max(200)
  .refine((path) => !posix.isAbsolute(path) && !posix.normalize(path).split('/').includes('..'), {
    message: 'must be a path inside the repository (relative, without ..)',
  });

/** `YYYY-MM-DD`, a real calendar day. */
const Day = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date YYYY-MM-DD')
  .refine(
    (day) => {
      // Checked on its own: zod runs this even when the pattern above failed.
      const time = Date.parse(`${day}T00:00:00Z`);
      return !/^\d{4}-\d{2}-\d{2}$/.test(day) || (Number.isFinite(time) && new Date(time).toISOString().startsWith(day));
    },
    { message: 'must be a real date YYYY-MM-DD' },
  );

/**
 * An intended difference the drift report does not report: on one guest (`cluster/name` or
 * `cluster/vmid`), these keys (config keys, or `power`), for a reason, until an optional day
 * (inclusive; after it the entry is reported as expired and the difference as drift again).
 */
const DriftAllowEntry = z.strictObject({
  guest: z.string().regex(/^[^/\s]+\/[^/\s]+$/, 'must be cluster/name or cluster/vmid'),
  keys: z.array(z.string().min(1).max(64)).min(1).max(200),
  reason: z.string().trim().min(1, 'must say why the difference is intended').max(500),
  expires: Day.optional(),
});

/** The drift report's settings. */
const DriftConfig = z.strictObject({
  allow: z.array(DriftAllowEntry).max(1000).optional(),
});

/** The file's schema. */
export const RepoConfig = z.strictObject({
  /** The spec root, relative to the repository root; default the root itself. */
  specs: SpecRoot.optional(),
  /** The drift report: differences that are intended. */
  drift: DriftConfig.optional(),
  /**
   * Pull requests from forks: `plan` (default) plans every push like any other pull request's,
   * live values of guests the base does not own withheld; `on-command` plans a fork's push only
   * when a writer comments `/pve plan` (or presses Re-run) after reading it.
   */
  forks: z.enum(['plan', 'on-command']).optional(),
  /**
   * `/pve adopt` (a pull request taking drift into the specs): `on` lets writers ask for it; off
   * (the default) keeps the App from writing branches, so an installation may grant it read-only
   * contents and pull requests.
   */
  adopt: z.union([z.enum(['on', 'off']), z.boolean()]).optional(),
  /**
   * The apply rehearsal on a simulated copy (docs/rehearsal.md): `fail` (the default) fails the
   * plan check when Proxmox would refuse a step, `warn` only reports it, `off` does not rehearse.
   */
  rehearsal: z.enum(['fail', 'warn', 'off']).optional(),
});
export type RepoConfig = z.infer<typeof RepoConfig>;

/** The config file is unusable; the message names the file and the problem. */
export class RepoConfigError extends Error {
  override name = 'RepoConfigError';
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
  }
}

/** The spec root as a normal repository path: `''` for the root, else `dir/sub` (no leading `./`, no trailing `/`). */
function normaliseSpecRoot(path: string | undefined): string {
  if (path === undefined) return '';
  const normal = posix
    .normalize(path.trim())
    .replace(/^\.\/?/, '')
    .replace(/\/+$/, '');
  return normal === '.' ? '' : normal;
}

/** The keys allowed where an unknown one was found, for the error message. */
function knownKeys(path: readonly PropertyKey[]): string {
  if (path.length === 0) return 'specs, drift, forks, adopt, rehearsal';
  if (path.length === 1 && path[0] === 'drift') return 'allow';
  return 'guest, keys, reason, expires';
}

/** Parses the config file's text; an absent file (undefined) is the default config. */
export function parseRepoConfig(path: string, text: string | undefined): RepoConfig & { specRoot: string } {
  if (text === undefined || text.trim() === '') return { specRoot: '' };
  let raw: unknown;
  try {
    raw = parseYaml(text, { maxAliasCount: 100 });
  } catch (error) {
    throw new RepoConfigError(path, `not valid YAML: ${(error as Error).message.split('\n')[0]}`);
  }
  const parsed = RepoConfig.safeParse(raw ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
    const what =
      issue?.code === 'unrecognized_keys'
        ? `unknown key ${issue.keys.join(', ')} (known: ${knownKeys(issue.path)})`
        : (issue?.message ?? 'invalid');
    throw new RepoConfigError(path, `${where}${what}`);
  }
  return { ...parsed.data, specRoot: normaliseSpecRoot(parsed.data.specs) };
}

/** Whether the repository turned `/pve adopt` on (`adopt: on` or `adopt: true`). */
export function adoptEnabled(config: RepoConfig | undefined): boolean {
  return config?.adopt === 'on' || config?.adopt === true;
}
