/**
 * `plan`'s loading of the head tree and, with `--base`, the base tree — and the listing of each
 * cluster a pull request changes, requested before either tree is parsed. Listing 10,000 guests
 * is the slowest read of such a plan (Proxmox gathers every guest of the cluster), and it waited
 * until both trees were loaded; requested first, it travels and is answered while they load.
 *
 * Nothing else changes: spec errors are reported exactly as before, and the connections opened
 * early stay silent (their notes are held) until the plan uses them; when nothing is planned they
 * are closed unseen. What the early request costs: when a changed file turns out to change nothing
 * of a cluster's plan (only a comment changed), or the specs are invalid, that cluster's listing
 * was read for nothing. The cluster's other connections are opened early too (their handshakes
 * made in the turns loading leaves), so the reads after loading wait for no handshake; unused
 * when the change reads no guest.
 */
import { within } from '../util/within.js';
import { Writable } from 'node:stream';
import type { ListedGuest } from '../core/model.js';
import { changedFileClusters } from '../core/spec/changed-file-clusters.js';
import { createSpecParseCache } from '../core/spec/parse-cache.js';
import { resolveSpecLimits } from '../core/spec/spec-limits.js';
import type { OpenClusters } from '../connections/open-clusters.js';
import { whenRequestSent } from '../pve/request-sent.js';
import type { PveClusterAdapter } from '../pve/cluster-adapter.js';
import { connect, loadSpecDir, readSpecDir, specLimits } from './shared.js';
import type { CommandIO } from './types.js';

type LoadedDir = Awaited<ReturnType<typeof loadSpecDir>>;

/**
 * Longest wait for an early listing request to leave (connection, TLS handshake) before the trees
 * are parsed anyway: on a reachable cluster it leaves in milliseconds.
 */
const MAX_SEND_WAIT_MS = 1000;

/** The loaded trees, and the connections the plan of them reads through. */
export interface PlanLoad {
  head: LoadedDir;
  base: LoadedDir | undefined;
  /** Opens the clusters `names` for the plan (read-only): those opened early with their listing under way. */
  connect(names: string[]): Promise<OpenClusters>;
  /** Closes what was opened early, unseen: the specs were invalid and nothing is planned. */
  discard(): Promise<void>;
}

/**
 * Loads `specs` and, when given, `baseDir` (sharing one parse cache: a pull request leaves most
 * files as they were). With a base, the files of both are read first, and the clusters named by
 * the files that differ are connected and listed before the trees are parsed.
 */
export async function loadForPlan(
  specs: string,
  baseDir: string | undefined,
  io: CommandIO,
  clustersFile: string | undefined,
): Promise<PlanLoad> {
  const opened = (names: string[]): Promise<OpenClusters> => connect(names, 'read', io, clustersFile);
  if (baseDir === undefined) {
    return { head: await loadSpecDir(specs, io), base: undefined, connect: opened, discard: async () => undefined };
  }
  const headFiles = await readSpecDir(specs, io);
  const baseFiles = await readSpecDir(baseDir, io);
  // Shared by both loads (a pull request leaves most files as they were) and the guess of the
  // changed clusters; once both are loaded its parses are garbage the plan's own work can reuse.
  const cache = createSpecParseCache();
  const changed =
    headFiles.refused || baseFiles.refused
      ? undefined
      : changedFileClusters(headFiles.files, baseFiles.files, resolveSpecLimits(specLimits(io)), undefined, cache);
  const early = changed && changed.length > 0 ? await requestListings(changed, io, clustersFile) : undefined;
  try {
    const head = await loadSpecDir(specs, io, cache, headFiles);
    const base = await loadSpecDir(baseDir, io, cache, baseFiles);
    return { head, base, connect: early ? (names) => early.adopt(names) : opened, discard: async () => early?.discard() };
  } catch (error) {
    await early?.discard();
    throw error;
  }
}

