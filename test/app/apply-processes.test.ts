/**
 * Merge-to-apply across processes: worker processes started for real (what the image runs),
 * killed with SIGKILL or paused with SIGSTOP mid-apply, and a Redis restarted mid-apply with its
 * append-only file. The web role runs in the test process; GitHub is the HTTP test double; the
 * cluster is the simulator, whose own counters say how many writes each guest got and whether
 * two were ever in flight at once.
 */
import { afterEach, describe, expect, inject, it } from 'vitest';
import { LOST_DEPLOYMENT } from '../../src/queue/apply/lost-runs.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { expectApplyCheckRun, expectApplyComment, finishedComment } from './apply-flow.js';
import { type ApplyWorld, ownedGuest, startApplyWorld } from './apply-world.js';
import { rawConfig, watchWrites } from './sim-writes.js';
import { clusterDoc, newSha, type RepoFiles, vmDoc } from './spec-repo.js';
import { type LogLine, startWorkerProcess, type WorkerProcess } from './worker-process.js';

let world: ApplyWorld | undefined;
let workers: WorkerProcess[] = [];
let redis: RedisServer | undefined;

afterEach(async (context) => {
  if (context.task.result?.state === 'fail' && world) {
    const warn = (line: LogLine): boolean => typeof line.level === 'number' && line.level >= 40;
    console.error(
      `app:\n${world.app
        .logs()
        .split('\n')
        .filter((line) => /"level":(40|50|60)/.test(line))
        .slice(-30)
        .join('\n')}`,
    );
    for (const [i, w] of workers.entries())
      console.error(
        `worker ${i}:\n${w.lines
          .filter(warn)
          .slice(-20)
          .map((l) => JSON.stringify(l))
          .join('\n')}`,
      );
  }
  await Promise.all(workers.map((w) => w.signal('SIGCONT').then(() => w.signal('SIGKILL'))));
  workers = [];
  await world?.close();
  world = undefined;
  await redis?.stop();
  redis = undefined;
});

/** The request log line of a write to a guest's config (what the adapter logs at debug). */
const configWrite =
  (vmid: number) =>
  (line: LogLine): boolean =>
    line.msg === 'proxmox request' && line.method === 'POST' && line.path === `/nodes/pve-01/qemu/${vmid}/config`;

/** Requests of `route` the simulator received. */
function routeCount(world: ApplyWorld, route: string): number {
  return world.clusters.sims.lab!.sim.stats().requests.byRoute[route] ?? 0;
}

describe('worker processes', () => {
  it('a worker killed with SIGKILL mid-apply, then replaced, converges with no duplicate guest and no repeated write', async () => {
    const X = 100501;
    const Z = 100502;
    // Tasks long enough that the kill lands while Proxmox is still carrying out both writes.
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), role: 'web', guests: [ownedGuest(X, 'app-01')], taskMs: 1500 });
    const { github, app, repo } = world;
    const sim = world.clusters.sims.lab!;
    const writes = watchWrites(sim);
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', X) };
    const head: RepoFiles = { ...base, 'vms/app.yaml': vmDoc('app-01', X, { memory: 4096 }), 'vms/new.yaml': vmDoc('new-01', Z) };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    await world.storePlan({ baseSha, base, pr: 71, headSha, head });
    const check = expectApplyCheckRun(github, repo, { mergeSha, id: 861 });
    const comment = expectApplyComment(github, repo, { pr: 71, id: 961 });

    const first = await startWorkerProcess(app.env);
    workers.push(first);
    await world.merge({ number: 71, headSha, baseSha, mergeSha });
    // Both writes are in Proxmox's hands (the update and the create), their tasks running.
    await writes.until((all) => all.some((w) => w.vmid === X) && all.some((w) => w.vmid === Z));
    await first.signal('SIGKILL');
    const replacement = await startWorkerProcess(app.env);
    workers.push(replacement);

    expect(await check.completed).toMatchObject({ conclusion: 'success', output: { title: '2 applied' } });
    const body = await comment.until(finishedComment);
    // The replacement found both changes done, and says whose they were.
    expect(body.match(/sent by an earlier run of this job, which stopped before it was confirmed/g)).toHaveLength(2);
    expect(routeCount(world, 'POST /nodes/{node}/qemu')).toBe(1);
    expect(sim.sim.stats().guests[String(X)]).toEqual({ writes: 1, maxConcurrentWrites: 1 });
    expect(sim.sim.stats().guests[String(Z)]).toEqual({ writes: 1, maxConcurrentWrites: 1 });
    expect(rawConfig(sim, X)).toContain('memory: 4096');
    expect(rawConfig(sim, Z)).toContain('name: new-01');
    // The job really ran again on the replacement, after the stall was found.
    await replacement.until((line) => line.msg === 'guest applied' && line.guest === `lab/${Z}`);
    github.verify();
  }, 60_000);

  it('two worker processes on one queue never apply one guest at once, even when one stops past its lock and comes back', async () => {
    const X = 100511;
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), role: 'web', guests: [ownedGuest(X, 'app-01')], taskMs: 2500 });
    const { github, app, repo } = world;
    const sim = world.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', X) };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    await world.storePlan({ baseSha, base, pr: 72, headSha, head: { ...base, 'vms/app.yaml': vmDoc('app-01', X, { memory: 4096 }) } });
    const check = expectApplyCheckRun(github, repo, { mergeSha, id: 871 });
    const comment = expectApplyComment(github, repo, { pr: 72, id: 971 });
    workers.push(await startWorkerProcess(app.env), await startWorkerProcess(app.env));
    await world.merge({ number: 72, headSha, baseSha, mergeSha });

    // Whichever worker sent the write is paused while Proxmox carries it out: it stops renewing
    // its locks, BullMQ's stall check hands the job to the other worker.
    const holder = await Promise.race(workers.map((w) => w.until(configWrite(X)).then(() => w)));
    const other = workers.find((w) => w !== holder)!;
    await holder.signal('SIGSTOP');
    expect(await check.completed).toMatchObject({ conclusion: 'success', output: { title: '1 applied' } });
    expect(await comment.until(finishedComment)).toContain('**1 applied**');
    await other.until((line) => line.msg === 'guest applied' && line.guest === `lab/${X}`);

    // Resumed, the paused worker finds its lock taken and sends nothing more.
    await holder.signal('SIGCONT');
    await holder.until((line) => JSON.stringify(line).includes('guest lock lost'));
    expect(sim.sim.stats().guests[String(X)]).toEqual({ writes: 1, maxConcurrentWrites: 1 });
    expect(workers.flatMap((w) => w.lines).filter(configWrite(X))).toHaveLength(1);
    expect(rawConfig(sim, X)).toContain('memory: 4096');
    github.verify();
  }, 60_000);
});

