/**
 * The writes a simulator in this process receives, as they happen: each guest write (config,
 * create, power, destroy…) from the moment its request arrives until its task ends — exactly what
 * `/_sim/stats` counts for "writes in flight" — with times, so a test can wait for a write and
 * tell which writes overlapped. Writes are counted by the simulator itself (its stats collector),
 * not by the code under test.
 */
import type { RunningSimulator } from '../../src/pve/sim/index.js';

/** One write: its guest, and when it started and ended (performance.now()). */
export interface SimWrite {
  vmid: number;
  start: number;
  end?: number;
}

/** Writes of one simulator, recorded from the call on. */
export interface WriteWatch {
  writes: SimWrite[];
  /** Resolves once `test` holds for the writes so far (checked at every write start and end). */
  until(test: (writes: readonly SimWrite[]) => boolean): Promise<void>;
  /** Writes of one guest. */
  of(vmid: number): SimWrite[];
}

/** Starts recording the simulator's writes. */
export function watchWrites(sim: RunningSimulator): WriteWatch {
  const collector = sim.sim.statsCollector;
  const writes: SimWrite[] = [];
  let waiters: { test: (writes: readonly SimWrite[]) => boolean; resolve: () => void }[] = [];
  const check = (): void => {
    waiters = waiters.filter((w) => {
      if (!w.test(writes)) return true;
      w.resolve();
      return false;
    });
  };
  const begin = collector.beginWrite.bind(collector);
  collector.beginWrite = (vmid: number) => {
    const write: SimWrite = { vmid, start: performance.now() };
    writes.push(write);
    const end = begin(vmid);
    check();
    return () => {
      end();
      if (write.end === undefined) {
        write.end = performance.now();
        check();
      }
    };
  };
  return {
    writes,
    of: (vmid) => writes.filter((w) => w.vmid === vmid),
    until(test) {
      if (test(writes)) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ test, resolve }));
    },
  };
}

/** Holds a lock on a simulated guest (as a backup job would) until `release()` is called. */
export function lockGuest(sim: RunningSimulator, vmid: number, lock = 'backup'): { release(): void } {
  const guest = sim.sim.guests.get(vmid);
  if (!guest) throw new Error(`no guest ${vmid}`);
  guest.main.set('lock', lock);
  guest.commit();
  return {
    release() {
      const current = sim.sim.guests.get(vmid);
      if (current && current.main.get('lock') === lock) {
        current.main.delete('lock');
        current.commit();
      }
    },
  };
}

/** The main section of a simulated guest's config file (what Proxmox has in effect). */
export function rawConfig(sim: RunningSimulator, vmid: number): string {
  return (sim.sim.getGuest(vmid)?.rawConfig ?? '').split(/\n\[/)[0] ?? '';
}
