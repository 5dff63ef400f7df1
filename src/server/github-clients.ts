/**
 * The App's one Probot instance and the GitHub clients the workers get from it: one per
 * installation and one as the App itself, each reporting the rate limit it has left to the
 * metrics. What the clients are used for (comments, check runs, archives) is `src/github`'s.
 */
import type { Logger } from 'pino';
import { Probot, type ProbotOctokit } from 'probot';
import type { ServerConfig } from './config.js';
import type { AppMetrics } from './metrics.js';

/** The GitHub clients the workers use. */
export interface GitHubClients {
  /** A client authenticated as installation `installationId`. */
  github: (installationId: number) => Promise<ProbotOctokit>;
  /** A client authenticated as the App (made once, on first use). */
  appGithub: () => Promise<ProbotOctokit>;
}

/** The Probot instance of the process, logging to `logger`. */
export function createProbot(config: ServerConfig, logger: Logger): Probot {
  return new Probot({
    appId: config.appId,
    privateKey: config.privateKey,
    // A worker-only process receives no webhooks; Probot wants a secret all the same.
    secret: config.webhookSecret ?? 'worker-process-receives-no-webhooks',
    baseUrl: config.githubBaseUrl,
    log: logger,
  });
}

/** Clients of `probot` whose every response reports the rate limit to `metrics`. */
export function githubClients(probot: Probot, metrics: AppMetrics): GitHubClients {
  let appOctokit: Promise<ProbotOctokit> | undefined;
  return {
    github: async (installationId) => metrics.instrumentOctokit(await probot.auth(installationId), String(installationId)),
    appGithub: () => (appOctokit ??= probot.auth().then((octokit) => metrics.instrumentOctokit(octokit, 'app'))),
  };
}
