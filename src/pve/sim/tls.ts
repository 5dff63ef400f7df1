/**
 * A fresh CA and a server certificate for 127.0.0.1/localhost, made with node:crypto alone: a
 * minimal DER encoder builds the X.509 v3 structures and ECDSA P-256 signs them. This stands in
 * for the self-signed `pve-root-ca.pem` / `pve-ssl.pem` pair every Proxmox node has, so clients
 * can be tested with a CA file or a pinned fingerprint.
 */
import { createHash, generateKeyPairSync, randomBytes, sign, X509Certificate, type KeyObject } from 'node:crypto';

/** PEM material of a generated CA and server certificate. */
export interface GeneratedTls {
  caPem: string;
  certPem: string;
  keyPem: string;
  /** SHA-256 of the server certificate, `AB:CD:…`. */
  fingerprint: string;
}

function encodeLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let n = length; n > 0; n >>= 8) bytes.unshift(n & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), encodeLength(body.length), body]);
}

const seq = (...items: Buffer[]): Buffer => tlv(0x30, ...items);
const set = (...items: Buffer[]): Buffer => tlv(0x31, ...items);
const octets = (data: Buffer): Buffer => tlv(0x04, data);
const utf8 = (text: string): Buffer => tlv(0x0c, Buffer.from(text, 'utf8'));
const bool = (value: boolean): Buffer => tlv(0x01, Buffer.from([value ? 0xff : 0x00]));
const bitString = (data: Buffer, unusedBits = 0): Buffer => tlv(0x03, Buffer.from([unusedBits]), data);

function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const bytes: number[] = [40 * (parts[0] as number) + (parts[1] as number)];
  for (const part of parts.slice(2)) {
    const chunk: number[] = [part & 0x7f];
    for (let n = part >> 7; n > 0; n >>= 7) chunk.unshift((n & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

function integer(data: Buffer): Buffer {
  // DER integers are signed: prefix a zero byte when the high bit is set.
  const body = (data[0] as number) & 0x80 ? Buffer.concat([Buffer.from([0]), data]) : data;
  return tlv(0x02, body);
}

function utcTime(date: Date): Buffer {
  const pad = (n: number): string => String(n).padStart(2, '0');
  const text =
    pad(date.getUTCFullYear() % 100) +
    pad(date.getUTCMonth() + 1) +
    pad(date.getUTCDate()) +
    pad(date.getUTCHours()) +
    pad(date.getUTCMinutes()) +
    pad(date.getUTCSeconds()) +
    'Z';
  return tlv(0x17, Buffer.from(text, 'ascii'));
}

function name(commonName: string, organization: string): Buffer {
  return seq(set(seq(oid('2.5.4.10'), utf8(organization))), set(seq(oid('2.5.4.3'), utf8(commonName))));
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical ? seq(oid(id), bool(true), octets(value)) : seq(oid(id), octets(value));
}

const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));

function keyIdentifier(publicKey: KeyObject): Buffer {
  return createHash('sha1')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest();
}

interface CertificateInput {
  subject: Buffer;
  issuer: Buffer;
  publicKey: KeyObject;
  signingKey: KeyObject;
  issuerKeyId: Buffer;
  extensions: Buffer[];
}

function certificate(input: CertificateInput): string {
  const now = Date.now();
  // A positive serial whose first byte is never 0: DER integers must be minimal, and a leading
  // zero byte before a byte < 0x80 is "illegal padding" to OpenSSL (one certificate in 128).
  const serial = randomBytes(16);
  serial[0] = ((serial[0] as number) & 0x7f) | 0x40;
  const tbs = seq(
    tlv(0xa0, integer(Buffer.from([2]))),
    integer(serial),
    ECDSA_SHA256,
    input.issuer,
    seq(utcTime(new Date(now - 3_600_000)), utcTime(new Date(now + 2 * 365 * 86_400_000))),
    input.subject,
    input.publicKey.export({ type: 'spki', format: 'der' }),
    tlv(
      0xa3,
      seq(
        ...input.extensions,
        extension('2.5.29.14', false, octets(keyIdentifier(input.publicKey))),
        extension('2.5.29.35', false, seq(tlv(0x80, input.issuerKeyId))),
      ),
    ),
  );
  const signature = sign('sha256', tbs, input.signingKey);
  const der = seq(tbs, ECDSA_SHA256, bitString(signature));
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}

/** Generates a CA and a server certificate valid for `localhost`, `127.0.0.1` and `::1`. */
export function generateTls(hostNames: string[] = []): GeneratedTls {
  const ca = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const server = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const caName = name('Proxmox Virtual Environment (simulator)', 'PVE Cloud Infrastructure Trust Authority');
  const caKeyId = keyIdentifier(ca.publicKey);
  const caPem = certificate({
    subject: caName,
    issuer: caName,
    publicKey: ca.publicKey,
    signingKey: ca.privateKey,
    issuerKeyId: caKeyId,
    extensions: [
      extension('2.5.29.19', true, seq(bool(true))),
      // keyCertSign + cRLSign + digitalSignature.
      extension('2.5.29.15', true, bitString(Buffer.from([0x86]), 1)),
    ],
  });
  const dnsNames = ['localhost', ...hostNames.filter((h) => !/^[\d.]+$/.test(h) && !h.includes(':'))];
  const ips = ['127.0.0.1', ...hostNames.filter((h) => /^\d+\.\d+\.\d+\.\d+$/.test(h) && h !== '127.0.0.1')];
  const altNames = [
    ...dnsNames.map((d) => tlv(0x82, Buffer.from(d, 'ascii'))),
    ...ips.map((ip) => tlv(0x87, Buffer.from(ip.split('.').map(Number)))),
    tlv(0x87, Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])),
  ];
  const certPem = certificate({
    subject: name('localhost', 'PVE Cloud Infrastructure Trust Authority'),
    issuer: caName,
    publicKey: server.publicKey,
    signingKey: ca.privateKey,
    issuerKeyId: caKeyId,
    extensions: [
      extension('2.5.29.19', false, seq()),
      extension('2.5.29.15', true, bitString(Buffer.from([0x80]), 7)),
      extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))),
      extension('2.5.29.17', false, seq(...altNames)),
    ],
  });
  return {
    caPem,
    certPem,
    keyPem: server.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    fingerprint: new X509Certificate(certPem).fingerprint256,
  };
}
