/**
 * When a request to Proxmox has left the process: undici publishes each request's headers as it
 * writes them to the socket (the `undici:client:sendHeaders` diagnostics channel), after the
 * connection and its TLS handshake, which need turns of the event loop. A caller about to keep the
 * event loop busy for a while (`plan --base` parsing its base tree) waits for this first, so the
 * request travels and Proxmox answers it meanwhile instead of after.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';

/** The part of undici's channel message read here. */
interface SendHeadersMessage {
  request: { origin?: unknown; path?: unknown };
}

/** The path prefix of every API request (`transport.ts` sends `/api2/json${path}`). */
const API_PREFIX = '/api2/json';

/**
 * Resolves once a request to `origin` (`https://host:8006`) whose API path starts with `path` has
 * been written to a socket; `stop` stops watching (it never resolves then). Watch before sending.
 */
export function whenRequestSent(origin: string, path: string): { sent: Promise<void>; stop(): void } {
  const wanted = `${API_PREFIX}${path}`;
  let onSent: (message: unknown) => void = () => undefined;
  const sent = new Promise<void>((resolve) => {
    onSent = (message) => {
      const { request } = message as SendHeadersMessage;
      if (String(request.origin) !== origin || typeof request.path !== 'string' || !request.path.startsWith(wanted)) return;
      stop();
      resolve();
    };
  });
  const stop = (): void => {
    unsubscribe('undici:client:sendHeaders', onSent);
  };
  subscribe('undici:client:sendHeaders', onSent);
  return { sent, stop };
}
