import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestCerts } from '../../test/client/helpers/certs.js';
import { ClusterConfigError, clusterAccess, loadClusterConnections, repositoryAllowed } from './cluster-connections.js';

let dir: string;
let caPem: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pve-gitops-connections-'));
  caPem = makeTestCerts().caPem;
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const TOKEN = 'gitops@pve!apply=00000000-0000-0000-0000-000000000000';

function fromEnv(env: NodeJS.ProcessEnv) {
  return loadClusterConnections({ names: ['lab'], env, cwd: dir });
}

async function fromFile(yaml: string) {
  const file = join(dir, `clusters-${Math.random().toString(36).slice(2)}.yaml`);
  await writeFile(file, yaml);
  return loadClusterConnections({ names: ['lab'], env: {}, cwd: dir, file });
}

describe('plain http://', () => {
  it('is refused from the environment unless allowed explicitly', async () => {
    const env = { PVE_CLUSTER_LAB_URL: 'http://pve.example.net:8006', PVE_CLUSTER_LAB_TOKEN: TOKEN };
    await expect(fromEnv(env)).rejects.toThrow(ClusterConfigError);
    await expect(fromEnv(env)).rejects.toThrow(
      'PVE_CLUSTER_LAB_URL: http://pve.example.net:8006 is plain http://, which sends the API token unencrypted; use https://, or allow it explicitly with PVE_CLUSTER_LAB_ALLOW_HTTP=1',
    );
    const allowed = await fromEnv({ ...env, PVE_CLUSTER_LAB_ALLOW_HTTP: '1' });
    expect(clusterAccess(allowed.lab!)).toEqual({ allowHostAccess: [], insecure: 'http' });
  });

  it('is refused from a connections file unless allowed explicitly', async () => {
    await expect(fromFile(`clusters:\n  lab:\n    url: http://pve:8006\n    token: "${TOKEN}"\n`)).rejects.toThrow(
      /plain http:\/\/.*allowHttp: true/,
    );
    const allowed = await fromFile(`clusters:\n  lab:\n    url: http://pve:8006\n    allowHttp: true\n    token: "${TOKEN}"\n`);
    expect(clusterAccess(allowed.lab!).insecure).toBe('http');
  });
});

describe('insecure TLS', () => {
  it('is recorded as unverified unless a fingerprint or CA still verifies', async () => {
    const base = { PVE_CLUSTER_LAB_URL: 'https://pve:8006', PVE_CLUSTER_LAB_TOKEN: TOKEN, PVE_CLUSTER_LAB_INSECURE: '1' };
    expect(clusterAccess((await fromEnv(base)).lab!).insecure).toBe('tls-unverified');
    const pinned = await fromEnv({ ...base, PVE_CLUSTER_LAB_FINGERPRINT: 'AB'.repeat(32) });
    expect(clusterAccess(pinned.lab!).insecure).toBeUndefined();
    expect(clusterAccess((await fromEnv({ ...base, PVE_CLUSTER_LAB_INSECURE: '' })).lab!).insecure).toBeUndefined();
  });
});

describe('CA files', () => {
  it('must hold a certificate', async () => {
    await writeFile(join(dir, 'key.pem'), '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n');
    const env = { PVE_CLUSTER_LAB_URL: 'https://pve:8006', PVE_CLUSTER_LAB_TOKEN: TOKEN, PVE_CLUSTER_LAB_CA_FILE: 'key.pem' };
    await expect(fromEnv(env)).rejects.toThrow('PVE_CLUSTER_LAB_CA_FILE: CA file key.pem holds no certificate');
    await writeFile(join(dir, 'empty.pem'), '');
    await expect(fromEnv({ ...env, PVE_CLUSTER_LAB_CA_FILE: 'empty.pem' })).rejects.toThrow(/holds no certificate/);
  });

  it('must hold certificates that parse', async () => {
    await writeFile(join(dir, 'garbled.pem'), '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n');
    const env = { PVE_CLUSTER_LAB_URL: 'https://pve:8006', PVE_CLUSTER_LAB_TOKEN: TOKEN, PVE_CLUSTER_LAB_CA_FILE: 'garbled.pem' };
    await expect(fromEnv(env)).rejects.toThrow(/CA file garbled.pem: certificate 1 cannot be read/);
  });

  it('accepts a CA certificate', async () => {
    await writeFile(join(dir, 'ca.pem'), caPem);
    const env = { PVE_CLUSTER_LAB_URL: 'https://pve:8006', PVE_CLUSTER_LAB_TOKEN: TOKEN, PVE_CLUSTER_LAB_CA_FILE: 'ca.pem' };
    expect((await fromEnv(env)).lab?.ca).toBe(caPem);
  });
});

