import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { formatSpecError } from '../src/core/spec/errors.js';
import { loadSpecs } from '../src/core/spec/load-specs.js';
import { readSpecDir } from '../src/spec-files/read-spec-dir.js';

const EXAMPLE = fileURLToPath(new URL('../specs-example', import.meta.url));

describe('specs-example', () => {
  it('validates with zero errors', async () => {
    const { errors } = loadSpecs(await readSpecDir(EXAMPLE));
    expect(errors.map(formatSpecError)).toEqual([]);
  });

  it('is the estate it claims to be: two clusters, fifteen guests of both kinds', async () => {
    const { specs } = loadSpecs(await readSpecDir(EXAMPLE));
    expect(specs.clusters.map((c) => [c.name, c.vmids.lower, c.vmids.upper])).toEqual([
      ['lab', 100000, 199999],
      ['prod', 200000, 299999],
    ]);
    expect(specs.guests).toHaveLength(15);
    expect(new Set(specs.guests.map((g) => g.type))).toEqual(new Set(['qemu', 'lxc']));
    for (const guest of specs.guests) {
      const cluster = specs.clusters.find((c) => c.name === guest.cluster);
      expect(guest.vmid).toBeGreaterThanOrEqual(cluster?.vmids.lower ?? Infinity);
      expect(guest.vmid).toBeLessThan(cluster?.vmids.upper ?? -Infinity);
    }
  });

  it('teaches every feature it documents', async () => {
    const { specs } = loadSpecs(await readSpecDir(EXAMPLE));
    const guests = specs.guests;
    expect(guests.filter((g) => g.vmidDerived).map((g) => g.name)).toEqual(['dns-01']);
    expect(guests.some((g) => g.ignore.includes('description'))).toBe(true);
    expect(guests.some((g) => g.state === 'absent')).toBe(true);
    expect(guests.some((g) => g.adopt)).toBe(true);
    // Issue 18's story: a template from a cloud image, one linked and one full clone of it.
    const template = guests.find((g) => g.template === true);
    expect(template?.config.scsi0).toContain('import-from=local:import/debian-12-genericcloud-amd64.qcow2');
    expect(
      guests.filter((g) => g.clone?.template === template?.name).map((g) => [g.name, g.clone?.full === true, g.clone?.storage]),
    ).toEqual([
      ['web-03', false, undefined],
      ['web-04', true, 'shared-rbd'],
    ]);
    expect(new Set(guests.map((g) => g.power))).toEqual(new Set(['running', 'stopped', 'ignore']));
    expect(guests.some((g) => g.config.protection === '1')).toBe(true);
    expect(guests.some((g) => g.config.ide2?.endsWith(':cloudinit') && g.config.ciuser && g.config.ipconfig0 && g.config.sshkeys)).toBe(
      true,
    );
    expect(guests.some((g) => g.config.scsi1 !== undefined && g.config.net1 !== undefined)).toBe(true);
    expect(guests.filter((g) => g.type === 'lxc' && !g.adopt).every((g) => g.createOptions?.ostemplate)).toBe(true);
  });
});
