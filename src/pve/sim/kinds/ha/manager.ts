/**
 * The simulated HA manager (pve-ha-manager `HA/Manager.pm`, the CRM, and `HA/LRM.pm`): what an
 * HA-managed guest's `status/start`, `status/stop` and `status/shutdown` hand over to it. Those
 * endpoints only queue a request (`ha-manager set --state started`, `ha-manager crm-command stop
 * <sid> <timeout>`) in a `hastart`/`hastop` task that ends at once; the guest changes state at a
 * later manager round. A round runs on `tick()` — deterministic, for tests — or every `roundMs`
 * when that is set (the CLI's simulator, benchmarks). The manager's service state per SID is what
 * `hastate` and `status/current`'s `ha.state` show (docs/proxmox-behaviour.md, HAP-…).
 */
import type { Simulator } from '../../simulator.js';
import { applyAllPending } from '../../config-update/apply-all-pending.js';
import { GUEST_FLAVOURS } from '../../../../core/guest-flavours.js';
import { flavourOf } from '../../guest/flavours.js';
import { haConfig } from './state.js';

/** A request queued for the manager's next round. */
interface HaRequest {
  action: 'start' | 'stop';
  /** `crm-command stop <sid> <timeout>`: 0 is a hard stop, else a shutdown with that timeout. */
  timeout?: number;
}

/** The manager of one simulator: queued requests and service states by SID. */
export class SimHaManager {
  /** `manager_status` `service_status.<sid>.state`, once the manager has looked at a service. */
  readonly serviceState = new Map<string, string>();
  readonly #requests = new Map<string, HaRequest>();
  #timer: NodeJS.Timeout | undefined;
  /** Rounds of 0 ms: a request is carried out as it is queued (the rehearsal's copy, whose tasks finish at once). */
  #immediate = false;
  /** Called after every round: tests wait for rounds without a clock. */
  readonly #roundListeners = new Set<() => void>();

  constructor(private readonly sim: Simulator) {}

  /** Queues what a `hastart`/`hastop` task asks for; a later request for the SID replaces it. */
  request(sid: string, request: HaRequest): void {
    this.#requests.set(sid, request);
    if (request.action === 'start') {
      // `ha-manager set --state started` writes resources.cfg at once; the CRM acts on it later.
      const resource = haConfig(this.sim).ids.get(sid);
      if (resource) resource.options.state = 'started';
      this.serviceState.set(sid, this.serviceState.get(sid) === 'started' ? 'started' : 'request_start');
    }
    if (this.#immediate) this.tick();
  }

  /** Requests not yet carried out. */
  get queued(): number {
    return this.#requests.size;
  }

  /**
   * One CRM and LRM round: each queued request is carried out. A stop sets the resource's
   * configured state to `stopped` (as `next_state_started` does on a `stop` command), then the
   * LRM stops the guest; a start starts it. Pending values apply as a real start or stop does.
   */
  tick(): void {
    const config = haConfig(this.sim);
    for (const [sid, request] of this.#requests) {
      this.#requests.delete(sid);
      const resource = config.ids.get(sid);
      const vmid = Number(sid.slice(sid.indexOf(':') + 1));
      const guest = this.sim.guests.get(vmid);
      if (!resource || !guest) continue;
      const flavour = flavourOf(guest.type);
      if (request.action === 'start') {
        if (!guest.running) {
          applyAllPending(this.sim, guest);
          guest.setRunning(true);
        }
        this.serviceState.set(sid, 'started');
      } else {
        resource.options.state = 'stopped';
        if (guest.running) {
          if (flavour.stopAppliesPending) applyAllPending(this.sim, guest);
          guest.setRunning(false);
        }
        this.serviceState.set(sid, 'stopped');
      }
    }
    for (const listener of this.#roundListeners) listener();
  }

  /** Resolves after the next round. */
  nextRound(): Promise<void> {
    return new Promise((resolve) => {
      const listener = (): void => {
        this.#roundListeners.delete(listener);
        resolve();
      };
      this.#roundListeners.add(listener);
    });
  }

  /**
   * HA moves a guest to another node (a recovery after fencing, a rebalance): the guest lives
   * there from now on, as the manager's `change_service_state(…, node => $target)` records it.
   */
  relocate(vmid: number, node: string): void {
    this.sim.migrate(vmid, node);
  }

  /** Runs a round every `ms` (null: only on `tick()`; 0: at each request). */
  setRoundMs(ms: number | null): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#immediate = ms === 0;
    if (ms === null || ms === 0) return;
    this.#timer = setInterval(() => this.tick(), ms);
    this.#timer.unref();
  }

  /** Stops the round timer. */
  close(): void {
    this.setRoundMs(null);
  }
}

const MANAGERS = new WeakMap<Simulator, SimHaManager>();

/** The HA manager of `sim` (manual rounds until {@link SimHaManager.setRoundMs}). */
export function haManager(sim: Simulator): SimHaManager {
  let manager = MANAGERS.get(sim);
  if (!manager) {
    manager = new SimHaManager(sim);
    MANAGERS.set(sim, manager);
  }
  return manager;
}

/** `vm_is_ha_managed` (`HA/Config.pm`): a resource exists for the guest and its state is not `ignored`. */
export function haSid(sim: Simulator, type: 'qemu' | 'lxc', vmid: number): string | undefined {
  const sid = `${GUEST_FLAVOURS[type].resourcePrefix}:${vmid}`;
  const resource = haConfig(sim).ids.get(sid);
  if (!resource || resource.options.state === 'ignored') return undefined;
  return sid;
}
