import { request, type Dispatcher } from 'undici';
import { startSimulator, type RunningSimulator } from '../../src/pve/sim/index.js';
import type { SimFixture } from '../../src/pve/sim/schema.js';

/** One API answer: status line parts, headers and the parsed JSON body (undefined when empty). */
export interface ApiAnswer {
  status: number;
  reason: string;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  body: { data?: unknown; errors?: Record<string, string>; message?: string; total?: number } | undefined;
}

/** Calls `/api2/json<path>` with a token (default: the admin token) over real HTTP. */
export async function api(
  sim: RunningSimulator,
  method: Dispatcher.HttpMethod,
  path: string,
  options: { form?: Record<string, string>; json?: unknown; token?: string | null; headers?: Record<string, string>; body?: string } = {},
): Promise<ApiAnswer> {
  const headers: Record<string, string> = { ...options.headers };
  const token = options.token === undefined ? sim.token : options.token;
  if (token !== null) headers.authorization = `PVEAPIToken=${token}`;
  let body: string | undefined = options.body;
  if (options.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(options.form).toString();
  } else if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  }
  const res = await request(`${sim.url}/api2/json${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.body.text();
  return {
    status: res.statusCode,
    reason: res.statusText,
    headers: res.headers,
    text,
    body: text ? (JSON.parse(text) as ApiAnswer['body']) : undefined,
  };
}

/** Polls a task until it stops; returns its final status object. */
export async function waitTask(sim: RunningSimulator, node: string, upid: string): Promise<Record<string, unknown>> {
  for (;;) {
    const res = await api(sim, 'GET', `/nodes/${node}/tasks/${encodeURIComponent(upid)}/status`);
    const data = res.body!.data as Record<string, unknown>;
    if (data.status === 'stopped') return data;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A running qemu guest with a few typical keys, for tests that need one. */
export const WEB_CONFIG = [
  'boot: order=scsi0;net0',
  'cores: 2',
  'memory: 2048',
  'name: web-01',
  'net0: virtio=BC:24:11:00:00:01,bridge=vmbr0',
  'onboot: 1',
  'scsi0: local-lvm:vm-100-disk-0,size=32G',
  'scsihw: virtio-scsi-pci',
  'tags: prod',
  '',
].join('\n');

export const CT_CONFIG = [
  'arch: amd64',
  'cores: 1',
  'hostname: db-01',
  'memory: 1024',
  'net0: name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:02,ip=dhcp,type=veth',
  'ostype: debian',
  'rootfs: local-lvm:vm-200-disk-0,size=8G',
  'swap: 512',
  '',
].join('\n');

/** The running VM 100 on pve-01 with {@link WEB_CONFIG}: the first guest of most simulator tests. */
export const WEB_GUEST = { vmid: 100, type: 'qemu', node: 'pve-01', running: true, config: WEB_CONFIG } as const;

/** A simulator on a free port whose fixture holds `guests`, its tasks `taskMs` long. */
export function startGuestSimulator(guests: SimFixture['guests'], taskMs = 5): Promise<RunningSimulator> {
  return startSimulator({ port: 0, taskMs, fixture: { guests } });
}
