/**
 * Conformance of the simulator's route modules (one per kind under src/pve/sim/kinds): together
 * they serve exactly the methods of the extracted API schema, each method by one module and
 * reachable at its own path, every route with a permission check that refuses a token holding
 * nothing (or the named `anyone`, where Proxmox decides inside the method), and every write
 * marked. A new kind that forgets one of these fails here, not in a replayed session; the second
 * half shows each check failing on a deliberately broken module.
 */
import { describe, expect, it } from 'vitest';
import apiSchema from '../../src/core/proxmox-api-schema.json' with { type: 'json' };
import type { Principal } from '../../src/pve/sim/auth.js';
import { PermissionError } from '../../src/pve/sim/errors.js';
import { anyone, route, type Route, type RouteModule } from '../../src/pve/sim/route.js';
import { matchRoute, ROUTE_MODULES } from '../../src/pve/sim/routes.js';

const SCHEMA_KEYS = Object.keys(apiSchema);

/** A token with no privilege anywhere: in scope for no guest, nothing outside guests. */
const NOBODY: Principal = {
  token: { id: 'nobody@pve!none', secret: 'x', role: 'audit', vmids: new Set(), guestsOnly: true },
  userid: 'nobody@pve',
  tokenName: 'none',
};

const SAMPLE: Record<string, string> = { node: 'pve-01', vmid: '100', storage: 'local', poolid: 'web', upid: 'UPID:pve-01:x' };

function sampleSegments(r: Route): string[] {
  return r.segments.map((s) => (s.startsWith('{') ? (SAMPLE[s.slice(1, -1)] ?? 'x') : s));
}

/** Whether some concrete path matches both templates (same method). */
function overlap(a: Route, b: Route): boolean {
  if (a.method !== b.method || a.segments.length !== b.segments.length) return false;
  return a.segments.every((s, i) => {
    const t = b.segments[i] as string;
    return s === t || s.startsWith('{') || t.startsWith('{');
  });
}

/** What is wrong with a set of route modules against the schema's methods; empty when nothing. */
function routeModuleProblems(modules: readonly RouteModule[], schemaKeys: readonly string[]): string[] {
  const problems: string[] = [];
  const servedBy = new Map<string, string[]>();
  const all: { module: string; route: Route }[] = [];
  for (const module of modules) {
    if (module.routes.length === 0) problems.push(`module ${module.name} serves no route`);
    for (const r of module.routes) {
      all.push({ module: module.name, route: r });
      servedBy.set(r.key, [...(servedBy.get(r.key) ?? []), module.name]);
      if (r.key !== `${r.method} ${r.path}`) problems.push(`${module.name}: key '${r.key}' is not its method and path`);
      if (!schemaKeys.includes(r.key)) problems.push(`${module.name}: ${r.key} is not in the extracted schema`);
      if (typeof r.permission !== 'function' || typeof r.handler !== 'function') {
        problems.push(`${module.name}: ${r.key} lacks a permission check or a handler`);
      } else if (r.permission !== anyone) {
        // A check of its own must refuse a token that holds nothing, or it checks nothing.
        let refused = false;
        try {
          r.permission(NOBODY, SAMPLE);
        } catch (err) {
          refused = err instanceof PermissionError;
        }
        if (!refused) problems.push(`${module.name}: ${r.key} has a permission check that lets a token without privileges through`);
      }
      if (r.write !== (r.method !== 'GET')) problems.push(`${module.name}: ${r.key} is ${r.write ? '' : 'not '}marked as a write`);
    }
  }
  for (const key of schemaKeys) {
    const owners = servedBy.get(key) ?? [];
    if (owners.length === 0) problems.push(`${key} is served by no module`);
    if (owners.length > 1) problems.push(`${key} is served by ${owners.join(' and ')}`);
  }
  for (let i = 0; i < all.length; i++) {
    for (let j = i + 1; j < all.length; j++) {
      const a = all[i] as (typeof all)[number];
      const b = all[j] as (typeof all)[number];
      if (a.route.key !== b.route.key && overlap(a.route, b.route)) {
        problems.push(`${a.module}: ${a.route.key} and ${b.module}: ${b.route.key} match the same paths`);
      }
    }
  }
  const routes = all.map((entry) => entry.route);
  for (const r of routes) {
    if (matchRoute(r.method, sampleSegments(r), routes)?.route !== r) problems.push(`${r.key} is not reachable at its own path`);
  }
  return problems;
}

