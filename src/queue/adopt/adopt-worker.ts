/**
 * The adopt queue's worker: `/pve adopt` on the drift report issue, from a writer. It reads the
 * default branch (one archive: its config and spec files), refuses unless the repository turned
 * the feature on (`adopt: on` in `.github/pve-gitops.yml`), reads every owned guest with READ-ONLY
 * clients as the drift report does, takes the findings asked for into the spec files
 * (`src/core/adopt`) and opens a pull request with them as one commit on a branch named after the
 * report. It never writes to Proxmox, nor to the default branch. Every outcome is answered on the
 * issue.
 */
import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import type { ProbotOctokit } from 'probot';
import { ClusterConfigError } from '../../connections/cluster-connections.js';
import { type ConnectOptions, clusterNames, connectReadable } from '../../connections/connect.js';
import { adoptDrift, AdoptionError, type Adoption, type ToImport } from '../../core/adopt/adopt-drift.js';
import { withImported } from '../../core/adopt/adopt-unowned.js';
import { type ImportRead, readForImport } from '../../core/import/read-estate.js';
import type { ClusterReader } from '../../core/ports.js';
import { renderAdoptionMarkdown, renderAdoptionText } from '../../core/adopt/render-adoption.js';
import { buildDriftReport } from '../../core/drift/drift-report.js';
import type { SpecSet } from '../../core/model.js';
import { DRIFT_MARKER_PREFIX } from '../../core/render/render-drift.js';
import { formatSpecError } from '../../core/spec/errors.js';
import { observeDrift } from '../../engine/run-plan.js';
import { openAdoptPullRequest } from '../../github/adopt-pull-request.js';
import { ArchiveError, readRepoArchive } from '../../github/read-archive.js';
import { adoptEnabled, RepoConfigError } from '../../github/repo-config.js';
import { baseSpecFiles, repoFilePath, specFileFilter } from '../../github/spec-repo.js';
import { loadSpecFiles } from '../../spec-files/load-spec-files.js';
import { type AdoptJobData, AdoptJobData as AdoptJobSchema } from '../schema.js';

/** What the adopt worker needs; constructed by the worker role (`src/server/worker-role.ts`). */
interface AdoptWorkerDeps {
  logger: Logger;
  /** The installation's Octokit (`probot.auth(installationId)`). */
  github: (installationId: number) => Promise<ProbotOctokit>;
  /** The server's cluster connections (never the repository's). */
  connections: Omit<ConnectOptions, 'warn' | 'logger'>;
  now?: () => Date;
}

/** What became of an adopt job. */
type AdoptOutcome = 'opened' | 'off' | 'not-the-report' | 'nothing' | 'refused';

/** The reply that tells a repository how to turn the feature on. */
const OFF_REPLY =
  '`/pve adopt` is off for this repository: it opens pull requests, so the App writes branches only where the repository asks. ' +
  'Add `adopt: on` to `.github/pve-gitops.yml` on the default branch (and grant the App `contents: write` and `pull_requests: write`) to turn it on.';

/** The branch of one `/pve adopt`: named after the report issue and the comment that asked. */
function branchName(data: AdoptJobData): string {
  return `pve-gitops/drift-report-${data.issue}-adopt-${data.commentId}`;
}

/** The pull request's title: what it takes, in a few words. */
function title(adoption: Adoption, data: AdoptJobData): string {
  const subjects = [...new Set([...adoption.adopted, ...(adoption.imported ?? [])].map((a) => a.subject))];
  const what = subjects.length === 1 ? subjects[0] : `${subjects.length} guests and objects`;
  return `Adopt drift from the drift report (#${data.issue}): ${what}`;
}

/** Plain-text lines inside a fenced block, for a reply: no markup from values reaches GitHub's renderer. */
function fenced(text: string): string {
  return `\`\`\`text\n${text.replace(/```/g, "'''").trimEnd()}\n\`\`\``;
}

