import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gunzipSync } from 'node:zlib';
import { request } from 'undici';
import { startSimulator, type RunningSimulator } from '../../src/pve/sim/index.js';
import { api, CT_CONFIG, WEB_CONFIG } from './helpers.js';

let sim: RunningSimulator;

beforeAll(async () => {
  sim = await startSimulator({
    port: 0,
    fixture: {
      guests: [
        { vmid: 100, type: 'qemu', node: 'pve-01', running: true, config: WEB_CONFIG },
        { vmid: 200, type: 'lxc', node: 'pve-02', config: CT_CONFIG },
      ],
    },
  });
});
afterAll(() => sim.close());

describe('response envelopes (docs/proxmox-api.md#envelopes-and-status-codes)', () => {
  it('success: {"data":…} with the pve-api-daemon headers', async () => {
    const res = await api(sim, 'GET', '/version');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { version: expect.any(String), release: expect.any(String), repoid: expect.any(String) } });
    expect(res.headers.server).toBe('pve-api-daemon/3.0');
    expect(res.headers['content-type']).toBe('application/json;charset=UTF-8');
    expect(res.headers['cache-control']).toBe('max-age=0');
    expect(res.headers.pragma).toBe('no-cache');
    expect(res.headers.expires).toMatch(/GMT$/);
  });

  it('400: errors per parameter, message and reason phrase "Parameter verification failed."', async () => {
    const res = await api(sim, 'PUT', '/nodes/pve-01/qemu/100/config', { form: { cores: 'many', bogus: '1' } });
    expect(res.status).toBe(400);
    expect(res.reason).toBe('Parameter verification failed.');
    expect(res.text).toBe(
      JSON.stringify({
        data: null,
        errors: {
          cores: "type check ('integer') failed - got 'many'",
          bogus: 'property is not defined in schema and the schema does not allow additional properties',
        },
        message: 'Parameter verification failed.\n',
      }),
    );
  });

  it('400: format errors keep their trailing newline; vmid format is checked before its minimum', async () => {
    const res = await api(sim, 'GET', '/nodes/pve-01/qemu/99/config');
    expect(res.body?.errors).toEqual({ vmid: 'invalid format - value does not look like a valid VM ID\n' });
    const name = await api(sim, 'PUT', '/nodes/pve-01/qemu/100/config', { form: { name: 'web_01' } });
    expect(name.body?.errors).toEqual({ name: 'invalid format - value does not look like a valid DNS name\n' });
    const tags = await api(sim, 'PUT', '/nodes/pve-01/qemu/100/config', { form: { tags: 'ok;b@d' } });
    expect(tags.body?.errors).toEqual({ tags: 'invalid format - invalid characters in tag\n' });
  });

  it('400: booleans are 0/1 in forms and query strings, JSON true/false in JSON bodies', async () => {
    const query = await api(sim, 'GET', '/nodes/pve-01/qemu/100/config?current=true');
    expect(query.body?.errors).toEqual({ current: "type check ('boolean') failed - got 'true'" });
    const json = await api(sim, 'PUT', '/nodes/pve-01/qemu/100/config', { json: { onboot: false } });
    expect(json.status).toBe(200);
    expect(sim.sim.getGuest(100)?.rawConfig).toContain('onboot: 0\n');
  });

  it('400: snapshot together with current reports both keys', async () => {
    const res = await api(sim, 'GET', '/nodes/pve-01/qemu/100/config?current=1&snapshot=before');
    const text = "cannot use 'snapshot' parameter with 'current'";
    expect(res.body?.errors).toEqual({ snapshot: text, current: text });
  });

  it('400: a body parameter conflicting with the URI', async () => {
    const res = await api(sim, 'PUT', '/nodes/pve-01/qemu/100/config', { form: { vmid: '101', cores: '2' } });
    expect(res.body?.errors).toEqual({ vmid: 'duplicate parameter (already defined in URI) with conflicting values!' });
  });

  it('500: plain die text with trailing newline; reason phrase is its first line', async () => {
    const res = await api(sim, 'GET', '/nodes/pve-02/qemu/100/config');
    expect(res.status).toBe(500);
    expect(res.reason).toBe("Configuration file 'nodes/pve-02/qemu-server/100.conf' does not exist");
    expect(res.text).toBe(
      JSON.stringify({ data: null, message: "Configuration file 'nodes/pve-02/qemu-server/100.conf' does not exist\n" }),
    );
    const ct = await api(sim, 'GET', '/nodes/pve-01/lxc/200/config');
    expect(ct.body?.message).toBe("Configuration file 'nodes/pve-01/lxc/200.conf' does not exist\n");
  });

  it('500: an unknown node fails the proxy lookup', async () => {
    const res = await api(sim, 'GET', '/nodes/pve-77/qemu/100/config');
    expect(res.status).toBe(500);
    expect(res.body?.message).toBe("hostname lookup 'pve-77' failed - failed to get address info for: pve-77: Name or service not known\n");
  });

  it('500: no options specified', async () => {
    const res = await api(sim, 'PUT', '/nodes/pve-01/qemu/100/config', { form: { digest: sim.sim.getGuest(100)!.digest } });
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ data: null, message: 'no options specified\n' });
  });

  it('501: unknown path or method, message without newline', async () => {
    const res = await api(sim, 'GET', '/foo');
    expect(res.status).toBe(501);
    expect(res.reason).toBe("Method 'GET /foo' not implemented");
    expect(res.body).toEqual({ data: null, message: "Method 'GET /foo' not implemented" });
    const del = await api(sim, 'DELETE', '/version');
    expect(del.body?.message).toBe("Method 'DELETE /version' not implemented");
  });

  it('501: DELETE or GET with a body', async () => {
    const res = await api(sim, 'DELETE', '/nodes/pve-01/qemu/100', {
      body: 'purge=1',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(501);
    expect(res.reason).toBe("Unexpected content for method 'DELETE'");
    expect(sim.sim.getGuest(100)).toBeDefined();
  });

  it('401: empty body, reason "No ticket" without credentials and "Authentication failed!" with a bad token', async () => {
    const none = await api(sim, 'GET', '/version', { token: null });
    expect(none.status).toBe(401);
    expect(none.reason).toBe('No ticket');
    expect(none.text).toBe('');
    const bad = await api(sim, 'GET', '/version', { token: 'root@pam!pve-gitops=wrong' });
    expect(bad.status).toBe(401);
    expect(bad.reason).toBe('Authentication failed!');
    expect(bad.text).toBe('');
    const unknown = await api(sim, 'GET', '/nodes', { token: 'nobody@pve!x=y' });
    expect(unknown.reason).toBe('Authentication failed!');
  });

  it('accepts a space instead of the first "=" in the token header', async () => {
    const res = await request(`${sim.url}/api2/json/version`, { headers: { authorization: `PVEAPIToken ${sim.token}` } });
    expect(res.statusCode).toBe(200);
    await res.body.text();
  });

  it('gzips bodies over 1 KiB only for clients that accept it', async () => {
    const plain = await api(sim, 'GET', '/cluster/resources');
    expect(plain.text.length).toBeGreaterThan(1024);
    expect(plain.headers['content-encoding']).toBeUndefined();
    const zipped = await request(`${sim.url}/api2/json/cluster/resources`, {
      headers: { authorization: `PVEAPIToken=${sim.token}`, 'accept-encoding': 'gzip' },
    });
    const compressed = Buffer.from(await zipped.body.arrayBuffer());
    expect(zipped.headers['content-encoding']).toBe('gzip');
    const ids = (text: string): string[] => (JSON.parse(text) as { data: { id: string }[] }).data.map((e) => e.id);
    expect(ids(gunzipSync(compressed).toString('utf8'))).toEqual(ids(plain.text));
    const small = await api(sim, 'GET', '/version', { headers: { 'accept-encoding': 'gzip' } });
    expect(small.headers['content-encoding']).toBeUndefined();
  });
});