describe("the simulator's route modules", () => {
  it('serve every method of the extracted schema once, each checked and reachable', () => {
    expect(routeModuleProblems(ROUTE_MODULES, SCHEMA_KEYS)).toEqual([]);
    expect(ROUTE_MODULES.map((m) => m.name)).toEqual([
      'cluster',
      'task',
      'access',
      'storage',
      'pool',
      'backup',
      'vm',
      'container',
      'ha',
      'firewall',
      'network',
      'snapshot',
    ]);
  });

  it('keep VMs and containers apart: each guest flavour serves only its own paths', () => {
    const pathsOf = (name: string): string[] => ROUTE_MODULES.find((m) => m.name === name)?.routes.map((r) => r.path) ?? [];
    expect(pathsOf('vm').every((p) => p.startsWith('/nodes/{node}/qemu'))).toBe(true);
    expect(pathsOf('container').every((p) => p.startsWith('/nodes/{node}/lxc'))).toBe(true);
    // A guest's firewall file is the VMID's either way: its own module serves both flavours, and so does the snapshots'.
    const guestOwn = (k: string): boolean => !k.includes('/firewall/') && !k.includes('/snapshot');
    expect(pathsOf('snapshot').every((p) => /^\/nodes\/\{node\}\/(qemu|lxc)\/\{vmid\}\/snapshot/.test(p))).toBe(true);
    expect(SCHEMA_KEYS.filter((k) => k.includes('/snapshot')).length).toBe(pathsOf('snapshot').length);
    expect(SCHEMA_KEYS.filter((k) => k.includes('/qemu') && guestOwn(k)).length).toBe(pathsOf('vm').length);
    expect(SCHEMA_KEYS.filter((k) => k.includes('/lxc') && guestOwn(k)).length).toBe(pathsOf('container').length);
  });
});

describe('the conformance check fails on an incomplete or broken kind module', () => {
  const byName = (name: string): RouteModule => ROUTE_MODULES.find((m) => m.name === name) as RouteModule;
  const container = byName('container');
  const others = ROUTE_MODULES.filter((m) => m !== container);
  const destroyKey = 'DELETE /nodes/{node}/lxc/{vmid}';
  const replaceIn = (module: RouteModule, key: string, replace: (r: Route) => Route): RouteModule => ({
    name: module.name,
    routes: module.routes.map((r) => (r.key === key ? replace(r) : r)),
  });

  it.each([
    {
      what: 'a module that forgets a method',
      modules: [...others, { name: 'container', routes: container.routes.filter((r) => r.key !== destroyKey) }],
      problem: `${destroyKey} is served by no module`,
    },
    {
      what: 'a second module serving a method another one serves',
      modules: [...ROUTE_MODULES, { name: 'container-copy', routes: container.routes.filter((r) => r.key === destroyKey) }],
      problem: `${destroyKey} is served by container and container-copy`,
    },
    {
      what: 'a route whose permission check checks nothing',
      modules: [...others, replaceIn(container, destroyKey, (r) => ({ ...r, permission: () => undefined }))],
      problem: `container: ${destroyKey} has a permission check that lets a token without privileges through`,
    },
    {
      what: 'a route without a permission check',
      modules: [...others, replaceIn(container, destroyKey, (r) => ({ ...r, permission: undefined as unknown as Route['permission'] }))],
      problem: `container: ${destroyKey} lacks a permission check or a handler`,
    },
    {
      what: 'a write not marked as one',
      modules: [...others, replaceIn(container, destroyKey, (r) => ({ ...r, write: false }))],
      problem: `container: ${destroyKey} is not marked as a write`,
    },
    {
      what: 'a route the extracted schema does not describe',
      modules: [
        ...ROUTE_MODULES,
        { name: 'firewall-log', routes: [route('GET', '/nodes/{node}/qemu/{vmid}/firewall/log', anyone, () => ({ data: [] }))] },
      ],
      problem: 'firewall-log: GET /nodes/{node}/qemu/{vmid}/firewall/log is not in the extracted schema',
    },
    {
      what: 'a route that shadows another one',
      modules: [...ROUTE_MODULES, { name: 'shadow', routes: [route('GET', '/nodes/{node}/{kind}', anyone, () => ({ data: [] }))] }],
      problem: 'cluster: GET /nodes/{node}/status and shadow: GET /nodes/{node}/{kind} match the same paths',
    },
    {
      what: 'a module with no routes',
      modules: [...ROUTE_MODULES, { name: 'empty', routes: [] }],
      problem: 'module empty serves no route',
    },
  ])('$what', ({ modules, problem }) => {
    expect(routeModuleProblems(modules, SCHEMA_KEYS)).toContain(problem);
  });
});
