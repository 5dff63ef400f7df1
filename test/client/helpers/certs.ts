/**
 * Test certificates made with the openssl CLI: a CA with a leaf for 127.0.0.1/localhost, and an
 * unrelated self-signed certificate (what a man-in-the-middle or a wrong node would present).
 */
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCert {
  key: string;
  cert: string;
  /** SHA-256 fingerprint in Node's `AB:CD:…` form. */
  fingerprint: string;
}

export interface TestCerts {
  caPem: string;
  /** Signed by the CA, SAN IP:127.0.0.1 and DNS:localhost. */
  leaf: TestCert;
  /** Self-signed, unrelated to the CA. */
  other: TestCert;
  /** Signed by the CA but named only `pve.invalid`: valid chain, wrong host for 127.0.0.1. */
  misnamed: TestCert;
}

export function makeTestCerts(): TestCerts {
  const dir = mkdtempSync(join(tmpdir(), 'pve-client-certs-'));
  const ssl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  };
  try {
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    ssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '3650', '-subj', '/CN=pve-gitops test CA');
    ssl('req', ...ec, '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', '/CN=localhost');
    writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
    ssl(
      'x509',
      '-req',
      '-in',
      'leaf.csr',
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'leaf.pem',
      '-days',
      '3650',
      '-extfile',
      'san.ext',
    );
    ssl('req', ...ec, '-keyout', 'misnamed.key', '-out', 'misnamed.csr', '-subj', '/CN=pve.invalid');
    writeFileSync(join(dir, 'misnamed.ext'), 'subjectAltName=DNS:pve.invalid\n');
    ssl(
      'x509',
      '-req',
      '-in',
      'misnamed.csr',
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'misnamed.pem',
      '-days',
      '3650',
      '-extfile',
      'misnamed.ext',
    );
    ssl(
      'req',
      '-x509',
      ...ec,
      '-keyout',
      'other.key',
      '-out',
      'other.pem',
      '-days',
      '3650',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    );
    const read = (name: string): string => readFileSync(join(dir, name), 'utf8');
    const cert = (name: string): TestCert => {
      const pem = read(`${name}.pem`);
      return { key: read(`${name}.key`), cert: pem, fingerprint: new X509Certificate(pem).fingerprint256 };
    };
    return { caPem: read('ca.pem'), leaf: cert('leaf'), other: cert('other'), misnamed: cert('misnamed') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
