/**
 * A fresh CA and a server certificate for 127.0.0.1/localhost (and any extra host names), the
 * stand-in for the `pve-root-ca.pem` / `pve-ssl.pem` pair every Proxmox node has, so clients can
 * be tested with a CA file or a pinned fingerprint. The X.509 work is @peculiar/x509's on
 * WebCrypto (ECDSA P-256, SHA-256); what is left here are the simulator's own choices.
 */
import { webcrypto, X509Certificate as NodeX509Certificate } from 'node:crypto';
// tsyringe, under @peculiar/x509, needs the Reflect metadata API loaded first.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

/** PEM material of a generated CA and server certificate. */
interface GeneratedTls {
  caPem: string;
  certPem: string;
  keyPem: string;
  /** SHA-256 of the server certificate, `AB:CD:…`. */
  fingerprint: string;
}

/** The WebCrypto type @peculiar/x509 declares (the DOM's), which Node's implementation is. */
type X509Crypto = NonNullable<Parameters<typeof x509.X509CertificateGenerator.create>[1]>;
type KeyPair = x509.X509CertificateCreateSelfSignedParams['keys'];
const crypto = webcrypto as unknown as X509Crypto;
const EC = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING = { name: 'ECDSA', hash: 'SHA-256' } as const;
const ORGANIZATION = 'PVE Cloud Infrastructure Trust Authority';
const DAY = 86_400_000;

/** Proxmox's CA and node certificates name this organisation; the simulator marks its own CA. */
const CA_NAME = `CN=Proxmox Virtual Environment (simulator), O=${ORGANIZATION}`;

/** A random positive serial (16 bytes, first byte 0x40–0x7f: minimal DER, never negative). */
function serialNumber(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] = ((bytes[0] as number) & 0x7f) | 0x40;
  return Buffer.from(bytes).toString('hex');
}

function pemKey(pkcs8: ArrayBuffer): string {
  const lines =
    Buffer.from(pkcs8)
      .toString('base64')
      .match(/.{1,64}/g) ?? [];
  return `-----BEGIN PRIVATE KEY-----\n${lines.join('\n')}\n-----END PRIVATE KEY-----\n`;
}

/**
 * Generates a CA and a server certificate valid for `localhost`, `127.0.0.1`, `::1` and the
 * given extra host names or IPv4 addresses; valid from an hour ago for two years.
 */
export async function generateTls(hostNames: string[] = []): Promise<GeneratedTls> {
  const caKeys = (await crypto.subtle.generateKey(EC, true, ['sign', 'verify'])) as KeyPair;
  const serverKeys = (await crypto.subtle.generateKey(EC, true, ['sign', 'verify'])) as KeyPair;
  const notBefore = new Date(Date.now() - 3_600_000);
  const notAfter = new Date(Date.now() + 2 * 365 * DAY);

  const ca = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: serialNumber(),
      name: CA_NAME,
      notBefore,
      notAfter,
      keys: caKeys,
      signingAlgorithm: SIGNING,
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
          true,
        ),
        await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey, false, crypto),
      ],
    },
    crypto,
  );

  const dns = ['localhost', ...hostNames.filter((h) => !/^[\d.]+$/.test(h) && !h.includes(':'))];
  const ips = ['127.0.0.1', ...hostNames.filter((h) => /^\d+\.\d+\.\d+\.\d+$/.test(h) && h !== '127.0.0.1'), '::1'];
  const server = await x509.X509CertificateGenerator.create(
    {
      serialNumber: serialNumber(),
      subject: `CN=localhost, O=${ORGANIZATION}`,
      issuer: ca.subject,
      notBefore,
      notAfter,
      publicKey: serverKeys.publicKey,
      signingKey: caKeys.privateKey,
      signingAlgorithm: SIGNING,
      extensions: [
        new x509.BasicConstraintsExtension(false),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([
          ...dns.map((value) => ({ type: 'dns' as const, value })),
          ...ips.map((value) => ({ type: 'ip' as const, value })),
        ]),
        await x509.SubjectKeyIdentifierExtension.create(serverKeys.publicKey, false, crypto),
        await x509.AuthorityKeyIdentifierExtension.create(caKeys.publicKey, false, crypto),
      ],
    },
    crypto,
  );

  const certPem = server.toString('pem');
  return {
    caPem: `${ca.toString('pem')}\n`,
    certPem: `${certPem}\n`,
    keyPem: pemKey(await crypto.subtle.exportKey('pkcs8', serverKeys.privateKey)),
    fingerprint: new NodeX509Certificate(certPem).fingerprint256,
  };
}