describe('host-access policy', () => {
  it('comes from the environment as a list of kinds', async () => {
    const env = {
      PVE_CLUSTER_LAB_URL: 'https://pve:8006',
      PVE_CLUSTER_LAB_TOKEN: TOKEN,
      PVE_CLUSTER_LAB_ALLOW_HOST_ACCESS: 'args, hostpci',
    };
    expect(clusterAccess((await fromEnv(env)).lab!).allowHostAccess).toEqual(['args', 'hostpci']);
    await expect(fromEnv({ ...env, PVE_CLUSTER_LAB_ALLOW_HOST_ACCESS: 'args,everything' })).rejects.toThrow(
      /PVE_CLUSTER_LAB_ALLOW_HOST_ACCESS: unknown host-access kind 'everything'/,
    );
  });

  it('comes from the connections file', async () => {
    const ok = await fromFile(
      `clusters:\n  lab:\n    url: https://pve:8006\n    token: "${TOKEN}"\n    allowHostAccess: [bind-mount, features]\n`,
    );
    expect(ok.lab?.allowHostAccess).toEqual(['bind-mount', 'features']);
    await expect(
      fromFile(`clusters:\n  lab:\n    url: https://pve:8006\n    token: "${TOKEN}"\n    allowHostAccess: [root]\n`),
    ).rejects.toThrow(/allowHostAccess.0: must be one of args, hookscript/);
  });
});

describe('which repositories may use a cluster', () => {
  const env = { PVE_CLUSTER_LAB_URL: 'https://pve.example.net:8006', PVE_CLUSTER_LAB_TOKEN: TOKEN };

  it('reads owner/name and owner/* entries from the environment and the file, lower-cased', async () => {
    expect((await fromEnv({ ...env, PVE_CLUSTER_LAB_REPOSITORIES: 'Acme/Estate, ops/*' })).lab?.repositories).toEqual([
      'acme/estate',
      'ops/*',
    ]);
    const file = await fromFile(`clusters:\n  lab:\n    url: https://pve:8006\n    token: "${TOKEN}"\n    repositories: [acme/estate]\n`);
    expect(file.lab?.repositories).toEqual(['acme/estate']);
    expect((await fromEnv(env)).lab?.repositories).toBeUndefined();
  });

  it.each([
    ['estate', "PVE_CLUSTER_LAB_REPOSITORIES: 'estate' is not a repository (owner/name, or owner/* for all of an owner's)"],
    ['*/*', "PVE_CLUSTER_LAB_REPOSITORIES: '*/*' is not a repository (owner/name, or owner/* for all of an owner's)"],
    [' , ', 'PVE_CLUSTER_LAB_REPOSITORIES: names no repository (leave it out to allow every installed repository)'],
  ])('refuses %j', async (value, message) => {
    await expect(fromEnv({ ...env, PVE_CLUSTER_LAB_REPOSITORIES: value })).rejects.toThrow(message);
  });

  it.each([
    [undefined, 'acme/anything', true],
    [['acme/estate'], 'ACME/Estate', true],
    [['acme/estate'], 'acme/other', false],
    [['acme/*'], 'acme/other', true],
    [['acme/*'], 'mallory/estate', false],
  ])('%j lets %s use it: %s', (repositories, repository, allowed) => {
    expect(repositoryAllowed(repositories, repository)).toBe(allowed);
  });
});
