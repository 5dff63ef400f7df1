/**
 * The App's Prometheus metrics (prom-client), one registry per process: webhook deliveries by event
 * and outcome, jobs by queue and state (asked of Redis at scrape time), job durations (plans,
 * applies, drift runs), Proxmox requests by cluster, method and status (observed in the Proxmox
 * client), applies by outcome, drifted guests per cluster (the last report of each repository, kept
 * in Redis so every process shows the same figure), and GitHub's rate-limit remaining (from
 * response headers). Labels hold names and codes only: never a URL, a token or a path.
 */
import { createServer, type Server } from 'node:http';
import type { Queue } from 'bullmq';
import type { ProbotOctokit } from 'probot';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { PveResponseEvent } from '../pve/transport.js';
import type { HttpRoute } from './http.js';

/** What became of a webhook delivery. */
type DeliveryOutcome = 'enqueued' | 'ignored' | 'rejected' | 'failed';

/** Apply outcomes per guest, as the apply check run reports them. */
type ApplyOutcome = 'applied' | 'unchanged' | 'conflict' | 'failed';

/** Job states counted at scrape time. */
const JOB_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed'] as const;

/**
 * Webhook events counted by name; anything else (or a header someone made up on an unsigned
 * request) is `other`, so the label cannot grow without bound.
 */
const KNOWN_EVENTS = new Set([
  'check_run',
  'check_suite',
  'installation',
  'installation_repositories',
  'installation_target',
  'issue_comment',
  'issues',
  'label',
  'meta',
  'ping',
  'pull_request',
  'pull_request_review',
  'pull_request_review_comment',
  'push',
  'repository',
  'github_app_authorization',
]);

/** The event label of a delivery's `X-GitHub-Event` header. */
export function eventLabel(header: string | string[] | undefined): string {
  const event = Array.isArray(header) ? header[0] : header;
  return event !== undefined && KNOWN_EVENTS.has(event) ? event : 'other';
}

