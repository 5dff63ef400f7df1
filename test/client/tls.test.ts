/**
 * TLS policy against a tiny HTTPS server with openssl-made certificates: CA trust, pinning (which
 * wins over CA validity and skips the hostname check), refusal before any request byte is sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PveClient, type PveClientOptions } from '../../src/pve/client.js';
import { PveTlsError } from '../../src/pve/errors.js';
import { normaliseFingerprint } from '../../src/pve/tls.js';
import { makeTestCerts, type TestCerts } from './helpers/certs.js';
import { sendJson, startTinyServer, type TinyServer } from './helpers/tiny-server.js';

const TOKEN = 'gitops@pve!ci=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0';

let certs: TestCerts;
let leafServer: TinyServer;
let otherServer: TinyServer;

beforeAll(async () => {
  certs = makeTestCerts();
  const handler = (_req: unknown, res: Parameters<typeof sendJson>[0]): void => sendJson(res, 200, { data: { version: '9.1.1' } });
  leafServer = await startTinyServer((_req, res) => handler(_req, res), certs.leaf);
  otherServer = await startTinyServer((_req, res) => handler(_req, res), certs.other);
});

afterAll(async () => {
  await leafServer.close();
  await otherServer.close();
});

async function versionVia(server: TinyServer, options: Partial<PveClientOptions>): Promise<unknown> {
  const client = new PveClient({ cluster: 'lab', url: server.url, token: TOKEN, retries: 0, ...options });
  try {
    return await client.version();
  } catch (err) {
    return err;
  } finally {
    await client.close();
  }
}

describe('TLS', () => {
  it('verifies against the given CA', async () => {
    const before = leafServer.requests.length;
    await expect(versionVia(leafServer, { ca: certs.caPem })).resolves.toMatchObject({ version: '9.1.1' });
    expect(leafServer.requests.length).toBe(before + 1);
    expect(leafServer.requests.at(-1)!.headers.authorization).toBe(`PVEAPIToken=${TOKEN}`);
  });

  it('checks the hostname when verifying against a CA', async () => {
    const misnamed = await startTinyServer((_req, res) => sendJson(res, 200, { data: { version: '9.1.1' } }), certs.misnamed);
    try {
      const err = await versionVia(misnamed, { ca: certs.caPem });
      expect(err).toBeInstanceOf(PveTlsError);
      expect((err as Error).message).toMatch(/ERR_TLS_CERT_ALTNAME_INVALID/);
      expect(misnamed.requests).toHaveLength(0);
      // The same certificate pinned is accepted: a pin names the certificate, not the host.
      await expect(versionVia(misnamed, { fingerprint: certs.misnamed.fingerprint })).resolves.toMatchObject({ version: '9.1.1' });
    } finally {
      await misnamed.close();
    }
  });

  it('refuses a certificate no trusted CA signed (no ca given: system CAs only)', async () => {
    const before = leafServer.requests.length;
    const err = await versionVia(leafServer, {});
    expect(err).toBeInstanceOf(PveTlsError);
    expect((err as Error).message).toMatch(/TLS verification of https:\/\/127\.0\.0\.1:\d+ failed/);
    expect(leafServer.requests.length).toBe(before);
  });

  it('accepts exactly the pinned certificate even though it is self-signed', async () => {
    await expect(versionVia(otherServer, { fingerprint: certs.other.fingerprint })).resolves.toMatchObject({ version: '9.1.1' });
  });

  it('accepts the pin as plain lower-case hex', async () => {
    const hex = certs.other.fingerprint.replace(/:/g, '').toLowerCase();
    await expect(versionVia(otherServer, { fingerprint: hex })).resolves.toMatchObject({ version: '9.1.1' });
  });

  it('refuses another certificate, naming expected and presented, before sending the token', async () => {
    const before = otherServer.requests.length;
    const connectionsBefore = otherServer.connections;
    const err = await versionVia(otherServer, { fingerprint: certs.leaf.fingerprint });
    expect(err).toBeInstanceOf(PveTlsError);
    expect(err).toMatchObject({ expected: certs.leaf.fingerprint, presented: certs.other.fingerprint });
    expect((err as Error).message).toContain(`expected ${certs.leaf.fingerprint}`);
    expect((err as Error).message).toContain(`presented ${certs.other.fingerprint}`);
    expect(otherServer.connections).toBeGreaterThan(connectionsBefore); // it did connect and handshake
    expect(otherServer.requests.length).toBe(before); // but no HTTP request (no Authorization) arrived
  });

  it('the pin wins over a CA that would accept the certificate', async () => {
    const before = leafServer.requests.length;
    const err = await versionVia(leafServer, { ca: certs.caPem, fingerprint: certs.other.fingerprint });
    expect(err).toBeInstanceOf(PveTlsError);
    expect(leafServer.requests.length).toBe(before);
  });

  it('insecure skips verification only when asked', async () => {
    await expect(versionVia(otherServer, { insecure: true })).resolves.toMatchObject({ version: '9.1.1' });
    await expect(versionVia(otherServer, { insecure: false })).resolves.toBeInstanceOf(PveTlsError);
  });
});

describe('normaliseFingerprint', () => {
  it.each([
    ['ab'.repeat(32), Array(32).fill('AB').join(':')],
    [Array(32).fill('0f').join(':'), Array(32).fill('0F').join(':')],
    [`sha256:${'01'.repeat(32)}`, Array(32).fill('01').join(':')],
  ])('%s', (input, expected) => {
    expect(normaliseFingerprint(input)).toBe(expected);
  });

  it('rejects what is not a SHA-256 digest', () => {
    expect(() => normaliseFingerprint('AB:CD')).toThrow(RangeError);
    expect(() => new PveClient({ cluster: 'x', url: 'https://127.0.0.1:1', token: TOKEN, fingerprint: 'zz' })).toThrow(RangeError);
  });

  it('refuses a pin on a plain http url', () => {
    expect(() => new PveClient({ cluster: 'x', url: 'http://127.0.0.1:1', token: TOKEN, fingerprint: 'ab'.repeat(32) })).toThrow(
      /plain http/,
    );
  });
});
