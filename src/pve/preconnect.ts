/**
 * Connections opened ahead of the requests that will need them. A drift report sends the listing
 * alone, then reads every guest at the cluster's concurrency: undici opens the other connections
 * only when those reads are queued, so the first round waits for their TCP and TLS handshakes
 * after the listing's answer. Opened while the listing is in flight, they are ready when it ends.
 *
 * Safe by construction: the extra connections are made only after the first one succeeded, with
 * undici's own connect options for it and through the same connector (the same TLS verification
 * or pin, before any request byte); a connection that failed hands its error to the request that
 * takes it, as undici connecting at that moment would have; one the server closed meanwhile is
 * replaced by a fresh connect; and closing drops the ones never used.
 */
import type { Socket } from 'node:net';
import type { buildConnector } from 'undici';

type Connector = buildConnector.connector;

/** A connection opened ahead: its socket, or why it could not be made. */
type Opened = { socket: Socket; error?: undefined } | { socket?: undefined; error: Error };

/** A connector that opens connections ahead, and drops the unused ones on {@link close}. */
export interface PreconnectingConnector {
  connect: Connector;
  /** Destroys the connections opened ahead and never used (and those still opening). Idempotent. */
  close(): void;
}

const ignore = (): void => {};

/**
 * Wraps `connector`: when its first connection has been made, `extra` more are opened with the
 * same options, and later connects take them (oldest first) before connecting afresh.
 */
export function preconnecting(connector: Connector, extra: number): PreconnectingConnector {
  let started = false;
  let closed = false;
  /** Connections opening or open and not handed out yet, oldest first; `claim.taken` once a connect waits for one. */
  const ahead: { opened: Promise<Opened>; claim: { taken: boolean } }[] = [];
  const parked = new Set<Socket>();

  const open = (options: buildConnector.Options): void => {
    const claim = { taken: false };
    const opened = new Promise<Opened>((resolve) => {
      connector(options, (error, socket) => {
        if (error !== null || socket === null) {
          resolve({ error: error ?? new Error('connection failed') });
          return;
        }
        // Nobody will take it once the client is closed; one already taken is still awaited.
        if (closed && !claim.taken) {
          socket.destroy();
          resolve({ error: new Error('the client is closed') });
          return;
        }
        // Parked: an error or a close by the server only makes it unusable (see `connect`).
        socket.on('error', ignore);
        parked.add(socket);
        resolve({ socket });
      });
    });
    ahead.push({ opened, claim });
  };

  const openAhead = (options: buildConnector.Options): void => {
    if (started || closed) return;
    started = true;
    for (let i = 0; i < extra; i++) open(options);
  };

  const connect: Connector = (options, callback) => {
    const next = ahead.shift();
    if (next === undefined) {
      connector(options, (...answer) => {
        if (answer[0] === null) openAhead(options);
        callback(...answer);
      });
      return;
    }
    next.claim.taken = true;
    void next.opened.then((opened) => {
      if (opened.socket === undefined) {
        callback(opened.error, null);
        return;
      }
      const socket = opened.socket;
      parked.delete(socket);
      socket.off('error', ignore);
      if (!socket.destroyed && socket.readyState === 'open') callback(null, socket);
      else connector(options, callback);
    });
  };

  return {
    connect,
    close() {
      closed = true;
      ahead.length = 0;
      for (const socket of parked) socket.destroy();
      parked.clear();
    },
  };
}
