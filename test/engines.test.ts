/**
 * The Node.js versions the project declares are the ones its dependencies run on: `npm ci` on the
 * oldest Node the project admits must install every locked package without an engine warning
 * (EBADENGINE), and a runtime dependency that wants a newer Node would break `pve-gitops` itself.
 * Read from package.json and package-lock.json, so a dependency update that raises the bar fails
 * here rather than on a user's machine.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

type Version = [number, number, number];

interface LockedPackage {
  version?: string;
  dev?: boolean;
  engines?: Record<string, string> | string[];
}

const root = new URL('../', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8')) as { packages: Record<string, LockedPackage> };

/** `20`, `20.18`, `20.x`, `20.18.1`: missing or wildcard parts as `undefined`. */
function parts(text: string): (number | undefined)[] {
  return text
    .replace(/^v/, '')
    .split('.')
    .map((part) => (/^\d+$/.test(part) ? Number(part) : undefined));
}

function compare(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/** Whether `version` satisfies one comparator (`>=20.18.1`, `^20.19.0`, `6.*`, `*`), as npm's semver reads it. */
function satisfiesComparator(version: Version, comparator: string): boolean {
  const match = /^(>=|<=|>|<|=|\^|~)?\s*(.*)$/.exec(comparator);
  const op = match?.[1] ?? '=';
  const [major, minor, patch] = parts(match?.[2] ?? '*');
  if (major === undefined) return true;
  const floor: Version = [major, minor ?? 0, patch ?? 0];
  switch (op) {
    case '>=':
      return compare(version, floor) >= 0;
    case '>':
      return minor === undefined ? version[0] > major : compare(version, floor) > 0;
    case '<':
      return compare(version, floor) < 0;
    case '<=':
      return minor === undefined ? version[0] <= major : compare(version, floor) <= 0;
    case '^':
      return version[0] === major && compare(version, floor) >= 0;
    case '~':
      return version[0] === major && (minor === undefined || version[1] === minor) && compare(version, floor) >= 0;
    default:
      return version[0] === major && (minor === undefined || version[1] === minor) && (patch === undefined || version[2] === patch);
  }
}

/** Whether `version` satisfies a range: `||`-separated sets of space-separated comparators. */
function satisfies(version: Version, range: string): boolean {
  return range.split('||').some((set) =>
    set
      .trim()
      .replace(/(>=|<=|>|<|=|\^|~)\s+/g, '$1')
      .split(/\s+/)
      .filter((c) => c !== '')
      .every((c) => satisfiesComparator(version, c)),
  );
}

/** The lowest version a `>=` range admits: the project's oldest supported Node. */
function oldestAdmitted(range: string): Version {
  const match = /^>=\s*(\d+)\.(\d+)\.(\d+)$/.exec(range.trim());
  if (!match) throw new Error(`package.json engines.node should be a plain ">=x.y.z", got ${range}`);
  return [Number(match[1]), Number(match[2]), Number(match[3])];
}

function nodeRange(pkg: LockedPackage): string | undefined {
  return pkg.engines && !Array.isArray(pkg.engines) ? pkg.engines.node : undefined;
}

describe('the Node.js versions of the dependencies', () => {
  const oldest = oldestAdmitted(manifest.engines.node);
  const packages = Object.entries(lock.packages).filter(([path]) => path !== '');

  it('reads npm ranges as npm does', () => {
    expect(satisfies([20, 18, 1], '>=22')).toBe(false);
    expect(satisfies([20, 18, 1], '^20.18.1 || >= 22')).toBe(true);
    expect(satisfies([20, 18, 1], '^20.19.0 || >=22.12.0')).toBe(false);
    expect(satisfies([20, 18, 1], '6.* || 8.* || >= 10.x')).toBe(true);
    expect(satisfies([20, 18, 1], '>=18.20.0 <20 || >=20.12.1')).toBe(true);
    expect(satisfies([20, 18, 1], '^20.0.0 || ^22.0.0 || >=24.0.0')).toBe(true);
    expect(satisfies([20, 18, 1], '*')).toBe(true);
  });

  it('every runtime dependency runs on the oldest Node package.json admits (npm ci prints no EBADENGINE for them)', () => {
    const refused = packages
      .filter(([, pkg]) => pkg.dev !== true)
      .filter(([, pkg]) => {
        const range = nodeRange(pkg);
        return range !== undefined && !satisfies(oldest, range);
      })
      .map(([path, pkg]) => `${path}@${pkg.version}: node ${nodeRange(pkg)}`);
    expect(refused).toEqual([]);
  });

  it('every development dependency runs on Node 20, the line package.json declares', () => {
    // Tooling may want a later Node 20 release than the runtime does (vite asks 20.19), never a later line.
    const latestOf20: Version = [oldest[0], Number.MAX_SAFE_INTEGER, 0];
    const refused = packages
      .filter(([, pkg]) => {
        const range = nodeRange(pkg);
        return range !== undefined && !satisfies(latestOf20, range);
      })
      .map(([path, pkg]) => `${path}@${pkg.version}: node ${nodeRange(pkg)}`);
    expect(refused).toEqual([]);
  });
});
