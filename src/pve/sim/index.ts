/**
 * The Proxmox VE API simulator: a stateful, faithful stand-in for a cluster on loopback.
 * `startSimulator()` is the one entry point; everything else here is types and the injection
 * API on `RunningSimulator.sim`.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { splitTokenId } from './auth.js';
import { loadFixtureFile, parseFixture } from './fixture.js';
import type { ParsedSimFixture, SimFixture } from './schema.js';
import { createSimServer } from './server.js';
import { Simulator } from './simulator.js';
import { haManager } from './kinds/ha/manager.js';

/** How to start a simulator. */
export interface SimulatorOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 8006; 0 picks a free port. */
  port?: number;
  /** Default `['pve-01', 'pve-02']` (or the fixture's nodes). */
  nodes?: string[];
  /** Full admin token `USER@REALM!ID=SECRET`; default `root@pam!pve-gitops=<uuid>`. */
  token?: string;
  /** Read-only (PVEAuditor) token; default `auditor@pve!audit=<uuid>`. */
  auditToken?: string;
  /** Serve https with a freshly generated CA and server certificate for 127.0.0.1/localhost. */
  tls?: boolean;
  /** Added to every API request. */
  latencyMs?: number;
  /** pvestatd's interval for listing name/status (Proxmox: 10,000); default 0 = live. */
  rrdLagMs?: number;
  /** How often the HA manager runs a round (Proxmox's CRM: 10,000); default none: only `haManager(sim).tick()`. */
  haRoundMs?: number;
  /** How long each task runs; default 50. */
  taskMs?: number;
  /** Fixture object or path to a JSON fixture file. */
  fixture?: SimFixture | string;
  clusterName?: string;
  /** Delay of 401 answers; Proxmox waits 3000 ms, the default here is 0 so tests stay fast. */
  authFailureDelayMs?: number;
}

/** A listening simulator. */
export interface RunningSimulator {
  /** Base URL without `/api2/json`, e.g. `http://127.0.0.1:8006`. */
  url: string;
  /** `root@pam!pve-gitops=SECRET`. */
  token: string;
  auditToken: string;
  /** PEM file of the CA (tls only). */
  caFile?: string;
  caPem?: string;
  /** SHA-256 fingerprint of the server certificate, `AB:CD:…` (tls only). */
  fingerprint?: string;
  sim: Simulator;
  /** Stops listening and frees everything; idempotent. */
  close(): Promise<void>;
}

/** Thrown for unusable options (a malformed token, an unknown node in the fixture…). */
class SimulatorOptionsError extends Error {
  override readonly name = 'SimulatorOptionsError';
}

function splitToken(full: string, what: string): { id: string; secret: string } {
  const eq = full.lastIndexOf('=');
  const id = eq < 0 ? full : full.slice(0, eq);
  const secret = eq < 0 ? '' : full.slice(eq + 1);
  if (!splitTokenId(id) || secret === '') {
    throw new SimulatorOptionsError(`invalid ${what} '${id}=…': expected USER@REALM!TOKENID=SECRET`);
  }
  return { id, secret };
}

async function resolveFixture(fixture: SimFixture | string | undefined): Promise<ParsedSimFixture | undefined> {
  if (fixture === undefined) return undefined;
  return typeof fixture === 'string' ? loadFixtureFile(fixture) : parseFixture(fixture);
}

/** Starts a simulator and resolves once it accepts connections. */
export async function startSimulator(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  const fixture = await resolveFixture(options.fixture);
  const nodes = options.nodes ?? fixture?.nodes ?? ['pve-01', 'pve-02'];
  const token = options.token ?? `root@pam!pve-gitops=${randomUUID()}`;
  const auditToken = options.auditToken ?? `auditor@pve!audit=${randomUUID()}`;
  const admin = splitToken(token, 'token');
  const auditor = splitToken(auditToken, 'audit token');

  const sim = new Simulator({
    nodes,
    clusterName: options.clusterName ?? fixture?.clusterName ?? 'pve-sim',
    taskMs: options.taskMs ?? 50,
    latencyMs: options.latencyMs ?? 0,
    authFailureDelayMs: options.authFailureDelayMs ?? 0,
    nextId: fixture?.nextId ?? { lower: 100, upper: 1_000_000 },
    ...(fixture?.storages ? { storages: fixture.storages } : {}),
    ...(fixture?.files
      ? { files: fixture.files.map((f) => ({ volid: f.volid, size: f.size ?? 0, ctime: f.ctime ?? 1_735_689_600 })) }
      : {}),
    ...(fixture?.pools ? { pools: fixture.pools } : {}),
    ...(fixture?.nodeCpus ? { nodeCpus: fixture.nodeCpus } : {}),
    ...(fixture?.bridges ? { bridges: fixture.bridges } : {}),
  });
  if (options.rrdLagMs) sim.setRrdLag(options.rrdLagMs);
  if (options.haRoundMs !== undefined) haManager(sim).setRoundMs(options.haRoundMs);
  sim.tokens.add({ ...admin, role: 'admin' });
  sim.tokens.add({ ...auditor, role: 'audit' });
  for (const t of fixture?.tokens ?? []) {
    sim.tokens.add({
      id: t.id,
      secret: t.secret,
      role: t.role,
      ...(t.vmids ? { vmids: new Set(t.vmids) } : {}),
      ...(t.guestsOnly ? { guestsOnly: true } : {}),
    });
  }
  for (const guest of fixture?.guests ?? []) {
    if (!nodes.includes(guest.node)) {
      throw new SimulatorOptionsError(`fixture guest ${guest.vmid} is on node '${guest.node}', which is not one of ${nodes.join(', ')}`);
    }
    sim.addGuest({
      vmid: guest.vmid,
      type: guest.type,
      node: guest.node,
      running: guest.running ?? false,
      config: guest.config,
      ...(guest.lock !== undefined ? { lock: guest.lock } : {}),
    });
  }

  let tlsDir: string | undefined;
  let tlsInfo: { caFile: string; caPem: string; fingerprint: string } | undefined;
  let server;
  if (options.tls) {
    // Loaded on demand: the X.509 library is only needed when serving https.
    const { generateTls } = await import('./tls.js');
    const material = await generateTls(options.host ? [options.host] : []);
    tlsDir = await mkdtemp(join(tmpdir(), 'pve-sim-tls-'));
    const caFile = join(tlsDir, 'pve-root-ca.pem');
    await writeFile(caFile, material.caPem, { mode: 0o644 });
    tlsInfo = { caFile, caPem: material.caPem, fingerprint: material.fingerprint };
    server = createSimServer(sim, { cert: material.certPem, key: material.keyPem });
  } else {
    server = createSimServer(sim);
  }

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8006, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      sim.dispose();
      haManager(sim).close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      if (tlsDir) await rm(tlsDir, { recursive: true, force: true });
    })();
    return closing;
  };

  return {
    url: `${options.tls ? 'https' : 'http'}://${urlHost}:${port}`,
    token,
    auditToken,
    ...(tlsInfo ?? {}),
    sim,
    close,
  };
}
