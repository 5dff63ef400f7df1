/**
 * The client against the real simulator over loopback HTTP(S): every typed error produced by a
 * real response, read-only refusal, retries of reads only, task waiting, TLS with the
 * simulator's generated CA and certificate.
 */
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PveClient, type PveClientOptions } from '../../src/pve/client.js';
import {
  PveAlreadyExistsError,
  PveAuthError,
  PveDigestConflictError,
  PveError,
  PveLockedError,
  PveNotFoundError,
  PveNotImplementedError,
  PveParameterError,
  PvePermissionError,
  PveProtectedError,
  PveReadOnlyError,
  PveRunningError,
  PveTaskFailedError,
  PveTlsError,
  PveTransportError,
} from '../../src/pve/errors.js';
import { startSimulator, type RunningSimulator } from '../../src/pve/sim/index.js';

const NODE = 'pve-01';
let running: RunningSimulator;
let client: PveClient;
const clients: PveClient[] = [];

function newClient(options: Partial<PveClientOptions> = {}): PveClient {
  const c = new PveClient({ cluster: 'sim', url: running.url, token: running.token, retryDelayMs: 1, ...options });
  clients.push(c);
  return c;
}

function secretOf(token: string): string {
  return token.slice(token.lastIndexOf('=') + 1);
}

async function failure(promise: Promise<unknown>): Promise<PveError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof PveError)) throw new Error(`expected a PveError, got ${inspect(err)}`);
  return err;
}

function addQemu(vmid: number, config: Record<string, string | number> = {}, runningGuest = false): void {
  running.sim.addGuest({
    vmid,
    type: 'qemu',
    node: NODE,
    running: runningGuest,
    config: { name: `vm-${vmid}`, memory: 2048, cores: 2, scsi0: `local-lvm:vm-${vmid}-disk-0,size=8G`, ...config },
  });
}

function addLxc(vmid: number, config: Record<string, string | number> = {}, runningGuest = false): void {
  running.sim.addGuest({
    vmid,
    type: 'lxc',
    node: NODE,
    running: runningGuest,
    config: {
      hostname: `ct-${vmid}`,
      memory: 512,
      ostype: 'debian',
      arch: 'amd64',
      rootfs: `local-lvm:vm-${vmid}-disk-0,size=4G`,
      ...config,
    },
  });
}

beforeAll(async () => {
  running = await startSimulator({ port: 0, taskMs: 30 });
  client = newClient();
});

afterAll(async () => {
  for (const c of clients) await c.close();
  await running.close();
});

describe('reads', () => {
  it('version, nodes and the cluster listing', async () => {
    addQemu(100, { tags: 'a;b' });
    addLxc(101, {}, true);
    await expect(client.version()).resolves.toMatchObject({ version: expect.any(String) });
    expect((await client.nodes()).map((n) => n.node).sort()).toEqual(['pve-01', 'pve-02']);
    const listing = await client.clusterResources();
    expect(listing.find((g) => g.vmid === 100)).toMatchObject({ vmid: 100, type: 'qemu', node: NODE, tags: 'a;b' });
    expect(listing.find((g) => g.vmid === 101)).toMatchObject({ vmid: 101, type: 'lxc', node: NODE });
    expect((await client.listGuests(NODE, 'lxc')).map((g) => g.vmid)).toContain(101);
  });

  it('readGuest returns current, pending, pending deletes and the digest of that read', async () => {
    addQemu(110, { sockets: 1 }, true);
    // Neither is hot-pluggable, so on a running VM both stay queued in [PENDING].
    running.sim.operatorEdit(110, { set: { cores: 4 }, delete: ['sockets'] });
    const guest = await client.readGuest(NODE, 'qemu', 110);
    expect(guest.digest).toBe(running.sim.getGuest(110)!.digest);
    expect(guest.status).toBe('running');
    expect(guest.current.cores).toBe('2');
    expect(guest.pending.cores).toBe('4');
    expect(guest.pendingDelete).toEqual(['sockets']);
    expect(guest.current.sockets).toBe('1');
    expect(guest.current.digest).toBeUndefined();
    const config = await client.getConfig(NODE, 'qemu', 110, { current: true });
    expect(config.cores).toBe(2);
    expect((await client.getConfig(NODE, 'qemu', 110)).cores).toBe(4);
  });

  it('nextId returns a number and rejects a taken VMID as already existing', async () => {
    addQemu(120);
    expect(typeof (await client.nextId())).toBe('number');
    await expect(client.nextId(121)).resolves.toBe(121);
    const err = await failure(client.nextId(120));
    expect(err).toBeInstanceOf(PveAlreadyExistsError);
    expect(err).toMatchObject({ vmid: 120, status: 400 });
  });
});