/** The process's metrics and the hooks that feed them. */
export class AppMetrics {
  readonly registry = new Registry();
  private readonly deliveries: Counter<'event' | 'outcome'>;
  private readonly jobDuration: Histogram<'queue' | 'kind' | 'outcome'>;
  private readonly pveRequests: Counter<'cluster' | 'method' | 'status'>;
  private readonly applies: Counter<'outcome'>;
  private readonly rateLimit: Gauge<'installation' | 'resource'>;
  private readonly queues: Queue[] = [];
  private driftSource: (() => Promise<{ repository: string; cluster: string; guests: number }[]>) | undefined;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'pve_gitops_' });
    this.deliveries = new Counter({
      name: 'pve_gitops_webhook_deliveries_total',
      help: 'Webhook deliveries by event and outcome: enqueued (a job was added), ignored (nothing to do), rejected (4xx: bad signature or body), failed (5xx: GitHub redelivers)',
      labelNames: ['event', 'outcome'],
      registers,
    });
    const queues = this.queues;
    new Gauge({
      name: 'pve_gitops_jobs',
      help: 'Jobs by queue and state, as Redis holds them at scrape time',
      labelNames: ['queue', 'state'],
      registers,
      async collect() {
        this.reset();
        for (const queue of queues) {
          try {
            const counts = await queue.getJobCounts(...JOB_STATES);
            for (const state of JOB_STATES) this.set({ queue: queue.name, state }, counts[state] ?? 0);
          } catch {
            // Redis unreachable: no figure rather than a wrong one (readyz says why).
          }
        }
      },
    });
    this.jobDuration = new Histogram({
      name: 'pve_gitops_job_duration_seconds',
      help: 'Job attempt durations by queue, job kind (plan, command, rerun, drift, sync, …) and outcome (completed, failed)',
      labelNames: ['queue', 'kind', 'outcome'],
      buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900],
      registers,
    });
    this.pveRequests = new Counter({
      name: 'pve_gitops_proxmox_requests_total',
      help: 'Proxmox API requests (each attempt) by cluster, method and HTTP status; status "error" when no answer came',
      labelNames: ['cluster', 'method', 'status'],
      registers,
    });
    this.applies = new Counter({
      name: 'pve_gitops_applies_total',
      help: 'Guests applied, by outcome: applied, unchanged, conflict, failed',
      labelNames: ['outcome'],
      registers,
    });
    // Present from the start, so a dashboard shows 0 rather than no data before the first apply.
    for (const outcome of ['applied', 'unchanged', 'conflict', 'failed'] as const) this.applies.inc({ outcome }, 0);
    const drift = (): typeof this.driftSource => this.driftSource;
    new Gauge({
      name: 'pve_gitops_drifted_guests',
      help: 'Drifted guests per cluster in the last drift report of each repository (clusters that could not be read have no figure)',
      labelNames: ['repository', 'cluster'],
      registers,
      async collect() {
        this.reset();
        const source = drift();
        if (!source) return;
        try {
          for (const row of await source()) this.set({ repository: row.repository, cluster: row.cluster }, row.guests);
        } catch {
          // Redis unreachable: no figure.
        }
      },
    });
    this.rateLimit = new Gauge({
      name: 'pve_gitops_github_rate_limit_remaining',
      help: "GitHub API requests left in the current rate-limit window, per installation ('app' for the App's own token) and resource",
      labelNames: ['installation', 'resource'],
      registers,
    });
  }

  /** Counts one webhook delivery. */
  delivery(event: string, outcome: DeliveryOutcome): void {
    this.deliveries.inc({ event, outcome });
  }

  /** Observer for the Proxmox client (`onResponse`). */
  readonly pveResponse = (event: PveResponseEvent): void => {
    this.pveRequests.inc({ cluster: event.cluster, method: event.method, status: event.status === 0 ? 'error' : String(event.status) });
  };

  /**
   * A processor that records each attempt's duration by queue, job kind and outcome. Recorded when
   * the attempt settles, before BullMQ marks the job, so whoever sees the job finished sees it counted.
   */
  timed<J extends { name: string }, A extends unknown[], R>(
    queue: string,
    processor: (job: J, ...rest: A) => Promise<R>,
  ): (job: J, ...rest: A) => Promise<R> {
    // The rest (BullMQ's lock token) goes through: a processor may move its own job (to delayed).
    return async (job, ...rest) => {
      const started = performance.now();
      const seconds = (): number => (performance.now() - started) / 1000;
      try {
        const result = await processor(job, ...rest);
        this.jobDuration.observe({ queue, kind: job.name, outcome: 'completed' }, seconds());
        return result;
      } catch (error) {
        // A job that parks itself (moved to delayed: a guest waiting behind another apply) is
        // neither done nor failed; its attempt is not a duration worth a bucket.
        if ((error as Error | undefined)?.name !== 'DelayedError') {
          this.jobDuration.observe({ queue, kind: job.name, outcome: 'failed' }, seconds());
        }
        throw error;
      }
    };
  }

  /** Counts applied guests by outcome (for the apply worker). */
  apply(outcome: ApplyOutcome, guests = 1): void {
    this.applies.inc({ outcome }, guests);
  }

  /** Counts this queue's jobs at scrape time. */
  watchQueue(queue: Queue): void {
    if (!this.queues.some((q) => q.name === queue.name)) this.queues.push(queue);
  }

  /** Where drifted-guest figures come from (the drift store). */
  watchDrift(source: () => Promise<{ repository: string; cluster: string; guests: number }[]>): void {
    this.driftSource = source;
  }

  /** Reads GitHub's rate-limit headers from every response (and error response) of `octokit`. */
  instrumentOctokit(octokit: ProbotOctokit, installation: string): ProbotOctokit {
    const record = (headers: Record<string, unknown> | undefined): void => {
      const remaining = Number(headers?.['x-ratelimit-remaining']);
      if (!Number.isFinite(remaining)) return;
      const resource =
        String(headers?.['x-ratelimit-resource'] ?? 'core')
          .replace(/[^a-z_]/g, '')
          .slice(0, 40) || 'core';
      this.rateLimit.set({ installation, resource }, remaining);
    };
    octokit.hook.after('request', (response) => record(response.headers as Record<string, unknown>));
    octokit.hook.error('request', (error) => {
      record((error as { response?: { headers?: Record<string, unknown> } }).response?.headers);
      throw error;
    });
    return octokit;
  }

  /** `GET` handler serving the registry in Prometheus' text format. */
  route(): HttpRoute {
    return async (_req, res) => {
      const text = await this.registry.metrics();
      res.writeHead(200, { 'content-type': this.registry.contentType, 'cache-control': 'no-store' });
      res.end(text);
    };
  }
}

/** A server for the metrics alone (METRICS_PORT): scrapers reach it, the internet need not. */
export function createMetricsServer(path: string, metrics: AppMetrics): Server {
  const route = metrics.route();
  return createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && url === path) {
      Promise.resolve(route(req, res)).catch(() => {
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
    res.end('not found\n');
  });
}
