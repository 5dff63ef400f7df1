import { describe, expect, it } from 'vitest';
import { specJsonSchema } from './json-schema.js';

type Schema = {
  oneOf: {
    properties: Record<string, { const?: string; propertyNames?: { pattern: string } }>;
    required: string[];
    additionalProperties: boolean;
  }[];
};

describe('specJsonSchema', () => {
  const schema = specJsonSchema() as unknown as Schema;
  const [cluster, vm, container] = schema.oneOf;

  it('describes every document the registry knows, with unknown keys refused and defaults optional', () => {
    expect(schema.oneOf.map((s) => s.properties.kind?.const)).toEqual(['Cluster', 'VM', 'Container', 'Pool', 'BackupJob']);
    for (const s of schema.oneOf) expect(s.additionalProperties).toBe(false);
    expect(cluster?.required.sort()).toEqual(['kind', 'name', 'nodes', 'vmids']);
    expect(vm?.required.sort()).toEqual(['cluster', 'kind', 'name', 'node']);
  });

  it.each([
    ['net0', true, true],
    ['scsi12', true, false],
    ['rootfs', false, true],
    ['mp3', false, true],
    ['corez', false, false],
    ['digest', false, false],
    ['unused0', false, false],
  ])('config key %s: VM %s, Container %s', (key, inVm, inContainer) => {
    expect(new RegExp(vm?.properties.config?.propertyNames?.pattern ?? '').test(key)).toBe(inVm);
    expect(new RegExp(container?.properties.config?.propertyNames?.pattern ?? '').test(key)).toBe(inContainer);
  });
});