describe('every typed error from a real simulator response', () => {
  it('digest conflict (qemu) carries what was sent and what is there now', async () => {
    addQemu(200);
    const read = await client.readGuest(NODE, 'qemu', 200);
    running.sim.operatorEdit(200, { set: { memory: 4096 } });
    const err = await failure(client.updateConfig(NODE, 'qemu', 200, { set: { cores: 3 }, digest: read.digest }));
    expect(err).toBeInstanceOf(PveDigestConflictError);
    expect(err.message).toBe('checksum mismatch (file change by other user?)');
    expect(err.status).toBe(500);
    expect(err).toMatchObject({ expectedDigest: read.digest, actualDigest: running.sim.getGuest(200)!.digest });
    expect((err as PveDigestConflictError).actualDigest).not.toBe(read.digest);
  });

  it('digest conflict (lxc)', async () => {
    addLxc(201);
    const read = await client.readGuest(NODE, 'lxc', 201);
    running.sim.editAfterNextRead(201, { set: { memory: 1024 } });
    await client.getPending(NODE, 'lxc', 201); // the armed edit lands after this read
    const err = await failure(client.updateConfig(NODE, 'lxc', 201, { set: { cores: 2 }, digest: read.digest }));
    expect(err).toBeInstanceOf(PveDigestConflictError);
    expect(err.message).toBe('detected modified configuration - file changed by other user? Try again.');
    expect(err).toMatchObject({ expectedDigest: read.digest, actualDigest: running.sim.getGuest(201)!.digest });
  });

  it('digest conflict on move_disk', async () => {
    addQemu(202);
    const read = await client.readGuest(NODE, 'qemu', 202);
    running.sim.operatorEdit(202, { set: { memory: 4096 } });
    const err = await failure(client.moveDisk(NODE, 'qemu', 202, 'scsi0', 'local', { digest: read.digest }));
    expect(err).toBeInstanceOf(PveDigestConflictError);
    expect(err).toMatchObject({ expectedDigest: read.digest });
  });

  it('locked guest (qemu and lxc)', async () => {
    addQemu(210);
    addLxc(211);
    const q = await client.readGuest(NODE, 'qemu', 210);
    const l = await client.readGuest(NODE, 'lxc', 211);
    void running.sim.holdLock(210, 'backup', 60_000);
    void running.sim.holdLock(211, 'snapshot', 60_000);
    const qemuErr = await failure(client.updateConfig(NODE, 'qemu', 210, { set: { cores: 3 }, digest: running.sim.getGuest(210)!.digest }));
    expect(qemuErr).toBeInstanceOf(PveLockedError);
    expect(qemuErr).toMatchObject({ message: 'VM is locked (backup)', lock: 'backup', guestType: 'qemu', status: 500 });
    const lxcErr = await failure(client.updateConfig(NODE, 'lxc', 211, { set: { cores: 3 }, digest: l.digest }));
    expect(lxcErr).toBeInstanceOf(PveLockedError); // LXC checks the lock before the digest
    expect(lxcErr).toMatchObject({ message: 'CT is locked (snapshot)', lock: 'snapshot', guestType: 'lxc' });
    expect(q.digest).not.toBe(running.sim.getGuest(210)!.digest);
  });

  it('already exists (create twice), with VMID and node', async () => {
    const upid = await client.createGuest(NODE, 'qemu', 220, { name: 'twice', memory: 1024 });
    await client.waitForTask(NODE, upid);
    const err = await failure(client.createGuest('pve-02', 'qemu', 220, { name: 'twice', memory: 1024 }));
    expect(err).toBeInstanceOf(PveAlreadyExistsError);
    expect(err).toMatchObject({
      message: `unable to create VM 220 - VM 220 already exists on node '${NODE}'`,
      vmid: 220,
      node: NODE,
    });
    addLxc(221);
    const ctErr = await failure(
      client.createGuest(NODE, 'lxc', 221, { ostemplate: 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst' }),
    );
    expect(ctErr).toBeInstanceOf(PveAlreadyExistsError);
    expect(ctErr).toMatchObject({ message: `CT 221 already exists on node '${NODE}'`, vmid: 221, node: NODE });
  });

  it('not found: missing guest config and unknown task', async () => {
    const err = await failure(client.getConfig(NODE, 'qemu', 99999));
    expect(err).toBeInstanceOf(PveNotFoundError);
    expect(err).toMatchObject({ status: 500, message: `Configuration file 'nodes/${NODE}/qemu-server/99999.conf' does not exist` });
    const task = await failure(client.taskStatus(NODE, 'UPID:pve-01:0000AB12:0011FF00:6700AA00:qmstart:100:root@pam!pve-gitops:'));
    expect(task).toBeInstanceOf(PveNotFoundError);
    expect(task.message).toBe('no such task');
  });

  it('permission denied: the audit token may read but not write', async () => {
    addQemu(230);
    const auditor = newClient({ token: running.auditToken });
    const read = await auditor.readGuest(NODE, 'qemu', 230);
    const err = await failure(auditor.updateConfig(NODE, 'qemu', 230, { set: { cores: 3 }, digest: read.digest }));
    expect(err).toBeInstanceOf(PvePermissionError);
    expect(err.status).toBe(403);
    expect(err.message).toMatch(/^Permission check failed \(\/vms\/230, /);
  });

  it('parameter errors carry each parameter’s message', async () => {
    addQemu(240);
    const read = await client.readGuest(NODE, 'qemu', 240);
    const err = await failure(
      client.updateConfig(NODE, 'qemu', 240, { set: { cores: 'abc', name: 'not_a_dns_name', bogus: 1 }, digest: read.digest }),
    );
    expect(err).toBeInstanceOf(PveParameterError);
    expect(err.status).toBe(400);
    expect((err as PveParameterError).errors).toEqual({
      cores: "type check ('integer') failed - got 'abc'",
      name: 'invalid format - value does not look like a valid DNS name',
      bogus: 'property is not defined in schema and the schema does not allow additional properties',
    });
  });

  it('protection blocks destroy; a running guest is not destroyed', async () => {
    addQemu(250, { protection: 1 });
    const protectedErr = await failure(client.destroyGuest(NODE, 'qemu', 250));
    expect(protectedErr).toBeInstanceOf(PveProtectedError);
    expect(protectedErr.message).toBe("can't remove VM 250 - protection mode enabled");
    addQemu(251, {}, true);
    const runningErr = await failure(client.destroyGuest(NODE, 'qemu', 251));
    expect(runningErr).toBeInstanceOf(PveRunningError);
    expect(runningErr.message).toBe('VM 251 is running - destroy failed');
    addLxc(252, {}, true);
    expect(await failure(client.destroyGuest(NODE, 'lxc', 252))).toBeInstanceOf(PveRunningError);
  });

  it('a task that fails exposes its exit status and the typed cause', async () => {
    addQemu(260);
    void running.sim.holdLock(260, 'backup', 60_000);
    // QEMU destroy checks the lock only inside the worker (docs/proxmox-api.md#destroy).
    const upid = await client.destroyGuest(NODE, 'qemu', 260);
    const err = await failure(client.waitForTask(NODE, upid));
    expect(err).toBeInstanceOf(PveTaskFailedError);
    expect(err).toMatchObject({ upid, exitstatus: 'VM is locked (backup)' });
    expect((err as PveTaskFailedError).cause).toBeInstanceOf(PveLockedError);
    expect((err as PveTaskFailedError).cause).toMatchObject({ lock: 'backup', guestType: 'qemu' });
    expect(running.sim.getGuest(260)).toBeDefined();
  });

  it('401 for a wrong token, with Proxmox’s reason phrase', async () => {
    const wrong = newClient({ token: `${running.token.slice(0, running.token.lastIndexOf('='))}=00000000-0000-0000-0000-000000000000` });
    const err = await failure(wrong.version());
    expect(err).toBeInstanceOf(PveAuthError);
    expect(err).toMatchObject({ status: 401, message: 'Authentication failed!' });
  });

  it('501 for an unknown path', async () => {
    const err = await failure(client.request('GET', '/nodes/pve-01/nothing-here'));
    expect(err).toBeInstanceOf(PveNotImplementedError);
    expect(err.message).toBe("Method 'GET /nodes/pve-01/nothing-here' not implemented");
  });
});

describe('writes', () => {
  it('qemu config update waits for its task and lands', async () => {
    addQemu(300);
    const read = await client.readGuest(NODE, 'qemu', 300);
    await client.updateConfig(NODE, 'qemu', 300, { set: { cores: 4, tags: 'B a' }, delete: ['name'], digest: read.digest });
    const after = await client.readGuest(NODE, 'qemu', 300);
    expect(after.current).toMatchObject({ cores: '4', tags: 'a;b' });
    expect(after.current.name).toBeUndefined();
  });

  it('lxc update, power, resize and move round-trip', async () => {
    addLxc(301);
    const read = await client.readGuest(NODE, 'lxc', 301);
    await client.updateConfig(NODE, 'lxc', 301, { set: { memory: 1024 }, digest: read.digest });
    expect((await client.readGuest(NODE, 'lxc', 301)).current.memory).toBe('1024');
    const resized = await client.resizeDisk(NODE, 'lxc', 301, 'rootfs', '+1G');
    if (resized !== null) await client.waitForTask(NODE, resized);
    expect((await client.getConfig(NODE, 'lxc', 301)).rootfs).toMatch(/size=5G/);
    await client.waitForTask(NODE, await client.moveDisk(NODE, 'lxc', 301, 'rootfs', 'local', { delete: true }));
    expect((await client.getConfig(NODE, 'lxc', 301)).rootfs).toMatch(/^local:/);
    await client.waitForTask(NODE, await client.start(NODE, 'lxc', 301));
    expect(running.sim.getGuest(301)!.running).toBe(true);
    await client.waitForTask(NODE, await client.shutdown(NODE, 'lxc', 301));
    expect(running.sim.getGuest(301)!.running).toBe(false);
    await client.waitForTask(NODE, await client.destroyGuest(NODE, 'lxc', 301, { purge: true }));
    expect(running.sim.getGuest(301)).toBeUndefined();
    const log = await client.taskLog(NODE, await client.stop(NODE, 'qemu', 300));
    expect(log.length).toBeGreaterThan(0);
  });
});

describe('read-only client against the simulator', () => {
  it('refuses every write before any request reaches the cluster', async () => {
    addQemu(400);
    const ro = newClient({ readOnly: true });
    const read = await ro.readGuest(NODE, 'qemu', 400);
    running.sim.resetStats();
    const attempts = [
      ro.updateConfig(NODE, 'qemu', 400, { set: { cores: 8 }, digest: read.digest }),
      ro.start(NODE, 'qemu', 400),
      ro.destroyGuest(NODE, 'qemu', 400),
      ro.createGuest(NODE, 'qemu', 401, {}),
    ];
    for (const attempt of attempts) expect(await failure(attempt)).toBeInstanceOf(PveReadOnlyError);
    const stats = running.sim.stats();
    expect(stats.requests.total).toBe(0);
    expect(stats.writes.total).toBe(0);
  });
});

describe('retries against simulator faults', () => {
  it('reads ride through random 500 got-timeout and dropped connections', async () => {
    addQemu(500);
    const flaky = newClient({ retries: 12 });
    running.sim.resetStats();
    running.sim.setFailureRate(0.3, { methods: ['GET'] });
    try {
      for (let i = 0; i < 20; i++) await flaky.readGuest(NODE, 'qemu', 500);
    } finally {
      running.sim.setFailureRate(0);
    }
    // 40 successful reads plus the failed attempts the client retried.
    expect(running.sim.stats().requests.byMethod.GET).toBeGreaterThan(40);
  });

  it('a write hit by a fault is sent once and surfaces', async () => {
    addQemu(501);
    const flaky = newClient({ retries: 12 });
    running.sim.resetStats();
    running.sim.setFailureRate(1, { methods: ['POST'], mode: 'reset' });
    let err: PveError;
    try {
      err = await failure(flaky.start(NODE, 'qemu', 501));
    } finally {
      running.sim.setFailureRate(0);
    }
    expect(err).toBeInstanceOf(PveTransportError);
    expect((err as PveTransportError).retryable).toBe(false);
    expect(running.sim.stats().requests.byMethod.POST).toBe(1);

    running.sim.resetStats();
    running.sim.setFailureRate(1, { methods: ['POST'], mode: 'error' });
    try {
      err = await failure(flaky.start(NODE, 'qemu', 501));
    } finally {
      running.sim.setFailureRate(0);
    }
    expect(err.constructor).toBe(PveError);
    expect(err).toMatchObject({ status: 500, message: 'got timeout' });
    expect(running.sim.stats().requests.byMethod.POST).toBe(1);
  });

  it('with latency, in-flight requests stay within the concurrency bound', async () => {
    addQemu(502);
    const bounded = newClient({ concurrency: 2 });
    running.sim.setLatency(20);
    let max = 0;
    try {
      await Promise.all(
        Array.from({ length: 12 }, async () => {
          const pending = bounded.getPending(NODE, 'qemu', 502);
          max = Math.max(max, bounded.inFlight);
          await pending;
        }),
      );
    } finally {
      running.sim.setLatency(0);
    }
    expect(max).toBe(2);
  });
});

describe('waitForTask', () => {
  it('resolves with the final status', async () => {
    addQemu(600);
    const seen: string[] = [];
    const status = await client.waitForTask(NODE, await client.start(NODE, 'qemu', 600), { onProgress: (s) => seen.push(s.status) });
    expect(status).toMatchObject({ status: 'stopped', exitstatus: 'OK' });
    expect(seen.at(-1)).toBe('stopped');
    expect(running.sim.getGuest(600)!.running).toBe(true);
  });

  it('cancels on abort with the abort reason and leaves the task running', async () => {
    addQemu(601);
    running.sim.setTaskMs(60_000);
    try {
      const upid = await client.start(NODE, 'qemu', 601);
      const controller = new AbortController();
      const reason = new Error('operator cancelled');
      const wait = client.waitForTask(NODE, upid, {
        signal: controller.signal,
        onProgress: (s) => {
          if (s.status === 'running') controller.abort(reason);
        },
      });
      await expect(wait).rejects.toBe(reason);
      expect((await client.taskStatus(NODE, upid)).status).toBe('running');
    } finally {
      running.sim.setTaskMs(30);
    }
  });

  it('times out when asked to, without stopping the task', async () => {
    addQemu(602);
    running.sim.setTaskMs(60_000);
    try {
      const upid = await client.start(NODE, 'qemu', 602);
      const err = await failure(client.waitForTask(NODE, upid, { timeoutMs: 100, intervalMs: 20 }));
      expect(err.name).toBe('PveTaskTimeoutError');
      expect((await client.taskStatus(NODE, upid)).status).toBe('running');
    } finally {
      running.sim.setTaskMs(30);
    }
  });
});

describe('the token stays secret', () => {
  it('appears in no error text and no inspection of the client', async () => {
    const secret = secretOf(running.token);
    const errors: unknown[] = [
      await failure(client.getConfig(NODE, 'qemu', 99998)),
      await failure(newClient({ token: `${running.token}x` }).version()),
      await failure(client.createGuest(NODE, 'qemu', 1, {})),
    ];
    for (const err of errors) {
      for (const text of [String(err), (err as Error).stack ?? '', JSON.stringify(err), inspect(err, { depth: 10 })]) {
        expect(text).not.toContain(secret);
      }
    }
    for (const text of [inspect(client, { depth: 10, showHidden: true }), JSON.stringify(client), String(client)]) {
      expect(text).not.toContain(secret);
    }
  });
});

describe('HTTPS with the simulator’s generated certificate', () => {
  let tlsSim: RunningSimulator;
  beforeAll(async () => {
    tlsSim = await startSimulator({ port: 0, tls: true });
  });
  afterAll(async () => {
    await tlsSim.close();
  });

  const viaTls = async (options: Partial<PveClientOptions>): Promise<unknown> => {
    const c = new PveClient({ cluster: 'sim-tls', url: tlsSim.url, token: tlsSim.token, retries: 0, ...options });
    try {
      return await c.version();
    } catch (err) {
      return err;
    } finally {
      await c.close();
    }
  };

  it('works with the CA', async () => {
    expect(tlsSim.url.startsWith('https://')).toBe(true);
    await expect(viaTls({ ca: tlsSim.caPem })).resolves.toMatchObject({ version: expect.any(String) });
  });

  it('works with the pinned fingerprint', async () => {
    await expect(viaTls({ fingerprint: tlsSim.fingerprint })).resolves.toMatchObject({ version: expect.any(String) });
  });

  it('refuses a wrong fingerprint before any API request', async () => {
    tlsSim.sim.resetStats();
    const err = await viaTls({ fingerprint: 'AB'.repeat(32) });
    expect(err).toBeInstanceOf(PveTlsError);
    expect(err).toMatchObject({ expected: Array(32).fill('AB').join(':'), presented: tlsSim.fingerprint });
    expect(tlsSim.sim.stats().requests.total).toBe(0);
  });

  it('refuses without a CA (system CAs do not know the simulator’s)', async () => {
    tlsSim.sim.resetStats();
    expect(await viaTls({})).toBeInstanceOf(PveTlsError);
    expect(tlsSim.sim.stats().requests.total).toBe(0);
  });
});
