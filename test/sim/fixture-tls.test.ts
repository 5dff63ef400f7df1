import { createHash, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { connect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Agent, request } from 'undici';
import { startSimulator } from '../../src/pve/sim/index.js';
import { FixtureError, parseFixture } from '../../src/pve/sim/fixture.js';
import { generateTls } from '../../src/pve/sim/tls.js';
import { api } from './helpers.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/sim-basic.json', import.meta.url));

describe('fixtures', () => {
  it('loads a fixture file: raw configs byte for byte, object configs serialised, tokens, nextId, locks', async () => {
    const sim = await startSimulator({ port: 0, fixture: FIXTURE });
    try {
      expect(sim.sim.nodes).toEqual(['alpha', 'beta']);
      const fixture = JSON.parse(await readFile(FIXTURE, 'utf8')) as { guests: { config: unknown }[] };
      const raw = fixture.guests[0]!.config as string;
      const web = sim.sim.getGuest(1000)!;
      expect(web.rawConfig).toBe(raw);
      expect(web.digest).toBe(createHash('sha1').update(raw).digest('hex'));
      // The raw text carries a [PENDING] section and a snapshot.
      const pending = (await api(sim, 'GET', '/nodes/alpha/qemu/1000/pending')).body!.data as unknown[];
      expect(pending).toContainEqual({ key: 'memory', value: '2048', pending: '4096' });
      const snap = (await api(sim, 'GET', '/nodes/alpha/qemu/1000/config?snapshot=before-upgrade')).body!.data as Record<string, unknown>;
      expect(snap).toMatchObject({ memory: '1024', snaptime: 1700000000, digest: web.digest });

      expect(sim.sim.getGuest(2000)!.rawConfig).toBe(
        '#database container\narch: amd64\ncores: 2\nhostname: db\nlock: backup\nmemory: 1024\nostype: debian\nrootfs: local-lvm:vm-2000-disk-0,size=8G\ntags: b;db\nunprivileged: 1\n',
      );
      expect((await api(sim, 'GET', '/cluster/nextid')).body?.data).toBe('1001');
      const ops = await api(sim, 'GET', '/cluster/resources?type=vm', { token: 'ops@pve!ro=fixture-secret' });
      expect((ops.body!.data as { vmid: number }[]).map((e) => e.vmid)).toEqual([2000]);
      const storage = await api(sim, 'PUT', '/nodes/alpha/qemu/1000/config', { form: { scsi1: 'nowhere:8' } });
      expect(storage.body?.message).toBe("storage 'nowhere' does not exist\n");
    } finally {
      await sim.close();
    }
  });

  it('reports every problem of an invalid fixture with its path', () => {
    let error: unknown;
    try {
      parseFixture({
        nodes: ['a'],
        guests: [
          { vmid: 100, type: 'qemu', node: 'b', config: {} },
          { vmid: 100, type: 'kvm', node: 'a', config: 'x' },
        ],
        extra: 1,
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(FixtureError);
    const message = (error as FixtureError).message;
    expect(message).toContain("guests.0.node: node 'b' is not in nodes");
    expect(message).toContain('guests.1.type');
    expect(message).toContain('extra');
    expect(() =>
      parseFixture({ _comment: 'ignored', guests: [{ _note: 'also ignored', vmid: 100, type: 'qemu', node: 'pve-01', config: {} }] }),
    ).not.toThrow();
  });
});

describe('tls', () => {
  it('serves https with a generated CA; the fingerprint is the server certificate’s', async () => {
    const sim = await startSimulator({ port: 0, tls: true });
    try {
      expect(sim.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const caPem = await readFile(sim.caFile!, 'utf8');
      expect(caPem).toBe(sim.caPem);
      const agent = new Agent({ connect: { ca: caPem } });
      const res = await request(`${sim.url}/api2/json/version`, {
        dispatcher: agent,
        headers: { authorization: `PVEAPIToken=${sim.token}` },
      });
      expect(res.statusCode).toBe(200);
      await res.body.text();
      await agent.close();

      const port = Number(new URL(sim.url).port);
      const peer = await new Promise<X509Certificate>((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port, ca: caPem, servername: 'localhost' }, () => {
          const cert = socket.getPeerX509Certificate();
          socket.end();
          if (cert) resolve(cert);
          else reject(new Error('no peer certificate'));
        });
        socket.on('error', reject);
      });
      expect(peer.fingerprint256).toBe(sim.fingerprint);
      expect(sim.fingerprint).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);

      const untrusted = new Agent({ connect: { rejectUnauthorized: true } });
      await expect(request(`${sim.url}/api2/json/version`, { dispatcher: untrusted })).rejects.toThrow();
      await untrusted.close();
    } finally {
      await sim.close();
    }
  });
});

describe('generated certificates', () => {
  it('are valid DER every time, not just usually (serial numbers are minimal integers)', async () => {
    // One certificate in 128 had an illegally padded serial before; 300 pairs catch that.
    for (let i = 0; i < 300; i++) {
      const tls = await generateTls();
      const ca = new X509Certificate(tls.caPem);
      const cert = new X509Certificate(tls.certPem);
      expect(cert.checkIssued(ca) && cert.verify(ca.publicKey)).toBe(true);
    }
  });
});
