/**
 * Every row of the flavour table against Proxmox's own API schema (`proxmox-api-schema.json`,
 * extracted from pve-manager's API dump) and against the spec loader, so a wrong fact in a row
 * fails here rather than in a plan.
 */
import { describe, expect, it } from 'vitest';
import { configEndpoint, subOptions } from './config-options.js';
import { GUEST_FLAVOURS, type GuestFlavour, flavourOf, isGuestType } from './guest-flavours.js';
import { endpointSchema, INDEX_LIMITS, paramSchema } from './proxmox-params.js';
import { classifyConfigKey } from './spec/config-keys.js';
import { ContainerCreateOptions, VmCreateOptions } from './spec/schema.js';

const rows = Object.values(GUEST_FLAVOURS).map((flavour) => [flavour.type, flavour] as [string, GuestFlavour]);

/** The endpoint of one guest type: `endpoint(f, 'POST', '/move_disk')` → `POST /nodes/{node}/qemu/{vmid}/move_disk`. */
function endpoint(flavour: GuestFlavour, method: string, below = ''): string {
  return `${method} /nodes/{node}/${flavour.type}/{vmid}${below}`;
}

function parameters(name: string): Record<string, unknown> {
  const schema = endpointSchema(name);
  if (!schema) throw new Error(`no ${name} in the schema`);
  return schema.parameters.properties ?? {};
}

/** Every config option name of a guest type, indexed ones expanded within Proxmox's limits. */
function configKeys(flavour: GuestFlavour): string[] {
  return Object.keys(parameters(configEndpoint(flavour.type))).flatMap((name) => {
    const indexed = /^(.*)\[n\]$/.exec(name);
    if (!indexed) return [name];
    const count = INDEX_LIMITS[flavour.type][indexed[1] ?? ''] ?? 0;
    return Array.from({ length: count }, (_, i) => `${indexed[1]}${i}`);
  });
}

