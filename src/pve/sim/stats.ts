/**
 * Request and write counters. "Writes in flight" per guest count a write from the moment the
 * request arrives until its task (if any) ends, so a test can prove that one guest never had
 * two writers at once (`maxConcurrentWrites`).
 */

/** The JSON `GET /_sim/stats` returns. */
export interface SimStats {
  requests: { total: number; byRoute: Record<string, number>; byMethod: Record<string, number> };
  writes: { total: number };
  guests: Record<string, { writes: number; maxConcurrentWrites: number }>;
}

interface GuestCounters {
  writes: number;
  inFlight: number;
  maxConcurrentWrites: number;
}

/** One API request as `GET /_sim/requests` lists it. */
interface SimRequestRecord {
  method: string;
  /** Path below `/api2/json`, as sent. */
  path: string;
  /** Route template, or `METHOD path` when no route matched. */
  route: string;
  /** Parameters from the query string and body (passwords shown as `<hidden>`). */
  params: Record<string, unknown>;
  status: number;
}

const JOURNAL_SIZE = 1000;
const HIDDEN_PARAMS = new Set(['password', 'cipassword']);

/** Mutable counters behind {@link SimStats}. */
export class StatsCollector {
  private journal: SimRequestRecord[] = [];
  private total = 0;
  private byRoute = new Map<string, number>();
  private byMethod = new Map<string, number>();
  private writes = 0;
  private guests = new Map<number, GuestCounters>();

  /** Counts one API request under its route template (`GET /nodes/{node}/qemu/{vmid}/pending`). */
  request(method: string, route: string): void {
    this.total++;
    this.byRoute.set(route, (this.byRoute.get(route) ?? 0) + 1);
    this.byMethod.set(method, (this.byMethod.get(method) ?? 0) + 1);
  }

  /**
   * Records an answered request in the journal (the last 1000 are kept). The entry's `params`
   * are kept as given unless a password must be hidden: the server hands over an object it no
   * longer changes. The journal is trimmed once it holds twice its size, not on every request.
   */
  record(entry: SimRequestRecord): void {
    let hidden = false;
    for (const k of Object.keys(entry.params)) if (HIDDEN_PARAMS.has(k)) hidden = true;
    if (hidden) {
      const params: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(entry.params)) params[k] = HIDDEN_PARAMS.has(k) ? '<hidden>' : v;
      entry = { ...entry, params };
    }
    this.journal.push(entry);
    if (this.journal.length >= 2 * JOURNAL_SIZE) this.journal.splice(0, this.journal.length - JOURNAL_SIZE);
  }

  /** The journal, oldest first. */
  requests(): SimRequestRecord[] {
    return this.journal.slice(-JOURNAL_SIZE);
  }

  /**
   * Starts a write on a guest; the returned function ends it (idempotent). Counters reset while
   * a write is in flight keep working: the end only decrements what the start incremented.
   */
  beginWrite(vmid: number): () => void {
    this.writes++;
    const counters = this.counters(vmid);
    counters.writes++;
    counters.inFlight++;
    counters.maxConcurrentWrites = Math.max(counters.maxConcurrentWrites, counters.inFlight);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      counters.inFlight--;
    };
  }

  /** A JSON-ready copy. */
  snapshot(): SimStats {
    const guests: SimStats['guests'] = {};
    for (const [vmid, c] of this.guests) guests[String(vmid)] = { writes: c.writes, maxConcurrentWrites: c.maxConcurrentWrites };
    return {
      requests: {
        total: this.total,
        byRoute: Object.fromEntries(this.byRoute),
        byMethod: Object.fromEntries(this.byMethod),
      },
      writes: { total: this.writes },
      guests,
    };
  }

  /** Zeroes every counter; writes still in flight keep counting toward the new maximum. */
  reset(): void {
    this.journal = [];
    this.total = 0;
    this.byRoute = new Map();
    this.byMethod = new Map();
    this.writes = 0;
    for (const [vmid, c] of this.guests) {
      if (c.inFlight === 0) this.guests.delete(vmid);
      else {
        c.writes = 0;
        c.maxConcurrentWrites = c.inFlight;
      }
    }
  }

  private counters(vmid: number): GuestCounters {
    let c = this.guests.get(vmid);
    if (!c) {
      c = { writes: 0, inFlight: 0, maxConcurrentWrites: 0 };
      this.guests.set(vmid, c);
    }
    return c;
  }
}
