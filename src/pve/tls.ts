/**
 * TLS policy of a cluster connection: verified against the system CAs by default, against a given
 * CA, or pinned to one certificate's SHA-256 fingerprint. Pinning is checked on the socket right
 * after the handshake and before undici gets the socket, so no request byte (and no token) ever
 * reaches a server that presented another certificate.
 */
import { createSecureContext, type SecureContext, type SecureContextOptions, type TLSSocket } from 'node:tls';
import type { buildConnector as BuildConnector } from 'undici';
import { buildConnector } from './undici-parts.js';

/** How to trust the server. At most one mode applies: fingerprint, then ca, then insecure. */
export interface TlsPolicy {
  ca?: string;
  fingerprint?: string;
  insecure?: boolean;
}

/** The presented certificate is not the pinned one. Converted to `PveTlsError` by the client. */
export class TlsPinMismatch extends Error {
  override name = 'TlsPinMismatch';
  readonly expected: string;
  readonly presented: string;

  constructor(host: string, expected: string, presented: string) {
    super(`TLS certificate of ${host} does not match the pinned fingerprint: expected ${expected}, presented ${presented}`);
    this.expected = expected;
    this.presented = presented;
  }
}

/** Error codes Node/OpenSSL use when a certificate does not verify; they never heal on retry. */
export const TLS_VERIFY_CODES: ReadonlySet<string> = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'HOSTNAME_MISMATCH',
]);

/**
 * Normalises a SHA-256 fingerprint to Node's `AB:CD:…` form. Accepts colons or not, any case.
 * Throws a RangeError for anything that is not 32 bytes of hex.
 */
export function normaliseFingerprint(fingerprint: string): string {
  const hex = fingerprint
    .replace(/^sha256[:=]?\s*/i, '')
    .replace(/[:\s]/g, '')
    .toUpperCase();
  if (!/^[0-9A-F]{64}$/.test(hex)) {
    throw new RangeError('TLS fingerprint must be a SHA-256 digest: 64 hex digits, optionally colon-separated');
  }
  return hex.match(/../g)!.join(':');
}

/** undici's connector type: `(options, callback) => socket`. */
type Connector = BuildConnector.connector;

/** Builds the undici connector for a policy; `timeoutMs` bounds TCP connect plus handshake. */
export function createConnector(policy: TlsPolicy, timeoutMs: number): Connector {
  if (policy.fingerprint !== undefined) return pinnedConnector(normaliseFingerprint(policy.fingerprint), timeoutMs);
  if (policy.ca !== undefined) return sharedContextConnector({ ca: policy.ca }, { timeout: timeoutMs });
  if (policy.insecure === true) return sharedContextConnector({}, { rejectUnauthorized: false, timeout: timeoutMs });
  return sharedContextConnector({}, { timeout: timeoutMs });
}

/**
 * A connector whose sockets share one TLS context, made on the first TLS connection. Given TLS
 * options instead, `tls.connect` makes a context per socket — with a CA, a certificate store of
 * its own built each time — for every connection of the pool. A context that cannot be made (a
 * CA that is not PEM) fails each connection as `tls.connect` would have.
 */
function sharedContextConnector(context: SecureContextOptions, options: BuildConnector.BuildOptions): Connector {
  let shared: SecureContext | undefined;
  let base: Connector | undefined;
  let plain: Connector | undefined;
  return (connect, callback) => {
    // Plain HTTP (a simulator on loopback, a rehearsal's copy) needs no TLS context: making one
    // loads the system's certificate store, a fixed cost of every client.
    if (connect.protocol === 'http:') {
      plain ??= buildConnector(options);
      return plain(connect, callback);
    }
    if (!base) {
      try {
        shared = createSecureContext(context);
      } catch (error) {
        callback(error instanceof Error ? error : new Error(String(error)), null);
        return undefined as unknown as ReturnType<Connector>;
      }
      base = buildConnector({ ...options, secureContext: shared });
    }
    return base(connect, callback);
  };
}

function pinnedConnector(expected: string, timeoutMs: number): Connector {
  // The chain and hostname are not verified here on purpose: a pin names exactly one
  // certificate, which is what Proxmox's self-signed node certificates need. Session reuse is
  // off so every connection presents its certificate again. One TLS context serves every socket.
  const base = sharedContextConnector({}, { rejectUnauthorized: false, maxCachedSessions: 0, timeout: timeoutMs });
  return (options, callback) =>
    base(options, (err, socket) => {
      if (err !== null || socket === null) {
        callback(err ?? new Error('connection failed'), null);
        return;
      }
      const presented = (socket as TLSSocket).getPeerCertificate?.()?.fingerprint256;
      if (presented !== expected) {
        socket.destroy();
        callback(new TlsPinMismatch(options.hostname, expected, presented || '(none)'), null);
        return;
      }
      callback(null, socket);
    });
}