describe('Redis restarted mid-apply', () => {
  it('without the append-only file, the run that can no longer finish says so on its check run and comment', async () => {
    redis = await startRedisServer({ appendOnly: false });
    const guests = [100611, 100612, 100613];
    world = await startApplyWorld({
      redisUrl: redis.url,
      guests: guests.map((vmid, i) => ownedGuest(vmid, `app-0${i + 1}`)),
      taskMs: 600,
      env: { APPLY_CLUSTER_LIMIT: '1', APPLY_NODE_LIMIT: '1' },
    });
    const { github, repo } = world;
    const sim = world.clusters.sims.lab!;
    const writes = watchWrites(sim);
    const base: RepoFiles = {
      'cluster.yaml': clusterDoc(),
      ...Object.fromEntries(guests.map((v, i) => [`vms/${v}.yaml`, vmDoc(`app-0${i + 1}`, v)])),
    };
    const head: RepoFiles = {
      ...base,
      ...Object.fromEntries(guests.map((v, i) => [`vms/${v}.yaml`, vmDoc(`app-0${i + 1}`, v, { memory: 4096 })])),
    };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    await world.storePlan({ baseSha, base, pr: 82, headSha, head });
    const check = expectApplyCheckRun(github, repo, { mergeSha, id: 882 });
    const comment = expectApplyComment(github, repo, { pr: 82, id: 982 });
    await world.merge({ number: 82, headSha, baseSha, mergeSha });
    // The run was reported once (its check run and comment exist), and one guest is being written.
    await comment.until((body) => body.includes('in progress'));
    await writes.until((all) => all.length >= 1);
    // A crash of a Redis without persistence: it comes back empty.
    await redis.restart({ signal: 'SIGKILL' });

    const completed = await check.completed;
    expect(completed).toMatchObject({ conclusion: 'failure' });
    expect(completed.output?.title).toMatch(/^Apply lost: [1-3] of 3 guests unknown$/);
    expect(completed.output?.summary).toContain("the App's Redis lost its state while it ran");
    // Its deployment, created by the first report, is ended as an error that says why.
    expect(check.deployments.get('lab')?.last()).toMatchObject({ state: 'error', description: LOST_DEPLOYMENT });
    const body = await comment.until((text) => text.includes('This apply can no longer finish'));
    expect(finishedComment(body)).toBe(true);
    expect(body).toContain('Comment `/pve plan` to see the cluster as it is now, then `/pve apply` to carry out what is left.');
    expect(body).toMatch(/unknown: the App lost this apply while the guest was queued or being written/);
    github.verify();
  }, 60_000);

  it('loses no queued or running apply (append-only file on)', async () => {
    redis = await startRedisServer({ appendOnly: true });
    const guests = [100601, 100602, 100603];
    // One guest at a time, so some are queued and one is running when Redis goes down.
    world = await startApplyWorld({
      redisUrl: redis.url,
      guests: guests.map((vmid, i) => ownedGuest(vmid, `app-0${i + 1}`)),
      taskMs: 600,
      env: { APPLY_CLUSTER_LIMIT: '1', APPLY_NODE_LIMIT: '1' },
    });
    const { github, repo } = world;
    const sim = world.clusters.sims.lab!;
    const writes = watchWrites(sim);
    const base: RepoFiles = {
      'cluster.yaml': clusterDoc(),
      ...Object.fromEntries(guests.map((v, i) => [`vms/${v}.yaml`, vmDoc(`app-0${i + 1}`, v)])),
    };
    const head: RepoFiles = {
      ...base,
      ...Object.fromEntries(guests.map((v, i) => [`vms/${v}.yaml`, vmDoc(`app-0${i + 1}`, v, { memory: 4096 })])),
    };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    await world.storePlan({ baseSha, base, pr: 81, headSha, head });
    const check = expectApplyCheckRun(github, repo, { mergeSha, id: 881 });
    const comment = expectApplyComment(github, repo, { pr: 81, id: 981 });
    await world.merge({ number: 81, headSha, baseSha, mergeSha });

    await writes.until((all) => all.length === 1);
    // A crash, not a clean stop: only what the append-only file holds comes back.
    await redis.restart({ signal: 'SIGKILL' });

    expect(await check.completed).toMatchObject({ conclusion: 'success', output: { title: '3 applied' } });
    expect(await comment.until(finishedComment)).toContain('**3 applied**');
    for (const vmid of guests) {
      expect(rawConfig(sim, vmid)).toContain('memory: 4096');
      expect(sim.sim.stats().guests[String(vmid)]).toEqual({ writes: 1, maxConcurrentWrites: 1 });
    }
    github.verify();
  }, 60_000);
});