describe('the guest flavour table', () => {
  it('has one row per guest type, each under its own type', () => {
    expect(Object.keys(GUEST_FLAVOURS).sort()).toEqual(['lxc', 'qemu']);
    for (const [type, flavour] of rows) expect(flavourOf(flavour.type)).toBe(GUEST_FLAVOURS[type as 'qemu']);
    expect(rows.map(([, f]) => f.documentKind).sort()).toEqual(['Container', 'VM']);
  });

  it('tells guest types from the other types of a cluster listing', () => {
    expect(['qemu', 'lxc', 'storage', 'node', 'sdn', '', undefined, 'toString'].map(isGuestType)).toEqual([
      true,
      true,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it.each(rows)('%s: the name key is a DNS name Proxmox takes at creation and in the config', (_type, flavour) => {
    for (const name of [endpoint(flavour, 'POST').replace('/{vmid}', ''), configEndpoint(flavour.type)]) {
      expect(paramSchema(name, flavour.nameKey), name).toMatchObject({ format: 'dns-name' });
    }
  });

  it.each(rows)('%s: the disk keys are exactly the disks Proxmox resizes', (_type, flavour) => {
    const resizable = (paramSchema(endpoint(flavour, 'PUT', '/resize'), 'disk')?.enum ?? []).slice().sort();
    expect(resizable.length).toBeGreaterThan(0);
    expect(resizable.filter((key) => !flavour.diskKey.test(key))).toEqual([]);
    expect(
      configKeys(flavour)
        .filter((key) => flavour.diskKey.test(key))
        .sort(),
    ).toEqual(resizable);
  });

  it.each(rows)("%s: a disk's volume is its property string's default key", (_type, flavour) => {
    for (const key of paramSchema(endpoint(flavour, 'PUT', '/resize'), 'disk')?.enum ?? []) {
      const volume = subOptions(paramSchema(configEndpoint(flavour.type), key))?.[flavour.volumeKey];
      expect(volume, key).toMatchObject({ default_key: 1 });
    }
  });

  it.each(rows)('%s: the config write uses the method that exists, and a task only where one is returned', (_type, flavour) => {
    const write = endpointSchema(endpoint(flavour, flavour.configWrite.method, '/config'));
    expect(write).toBeDefined();
    expect(write?.returns?.type).toBe(flavour.configWrite.task ? 'string' : 'null');
    // Containers have no asynchronous variant at all.
    if (!flavour.configWrite.task) expect(endpointSchema(endpoint(flavour, 'POST', '/config'))).toBeUndefined();
  });

  it.each(rows)('%s: the move endpoint exists with its disk parameter, and takes a format only when it says so', (_type, flavour) => {
    const params = parameters(endpoint(flavour, 'POST', `/${flavour.move.endpoint}`));
    expect(params).toHaveProperty(flavour.move.diskParam);
    expect(params).toHaveProperty('storage');
    expect(Object.hasOwn(params, 'format')).toBe(flavour.move.takesFormat);
  });

  it.each(rows)('%s: the NIC sub-keys are those of the schema', (_type, flavour) => {
    const nic = subOptions(paramSchema(configEndpoint(flavour.type), 'net0')) ?? {};
    expect(nic[flavour.nic.macKey]).toMatchObject({ format: 'mac-addr' });
    const models = Object.values(nic).filter((sub) => sub.keyAlias === 'model');
    if (flavour.nic.macInModel) {
      // `virtio=BC:24:11:…`: every model key is an alias that carries the MAC.
      expect(models.length).toBeGreaterThan(0);
      expect(models.every((sub) => sub.alias === flavour.nic.macKey)).toBe(true);
    } else {
      expect(models).toEqual([]);
      expect(nic[flavour.nic.leadKey]?.optional).toBeUndefined(); // the container's interface name is required
    }
    for (const [key, value] of Object.entries(flavour.nic.filledIn)) expect(nic[key]?.enum).toContain(value);
  });

  it.each(rows)('%s: keys owned only when set, fixed at creation, space-separated or defaulted are config options', (_type, flavour) => {
    const keys = new Set(configKeys(flavour));
    const named = [
      ...flavour.ownedWhenSet,
      ...flavour.fixedAtCreation,
      ...flavour.spaceSeparatedKeys,
      ...Object.keys(flavour.defaultsWhenAbsent),
      ...Object.keys(flavour.refusedKeys),
    ];
    expect(named.filter((key) => !keys.has(key))).toEqual([]);
    for (const [key, value] of Object.entries(flavour.defaultsWhenAbsent)) {
      expect(Number(paramSchema(configEndpoint(flavour.type), key)?.default)).toBe(Number(value));
    }
  });

  it.each(rows)('%s: options fixed at creation are options of the create call too', (_type, flavour) => {
    const create = parameters(endpoint(flavour, 'POST').replace('/{vmid}', ''));
    for (const key of flavour.fixedAtCreation) expect(create).toHaveProperty(key);
  });

  it.each(rows)("%s: the create options are the create call's, and the spec's create: section", (_type, flavour) => {
    const create = parameters(endpoint(flavour, 'POST').replace('/{vmid}', ''));
    const config = parameters(configEndpoint(flavour.type));
    for (const key of flavour.createOptions) {
      expect(create, key).toHaveProperty(key);
      expect(config, key).not.toHaveProperty(key);
    }
    for (const key of flavour.requiredCreateOptions) expect(flavour.createOptions).toContain(key);
    const section = { qemu: VmCreateOptions, lxc: ContainerCreateOptions }[flavour.type];
    // `clone` is no parameter of the create call: it makes the guest by another call (`…/clone`).
    expect([...flavour.createOptions].sort()).toEqual(
      Object.keys(section.shape)
        .filter((key) => key !== 'clone')
        .sort(),
    );
  });

  it.each(rows)('%s: the refused keys are what the spec loader refuses, for the same reason', (_type, flavour) => {
    for (const [key, reason] of Object.entries(flavour.refusedKeys)) {
      expect(classifyConfigKey(flavour.type, key)).toEqual({ kind: 'refused', reason });
    }
  });

  it.each(rows)('%s: the keys needing an extra privilege name config options of the type', (_type, flavour) => {
    for (const extra of flavour.extraConfigPrivileges) {
      expect(configKeys(flavour).some((key) => extra.keys.test(key))).toBe(true);
      expect(extra.privilege).toMatch(/^VM\.Config\./);
    }
  });
});