async function defaultBranch(octokit: ProbotOctokit, data: AdoptJobData): Promise<{ ref: string; sha: string } | undefined> {
  const { data: repository } = await octokit.rest.repos.get({ owner: data.repo.owner, repo: data.repo.name });
  const { data: commits } = await octokit.rest.repos.listCommits({
    owner: data.repo.owner,
    repo: data.repo.name,
    sha: repository.default_branch,
    per_page: 1,
  });
  const sha = commits[0]?.sha;
  return sha === undefined ? undefined : { ref: repository.default_branch, sha };
}

/** True when the issue is the App's drift report (its marker, written by a bot). */
async function isDriftReport(octokit: ProbotOctokit, data: AdoptJobData): Promise<boolean> {
  const { data: issue } = await octokit.rest.issues.get({ owner: data.repo.owner, repo: data.repo.name, issue_number: data.issue });
  return issue.user?.type === 'Bot' && (issue.body ?? '').startsWith(DRIFT_MARKER_PREFIX) && !issue.pull_request;
}

/** The adopt run itself; returns what it did, after answering on the issue. */
async function runAdopt(deps: AdoptWorkerDeps, data: AdoptJobData, log: Logger): Promise<AdoptOutcome> {
  const octokit = await deps.github(data.installationId);
  const reply = async (body: string): Promise<void> => {
    await octokit.rest.issues.createComment({ owner: data.repo.owner, repo: data.repo.name, issue_number: data.issue, body });
  };
  const refuse = async (why: string): Promise<AdoptOutcome> => {
    log.info({ why }, 'adopt refused');
    await reply(`@${data.author} nothing was adopted: ${why}`);
    return 'refused';
  };

  const base = await defaultBranch(octokit, data);
  if (!base) return refuse('the repository has no commit on its default branch.');
  let repoFiles: ReturnType<typeof baseSpecFiles>;
  try {
    const contents = await readRepoArchive(octokit, data.repo, base.sha, specFileFilter(undefined));
    repoFiles = baseSpecFiles(contents);
  } catch (error) {
    if (error instanceof RepoConfigError || error instanceof ArchiveError) return refuse(error.message);
    throw error;
  }
  if (!adoptEnabled(repoFiles.config)) {
    log.info('adopt is off for this repository');
    await reply(`@${data.author} ${OFF_REPLY}`);
    return 'off';
  }
  if (!(await isDriftReport(octokit, data))) {
    await reply(`@${data.author} \`/pve adopt\` works on the drift report issue only: ask there.`);
    return 'not-the-report';
  }
  const loaded = await loadSpecFiles(repoFiles.files);
  if (loaded.errors.length > 0) {
    const lines = loaded.errors.slice(0, 20).map((e) => formatSpecError(e));
    return refuse(`the default branch's specs are invalid:\n\n${fenced(lines.join('\n'))}`);
  }
  const specs = loaded.specs;
  const options: ConnectOptions = {
    ...deps.connections,
    warn: (message) => log.warn({ warning: message }, 'cluster connection'),
    logger: log,
    repository: `${data.repo.owner}/${data.repo.name}`,
  };
  let connected: Awaited<ReturnType<typeof connectReadable>>;
  try {
    connected = await connectReadable(clusterNames(specs), options);
  } catch (error) {
    if (error instanceof ClusterConfigError) return refuse(`the server's cluster connections are misconfigured: ${error.message}`);
    throw error;
  }
  const { open, refused } = connected;
  let report: ReturnType<typeof buildDriftReport>;
  const [guest, ...keys] = data.args;
  let adoption: Adoption;
  try {
    const { plan, observed } = await observeDrift({
      head: specs,
      readers: open.clusters,
      access: open.access,
      ref: base.sha,
      unavailable: refused,
    });
    report = buildDriftReport({
      plan,
      observed,
      specs,
      allow: repoFiles.config?.drift?.allow ?? [],
      now: deps.now?.() ?? new Date(),
      ref: base.sha,
    });
    const select = { guests: guest ? [guest] : [], keys };
    try {
      adoption = adoptDrift({ report, specs, files: repoFiles.files, items: plan.objects, select, importUnowned: true });
      adoption = withImported(adoption, await readUnowned(open.clusters, adoption.toImport ?? [], specs), specs, repoFiles.files);
    } catch (error) {
      if (!(error instanceof AdoptionError)) throw error;
      return refuse(`${error.message}${error.problems.length > 0 ? `\n\n${fenced(error.problems.join('\n'))}` : ''}`);
    }
  } finally {
    await open.close();
  }
  const shown: Adoption = {
    ...adoption,
    adopted: adoption.adopted.map((a) => ({ ...a, file: repoFilePath(repoFiles.specRoot, a.file) })),
    ...(adoption.imported ? { imported: adoption.imported.map((g) => ({ ...g, file: repoFilePath(repoFiles.specRoot, g.file) })) } : {}),
  };
  const unread = report.clusters.filter((c) => c.unreadable !== undefined).map((c) => `\`${c.name}\``);
  const unreadNote = unread.length > 0 ? `\n\nNot read (nothing of them is taken): ${unread.join(', ')}.` : '';
  if (adoption.files.length === 0) {
    await reply(
      `@${data.author} nothing to adopt against the default branch at \`${base.sha.slice(0, 7)}\`:\n\n${fenced(renderAdoptionText(shown, true))}${unreadNote}`,
    );
    return 'nothing';
  }
  const body = renderAdoptionMarkdown(shown, { ref: base.sha, checkedAt: report.checkedAt, issue: data.issue });
  const opened = await openAdoptPullRequest(octokit, {
    owner: data.repo.owner,
    repo: data.repo.name,
    base,
    branch: branchName(data),
    files: adoption.files.map((f) => ({ path: repoFilePath(repoFiles.specRoot, f.path), text: f.text })),
    title: title(adoption, data),
    commitMessage: `Adopt drift from the drift report #${data.issue}\n\n${renderAdoptionText(shown, false)}`,
    body: `${body}${unreadNote}`,
  });
  log.info(
    { pr: opened.number, commit: opened.commit, values: adoption.adopted.length, files: adoption.files.length },
    'adopt pull request opened',
  );
  const count = adoption.adopted.length;
  const imported = adoption.imported?.length ?? 0;
  const edited = adoption.files.length - imported;
  const parts = [
    ...(count > 0 || imported === 0
      ? [`takes ${count} live value${count === 1 ? '' : 's'} into ${edited} spec file${edited === 1 ? '' : 's'}`]
      : []),
    ...(imported > 0 ? [`imports ${imported} unowned guest${imported === 1 ? '' : 's'} into new spec files`] : []),
  ];
  await reply(
    `@${data.author} opened #${opened.number}: it ${parts.join(' and ')}` +
      `${adoption.notAdopted.length > 0 ? ` (${adoption.notAdopted.length} left as they are: the pull request says why)` : ''}.${unreadNote}`,
  );
  return 'opened';
}

/**
 * The unowned guests asked for, read again as `pve-gitops import` reads them (the guest, its
 * pool, its HA resource, its firewall), one listing per cluster that has any.
 */
async function readUnowned(readers: Record<string, ClusterReader>, asked: readonly ToImport[], specs: SpecSet): Promise<ImportRead[]> {
  const clusters = [...new Set(asked.map((g) => g.cluster))];
  return Promise.all(
    clusters.flatMap((cluster) => {
      const reader = readers[cluster];
      if (!reader) return [];
      const only = asked.filter((g) => g.cluster === cluster).map((g) => g.vmid);
      return [readForImport(reader, { only }, specs, { pools: false, backupJobs: false })];
    }),
  );
}

/** The processor BullMQ calls for each adopt-queue job. */
export function createAdoptProcessor(deps: AdoptWorkerDeps): (job: Job) => Promise<AdoptOutcome> {
  return async (job) => {
    const data = AdoptJobSchema.parse(job.data);
    const log = deps.logger.child({
      job: job.id,
      kind: 'adopt',
      repo: `${data.repo.owner}/${data.repo.name}`,
      issue: data.issue,
      delivery: data.deliveryId,
    });
    return runAdopt(deps, data, log);
  };
}
