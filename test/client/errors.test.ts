import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  PveAlreadyExistsError,
  PveAuthError,
  PveDigestConflictError,
  PveError,
  PveLockedError,
  PveNotFoundError,
  PveNotImplementedError,
  PveParameterError,
  PvePermissionError,
  PvePowerStateError,
  PveProtectedError,
  PveRunningError,
  classifyMessage,
  parsePveError,
} from '../../src/pve/errors.js';

const json = (message: string, extra: Record<string, unknown> = {}) => JSON.stringify({ data: null, message, ...extra });

describe('parsePveError', () => {
  it.each([
    [401, 'Authentication failed!', '', PveAuthError, 'Authentication failed!'],
    [
      403,
      'Permission check failed (/vms/100, VM.Audit)',
      json('Permission check failed (/vms/100, VM.Audit)\n'),
      PvePermissionError,
      'Permission check failed (/vms/100, VM.Audit)',
    ],
    [
      501,
      "Method 'GET /foo' not implemented",
      json("Method 'GET /foo' not implemented"),
      PveNotImplementedError,
      "Method 'GET /foo' not implemented",
    ],
    [
      500,
      'checksum mismatch (file change by other user?)',
      json('checksum mismatch (file change by other user?)\n'),
      PveDigestConflictError,
      'checksum mismatch (file change by other user?)',
    ],
    [
      500,
      'detected modified configuration - file changed by other user? Try again.',
      json('detected modified configuration - file changed by other user? Try again.\n'),
      PveDigestConflictError,
      'detected modified configuration - file changed by other user? Try again.',
    ],
    [500, 'VM is locked (backup)', json('VM is locked (backup)\n'), PveLockedError, 'VM is locked (backup)'],
    [
      500,
      "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout",
      json("can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout\n"),
      PveLockedError,
      "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout",
    ],
    [
      500,
      "unable to create VM 100 - VM 100 already exists on node 'pve'",
      json("unable to create VM 100 - VM 100 already exists on node 'pve'\n"),
      PveAlreadyExistsError,
      "unable to create VM 100 - VM 100 already exists on node 'pve'",
    ],
    [
      500,
      "Configuration file 'nodes/pve/qemu-server/100.conf' does not exist",
      json("Configuration file 'nodes/pve/qemu-server/100.conf' does not exist\n"),
      PveNotFoundError,
      "Configuration file 'nodes/pve/qemu-server/100.conf' does not exist",
    ],
    [
      500,
      "can't remove VM 100 - protection mode enabled",
      json("can't remove VM 100 - protection mode enabled\n"),
      PveProtectedError,
      "can't remove VM 100 - protection mode enabled",
    ],
    [
      500,
      'VM 100 is running - destroy failed',
      json('VM 100 is running - destroy failed\n'),
      PveRunningError,
      'VM 100 is running - destroy failed',
    ],
    [
      500,
      'unable to destroy CT 101 - container is running',
      json('unable to destroy CT 101 - container is running\n'),
      PveRunningError,
      'unable to destroy CT 101 - container is running',
    ],
    [500, 'no options specified', json('no options specified\n'), PveError, 'no options specified'],
  ])('%i %s', (status, reason, body, cls, message) => {
    const err = parsePveError(status, 'PUT', '/nodes/pve/qemu/100/config', reason, body);
    expect(err).toBeInstanceOf(cls);
    expect(err.constructor).toBe(cls);
    expect(err.message).toBe(message);
    expect(err.status).toBe(status);
    expect(err.method).toBe('PUT');
    expect(err.name).toBe(cls.name);
  });

  it('falls back to the reason phrase when the body has no message (servers before 5.2)', () => {
    const capture = readFileSync(new URL('./fixtures/error-400-param.real-pve7.json', import.meta.url), 'utf8');
    const err = parsePveError(400, 'POST', '/nodes/pve/lxc/102/status/stop', 'Parameter verification failed.', capture);
    expect(err).toBeInstanceOf(PveParameterError);
    expect((err as PveParameterError).errors).toEqual({
      'overrule-shutdown': 'property is not defined in schema and the schema does not allow additional properties',
    });
    expect(err.message).toMatch(/^Parameter verification failed\. \(overrule-shutdown: property is not defined/);
  });

  it('falls back to the reason phrase for a 500 with only {"data":null}', () => {
    const err = parsePveError(500, 'PUT', '/p', 'VM is locked (snapshot)', '{"data":null}');
    expect(err).toBeInstanceOf(PveLockedError);
    expect((err as PveLockedError).lock).toBe('snapshot');
  });

  it('uses the standard status text when neither message nor reason is there', () => {
    expect(parsePveError(502, 'GET', '/version', '', '').message).toBe('Bad Gateway');
  });

  it('keeps each parameter message without trailing newlines (real PVE 8 body)', () => {
    const body = readFileSync(new URL('./fixtures/error-400-param.real-pve8.json', import.meta.url), 'utf8');
    const err = parsePveError(400, 'POST', '/nodes/pve/qemu', 'Parameter verification failed.', body);
    expect(err).toBeInstanceOf(PveParameterError);
    expect((err as PveParameterError).errors).toEqual({
      ipconfig0: 'invalid format - format error\nipconfig0.gw: invalid format - value does not look like a valid IPv4 address',
      vmid: 'invalid format - value does not look like a valid VM ID',
    });
  });

  it('maps nextid on a taken VMID to PveAlreadyExistsError without a node', () => {
    const err = parsePveError(400, 'GET', '/cluster/nextid', 'Parameter verification failed.', {
      data: null,
      errors: { vmid: 'VM 100 already exists' },
      message: 'Parameter verification failed.\n',
    });
    expect(err).toBeInstanceOf(PveAlreadyExistsError);
    expect((err as PveAlreadyExistsError).vmid).toBe(100);
    expect((err as PveAlreadyExistsError).node).toBeUndefined();
  });

  it('maps an unknown UPID to PveNotFoundError', () => {
    const err = parsePveError(400, 'GET', '/nodes/pve/tasks/x/status', 'Parameter verification failed.', {
      data: null,
      errors: { upid: 'no such task' },
    });
    expect(err).toBeInstanceOf(PveNotFoundError);
  });

  it('strips the query string from the path', () => {
    expect(parsePveError(500, 'DELETE', '/nodes/pve/qemu/100?purge=1', 'x', '').path).toBe('/nodes/pve/qemu/100');
  });

  it('carries the digest the write sent', () => {
    const err = parsePveError(500, 'PUT', '/p', '', json('checksum mismatch (file change by other user?)\n'), { digest: 'abc' });
    expect((err as PveDigestConflictError).expectedDigest).toBe('abc');
  });
});

describe('classifyMessage', () => {
  const init = { status: 0, method: 'GET', path: '/p' };
  it.each([
    ['VM is locked (backup)', PveLockedError, { lock: 'backup', guestType: 'qemu' }],
    ['CT is locked (create)', PveLockedError, { lock: 'create', guestType: 'lxc' }],
    [
      "can't lock file '/run/lock/lxc/pve-config-101.lock' - got timeout",
      PveLockedError,
      { lockFile: '/run/lock/lxc/pve-config-101.lock', lock: undefined },
    ],
    ["CT 100 already exists on node 'x'", PveAlreadyExistsError, { vmid: 100, node: 'x' }],
    ["unable to create CT 100 - VM 100 already exists on node 'pve2'", PveAlreadyExistsError, { vmid: 100, node: 'pve2' }],
    ["unable to create VM 105 - VM 105 already exists on node 'pve'", PveAlreadyExistsError, { vmid: 105, node: 'pve' }],
    // qemu-server PVE/API2/Qemu.pm clone_vm: the new VMID's config file is there already.
    ['unable to create VM 150: config file already exists', PveAlreadyExistsError, { vmid: 150 }],
    // qemu-server PVE/QemuServer.pm vm_start_nolock; pve-container PVE/API2/LXC/Status.pm vm_start, vm_stop.
    ['VM 100 already running', PvePowerStateError, { running: true }],
    ['CT 101 already running', PvePowerStateError, { running: true }],
    ['CT 101 not running', PvePowerStateError, { running: false }],
  ])('%s', (message, cls, fields) => {
    const err = classifyMessage(message, init);
    expect(err).toBeInstanceOf(cls);
    expect(err).toMatchObject(fields);
  });

  it('returns undefined for texts without a class', () => {
    expect(classifyMessage('VM quit/powerdown failed - got timeout', init)).toBeUndefined();
    // A migration's parameter text, not a power state (qemu-server PVE/API2/Qemu.pm migrate_vm).
    expect(classifyMessage("VM 100 not running locally on node 'pve-02'", init)).toBeUndefined();
  });
});

describe('PveError serialisation', () => {
  it('JSON carries the data a caller needs and no cause', () => {
    const err = new PveError('boom', { status: 500, method: 'GET', path: '/x', cluster: 'lab', cause: new Error('inner') });
    expect(JSON.parse(JSON.stringify(err))).toEqual({
      name: 'PveError',
      message: 'boom',
      status: 500,
      method: 'GET',
      path: '/x',
      cluster: 'lab',
    });
  });
});
