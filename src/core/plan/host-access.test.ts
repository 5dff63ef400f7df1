/**
 * Options that reach the host are labelled `host-access` and need the server's per-cluster policy
 * at plan time (docs/identity-and-privileges.md).
 */
import { describe, expect, it } from 'vitest';
import { makeClusterSpec, makeObservedVm, makeVmSpec } from '../../../test/helpers/factories.js';
import type { ClusterAccess, GuestSpec, ObservedGuest, Plan } from '../model.js';
import { planHasErrors, planSpecs } from './plan-specs.js';

const lab = makeClusterSpec();

function vm(config: Record<string, string>, extra: Partial<GuestSpec> = {}): GuestSpec {
  return makeVmSpec('gpu-01', 100101, config, { source: { file: 'gpu.yaml', line: 1, col: 1 }, ...extra });
}

function live(current: Record<string, string>): ObservedGuest {
  return makeObservedVm('gpu-01', 100101, current);
}

function plan(spec: GuestSpec, current: Record<string, string> | undefined, access?: ClusterAccess): Plan {
  const guests = current ? [live(current)] : [];
  return planSpecs({
    head: { clusters: [lab], guests: [spec] },
    observed: {
      clusters: {
        lab: {
          name: 'lab',
          nodes: ['pve-01'],
          listing: guests.map((g) => ({ vmid: g.vmid, type: g.type, node: g.node, status: g.status, tags: g.current.tags })),
          guests: Object.fromEntries(guests.map((g) => [g.vmid, g])),
          unlisted: current ? {} : { 100101: false },
        },
      },
    },
    ...(access ? { access: { lab: access } } : {}),
  });
}

describe('host-access changes', () => {
  it('refuses a raw PCI passthrough without the policy, naming key, reason, setting and the mapping alternative', () => {
    const p = plan(vm({ memory: '4096', hostpci0: '0000:01:00.0,pcie=1' }), { memory: '4096' });
    expect(planHasErrors(p)).toBe(true);
    const g = p.guests[0]!;
    expect(g.action).toBe('error');
    expect(g.severity).toBe('host-access');
    expect(g.operations).toEqual([]);
    const error = g.errors.join('\n');
    expect(error).toContain("hostpci0 reaches the host: it passes the host's PCI device 0000:01:00.0 through to the guest");
    expect(error).toContain("Not allowed on cluster 'lab'");
    expect(error).toContain('PVE_CLUSTER_LAB_ALLOW_HOST_ACCESS=hostpci');
    expect(error).toContain('allowHostAccess: [hostpci]');
    expect(error).toContain('mapping=<name>');
    expect(g.hostAccess).toEqual([expect.objectContaining({ key: 'hostpci0', rule: 'hostpci' })]);
  });

  it('plans the change when the policy allows it, labelled host-access', () => {
    const allowed = plan(vm({ memory: '8192', args: '-cpu host' }), { memory: '4096' }, { allowHostAccess: ['args'] });
    const g = allowed.guests[0]!;
    expect(g.action).toBe('update');
    expect(g.severity).toBe('host-access');
    expect(g.changes.find((c) => c.key === 'args')?.severity).toBe('host-access');
    expect(g.changes.find((c) => c.key === 'memory')?.severity).toBeUndefined();
    expect(g.warnings.join()).toContain('an apply with an API token will be refused');
  });

  it('allows only the kinds the policy names', () => {
    const p = plan(vm({ args: '-cpu host', hookscript: 'local:snippets/h.pl' }), {}, { allowHostAccess: ['args'] });
    expect(p.guests[0]?.errors).toHaveLength(1);
    expect(p.guests[0]?.errors[0]).toContain('hookscript reaches the host');
  });

  it('labels removing a raw device too: Proxmox checks the old value before a token may delete it', () => {
    const p = plan(vm({}), { serial0: '/dev/ttyS0' });
    expect(p.guests[0]?.errors[0]).toContain("serial0 reaches the host: it connects the host's device /dev/ttyS0");
  });

  it('labels a create that passes a host device through', () => {
    const p = plan(vm({ usb0: 'host=1234:5678' }), undefined, { allowHostAccess: ['usb'] });
    expect(p.guests[0]?.action).toBe('create');
    expect(p.guests[0]?.severity).toBe('host-access');
  });

  it('refuses a privileged container and a host bind mount, and leaves nesting alone', () => {
    const ct: GuestSpec = {
      ...vm({ unprivileged: '0', mp0: '/srv/data,mp=/data', features: 'nesting=1' }),
      kind: 'Container',
      type: 'lxc',
      createOptions: { ostemplate: 'local:vztmpl/debian.tar.zst' },
    };
    const p = plan(ct, undefined);
    const rules = p.guests[0]?.hostAccess?.map((h) => h.rule).sort();
    expect(rules).toEqual(['bind-mount', 'privileged']);
    expect(p.guests[0]?.errors.join()).toContain('Sys.Modify on /');
  });

  it('needs no policy for a mapped device', () => {
    const p = plan(vm({ hostpci0: 'mapping=gpu,pcie=1' }), {});
    expect(p.guests[0]?.action).toBe('update');
    expect(p.guests[0]?.hostAccess).toBeUndefined();
  });
});

describe('insecure connections', () => {
  it('are recorded on the plan', () => {
    const p = plan(vm({}), {}, { allowHostAccess: [], insecure: 'http' });
    expect(p.insecureConnections).toEqual([{ cluster: 'lab', transport: 'http' }]);
    expect(plan(vm({}), {}).insecureConnections).toBeUndefined();
  });
});
