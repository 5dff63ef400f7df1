/**
 * The App's Redis-side state about drift reports, per repository (by id, stable across renames):
 * - when each finding was first seen (a hash of finding id → ISO time), kept across runs and
 *   cleared for a finding once it is gone, so the report says "since when" truthfully;
 * - the drift issue as last written (number, open, content hash), so an unchanged report costs no
 *   GitHub request;
 * - drifted guests per cluster of the last report, which every process's `/metrics` reads, so
 *   the figure does not depend on which worker ran the report.
 */
import type { Redis } from 'ioredis';
import type { KnownDriftIssue } from '../../github/drift-issue.js';

/** Drift state under the App's state prefix (see `statePrefix`). */
export class DriftStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private key(repoId: number, what: string): string {
    return `${this.prefix}:drift:${repoId}:${what}`;
  }

  /** Repositories with a last report, for the metric: repo id → `owner/name`. */
  private get reposKey(): string {
    return `${this.prefix}:drift:repos`;
  }

  /** The key of the lock that lets one drift run per repository proceed at a time. */
  lockKey(repoId: number): string {
    return `${this.prefix}:lock:drift:${repoId}`;
  }

  async firstSeen(repoId: number): Promise<Record<string, string>> {
    return this.redis.hgetall(this.key(repoId, 'seen'));
  }

  /** Replaces the first-seen times with `seen` (findings gone are dropped). */
  async setFirstSeen(repoId: number, seen: Record<string, string>): Promise<void> {
    const key = this.key(repoId, 'seen');
    const tx = this.redis.multi().del(key);
    if (Object.keys(seen).length > 0) tx.hset(key, seen);
    await tx.exec();
  }

  async issue(repoId: number): Promise<KnownDriftIssue | undefined> {
    const raw = await this.redis.hgetall(this.key(repoId, 'issue'));
    if (raw.number === undefined) return undefined;
    return { number: Number(raw.number), open: raw.open === '1', contentHash: raw.hash ?? '' };
  }

  async setIssue(repoId: number, issue: KnownDriftIssue): Promise<void> {
    await this.redis.hset(this.key(repoId, 'issue'), {
      number: String(issue.number),
      open: issue.open ? '1' : '0',
      hash: issue.contentHash,
    });
  }

  /** Records the last report's drifted guests per (readable) cluster. */
  async setDrifted(repoId: number, fullName: string, byCluster: Record<string, number>): Promise<void> {
    const key = this.key(repoId, 'drifted');
    const tx = this.redis.multi().del(key).hset(this.reposKey, String(repoId), fullName);
    if (Object.keys(byCluster).length > 0) tx.hset(key, Object.fromEntries(Object.entries(byCluster).map(([c, n]) => [c, String(n)])));
    await tx.exec();
  }

  /** Drifted guests per repository and cluster, as last reported. */
  async drifted(): Promise<{ repository: string; cluster: string; guests: number }[]> {
    const repos = await this.redis.hgetall(this.reposKey);
    const rows: { repository: string; cluster: string; guests: number }[] = [];
    for (const [id, repository] of Object.entries(repos)) {
      const counts = await this.redis.hgetall(this.key(Number(id), 'drifted'));
      for (const [cluster, n] of Object.entries(counts)) rows.push({ repository, cluster, guests: Number(n) });
    }
    return rows;
  }

  /** Forgets a repository the App no longer reports on (uninstalled): its figures leave the metric. */
  async forget(repoId: number): Promise<void> {
    await this.redis.multi().hdel(this.reposKey, String(repoId)).del(this.key(repoId, 'drifted')).exec();
  }
}