/** Connections opened before the specs were loaded, with each cluster's listing requested. */
interface EarlyListings {
  /**
   * The clusters `names` for the plan: the early ones (their notes shown now, the listing they
   * requested answering the plan's first), the others opened as `connect` opens them. When the
   * early connection failed, or opened a cluster the plan does not name, everything is opened
   * anew, so errors and notes are exactly those of opening `names`.
   */
  adopt(names: string[]): Promise<OpenClusters>;
  discard(): Promise<void>;
}

/**
 * Opens read-only connections to `names` with their notes held, requests each one's listing, and
 * resolves once every request has left (or failed): what follows keeps the event loop busy.
 */
async function requestListings(names: string[], io: CommandIO, clustersFile: string | undefined): Promise<EarlyListings> {
  const held = new HeldOutput();
  // With the connections the reads will use opened ahead too (`src/pve/preconnect.ts`): their
  // handshakes are made in the turns loading leaves, not after it, before the first read.
  const opened = await connect(names, 'read', { ...io, stderr: held }, clustersFile, { preconnect: true }).catch(() => undefined);
  const listings = new Map<string, Promise<ListedGuest[]>>();
  if (opened) {
    await Promise.all(
      names.map((name) => {
        const adapter = opened.clusters[name];
        const client = opened.clients[name];
        if (!adapter || !client) return undefined;
        const watch = whenRequestSent(client.url, '/cluster/resources');
        const listing = adapter.listGuests();
        // Its failure is the plan's to report, when the plan reads it; unread, it is dropped.
        listing.catch(() => undefined);
        listings.set(name, listing);
        // Bounded: a cluster that does not answer the connection (its retries take minutes) must
        // not hold up the loading of a change that may not even need it.
        return within(Promise.race([watch.sent, listing.then(noop, noop)]), MAX_SEND_WAIT_MS).finally(() => watch.stop());
      }),
    );
  }
  const discard = async (): Promise<void> => {
    await opened?.close();
  };
  return {
    discard,
    async adopt(wanted) {
      const wantedSet = new Set(wanted);
      if (!opened || names.some((name) => !wantedSet.has(name))) {
        await discard();
        return connect(wanted, 'read', io, clustersFile);
      }
      held.release(io.stderr);
      const rest = wanted.filter((name) => !names.includes(name));
      let others: OpenClusters | undefined;
      try {
        if (rest.length > 0) others = await connect(rest, 'read', io, clustersFile);
      } catch (error) {
        await discard();
        throw error;
      }
      const clusters: Record<string, PveClusterAdapter> = { ...others?.clusters };
      for (const [name, adapter] of Object.entries(opened.clusters)) {
        const listing = listings.get(name);
        clusters[name] = listing ? withFirstListing(adapter, listing) : adapter;
      }
      return {
        clusters,
        clients: { ...others?.clients, ...opened.clients },
        access: { ...others?.access, ...opened.access },
        repositories: { ...others?.repositories, ...opened.repositories },
        async close() {
          await Promise.all([opened.close(), others?.close()]);
        },
      };
    },
  };
}

function noop(): void {}

/** `adapter`, whose first `listGuests` answers with `listing` (already requested); later ones ask again. */
function withFirstListing(adapter: PveClusterAdapter, listing: Promise<ListedGuest[]>): PveClusterAdapter {
  let first: Promise<ListedGuest[]> | undefined = listing;
  return new Proxy(adapter, {
    get(target, property) {
      if (property === 'listGuests') {
        return () => {
          const answer = first ?? target.listGuests();
          first = undefined;
          return answer;
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      // The adapter's methods use its private fields: called on the adapter itself, not the proxy.
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** A stream that holds what is written until {@link release}, then passes it on as it comes. */
class HeldOutput extends Writable {
  #held: Buffer[] = [];
  #target: NodeJS.WritableStream | undefined;

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    if (this.#target) this.#target.write(chunk);
    else this.#held.push(chunk);
    done();
  }

  /** Writes what was held to `target`, and everything written from now on. */
  release(target: NodeJS.WritableStream): void {
    for (const chunk of this.#held) target.write(chunk);
    this.#held = [];
    this.#target = target;
  }
}
