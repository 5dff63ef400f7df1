/**
 * `pve-gitops check`: the connection to every cluster the specs name, before anything is planned —
 * TLS, both tokens (read and apply) and the privileges the specs will need, the nodes. It reads only;
 * it neither plans nor writes.
 */
import { clusterNames } from '../connections/connect.js';
import { z } from 'zod';
import type { ClusterSpec, GuestSpec, ObjectSpec } from '../core/model.js';
import { kindPrivileges } from '../core/kinds/registry.js';
import { describeMissing, missingPrivileges, type PermissionTree, requiredPrivileges } from '../core/plan/required-privileges.js';
import { plural } from '../core/render/plan-labels.js';
import { hasOwnerTag } from '../core/plan/desired-config.js';
import type { OpenClusters } from '../connections/open-clusters.js';
import type { PveClient } from '../pve/client.js';
import { parseFlags } from './args.js';
import { connect, loadSpecDir, note } from './shared.js';
import type { Command, CommandIO } from './types.js';
import { errorMessage } from '../util/error-message.js';

/** What one cluster answered to the read-only token. */
interface ReadCheck {
  version: string;
  nodes: { node: string; status?: string }[];
  guests: number;
  owned: number;
}

async function checkRead(client: PveClient, ownerTag: string): Promise<ReadCheck> {
  const [version, nodes, listing] = await Promise.all([client.version(), client.nodes(), client.clusterResources()]);
  return {
    version: version.version,
    nodes,
    guests: listing.length,
    owned: listing.filter((l) => hasOwnerTag(l.tags, ownerTag)).length,
  };
}

/** `GET /access/permissions`: the token's effective privileges, path → privilege → propagate. */
const PermissionTreeSchema = z.record(z.string(), z.record(z.string(), z.union([z.number(), z.boolean()])));

/**
 * Asks Proxmox what the token may do and compares it with what `mode` needs for these guests.
 * Returns the problems (missing privileges) and prints one line either way.
 */
async function checkPrivileges(
  client: PveClient,
  guests: readonly GuestSpec[],
  objects: readonly ObjectSpec[],
  mode: 'read' | 'apply',
  io: CommandIO,
  cluster?: ClusterSpec,
): Promise<string[]> {
  const who = mode === 'read' ? 'plan token' : 'apply token';
  const policies = new Map(cluster ? [[cluster.name, cluster]] : []);
  const needed = [...requiredPrivileges(guests, mode, policies), ...kindPrivileges({ objects, guests }, mode)];
  if (needed.length === 0) return [];
  let tree: PermissionTree;
  try {
    tree = PermissionTreeSchema.parse(await client.request<unknown>('GET', '/access/permissions'));
  } catch (err) {
    return [`${who}: cannot read its permissions (GET /access/permissions): ${errorMessage(err)}`];
  }
  const missing = missingPrivileges(tree, needed);
  const paths = new Set(needed.map((n) => n.path));
  if (missing.length === 0) {
    io.stdout.write(
      `  ${`${who}:`.padEnd(13)}holds what ${mode === 'read' ? 'a plan' : 'an apply'} needs on ${plural(paths.size, 'path')}\n`,
    );
    return [];
  }
  return missing.map((m) => `${who} lacks ${describeMissing(m)}`);
}

/** Checks one cluster with both tokens; returns the problems found (none: all good). */
async function checkCluster(
  name: string,
  spec: ClusterSpec | undefined,
  guests: readonly GuestSpec[],
  objects: readonly ObjectSpec[],
  read: OpenClusters,
  write: OpenClusters,
  io: CommandIO,
): Promise<string[]> {
  const problems: string[] = [];
  const readClient = read.clients[name]!;
  const writeClient = write.clients[name]!;
  io.stdout.write(`${name}: ${readClient.url}\n`);
  try {
    const result = await checkRead(readClient, spec?.ownerTag ?? 'pve-gitops');
    io.stdout.write(
      `  plan token:  ok — Proxmox VE ${result.version}, ${result.guests} guests visible, ${result.owned} owned (tag ${spec?.ownerTag ?? 'pve-gitops'})\n`,
    );
    const nodes = result.nodes.map((n) => `${n.node}${n.status && n.status !== 'online' ? ` (${n.status})` : ''}`);
    io.stdout.write(`  nodes:       ${nodes.join(', ') || '(none visible)'}\n`);
    const known = new Set(result.nodes.map((n) => n.node));
    for (const node of spec?.nodes ?? []) {
      if (!known.has(node)) problems.push(`node '${node}' of the Cluster document is not a node of this cluster`);
    }
    for (const n of result.nodes) if (n.status && n.status !== 'online') problems.push(`node '${n.node}' is ${n.status}`);
    if (result.guests === 0) {
      io.stdout.write('  warning:     the token sees no guests: on a cluster that has guests, it lacks VM.Audit on /vms\n');
    }
    problems.push(...(await checkPrivileges(readClient, guests, objects, 'read', io)));
  } catch (err) {
    problems.push(`plan token: ${errorMessage(err)}`);
  }
  try {
    const version = await writeClient.version();
    io.stdout.write(`  apply token: ok — authenticated (Proxmox VE ${version.version})\n`);
    // Authenticated is not enough: a token that may not write passes every read (issue: "all good").
    problems.push(...(await checkPrivileges(writeClient, guests, objects, 'apply', io, spec)));
  } catch (err) {
    problems.push(`apply token: ${errorMessage(err)}`);
  }
  for (const p of problems) io.stdout.write(`  problem:     ${p}\n`);
  return problems;
}

export const checkCommand: Command = {
  name: 'check',
  summary: 'check the connection to every cluster of the specs: TLS, both tokens and their privileges, nodes; exit 0 ok, 1 problems',
  usage: 'pve-gitops check [--specs DIR] [--clusters FILE]',
  async run(args, io) {
    const flags = parseFlags(args, { specs: { type: 'string', default: '.' }, clusters: { type: 'string' } });
    const { specs, errorLines } = await loadSpecDir(flags.specs, io);
    if (errorLines.length > 0) note(io, `warning: the specs have ${errorLines.length} error(s); run pve-gitops validate`);
    const names = clusterNames(specs);
    if (names.length === 0) {
      note(io, `no clusters in ${flags.specs}: nothing to check`);
      return 1;
    }
    const read = await connect(names, 'read', io, flags.clusters);
    const write = await connect(names, 'write', io, flags.clusters);
    try {
      let problems = 0;
      for (const name of names) {
        problems += (
          await checkCluster(
            name,
            specs.clusters.find((c) => c.name === name),
            specs.guests.filter((g) => g.cluster === name),
            (specs.objects ?? []).filter((o) => o.cluster === name),
            read,
            write,
            io,
          )
        ).length;
      }
      note(io, problems === 0 ? `${names.length} cluster(s): all good` : `${problems} problem(s) found`);
      return problems === 0 ? 0 : 1;
    } finally {
      await read.close();
      await write.close();
    }
  },
};
