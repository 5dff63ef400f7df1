import { describe, expect, it } from 'vitest';
import { UnknownEndpointError, validateParams } from '../../src/core/proxmox-params.js';

const PUT_QEMU = 'PUT /nodes/{node}/qemu/{vmid}/config';
const PUT_LXC = 'PUT /nodes/{node}/lxc/{vmid}/config';
const IGNORE = { ignore: ['node', 'vmid'] };

describe('validateParams', () => {
  it.each([
    [{ cores: '2', memory: '2048', name: 'web-01', tags: 'a;b', net0: 'virtio,bridge=vmbr0' }, {}],
    [{ description: 'two\nlines' }, {}],
    [{ description: 'x'.repeat(8193) }, { description: 'value may only be 8192 characters long' }],
    [{ cores: 'abc' }, { cores: "type check ('integer') failed - got 'abc'" }],
    [{ cores: '0' }, { cores: 'value must have a minimum value of 1' }],
    [{ cpulimit: 'x' }, { cpulimit: "type check ('number') failed - got 'x'" }],
    [{ protection: 'true' }, { protection: "type check ('boolean') failed - got 'true'" }],
    [{ bogus: '1' }, { bogus: 'property is not defined in schema and the schema does not allow additional properties' }],
    [{ net32: 'virtio' }, { net32: 'property is not defined in schema and the schema does not allow additional properties' }],
    [{ name: 'bad_name' }, { name: 'invalid format - value does not look like a valid DNS name\n' }],
    [{ tags: 'ok;b@d' }, { tags: 'invalid format - invalid characters in tag\n' }],
    [{ delete: 'cores,9x' }, { delete: "invalid format - invalid configuration ID '9x'\n" }],
    [{ force: '1' }, { delete: "missing property required by 'force'" }],
    [{ bios: 'uefi' }, { bios: "value 'uefi' does not have a value in the enumeration 'seabios, ovmf'" }],
    [{ digest: 'a'.repeat(41) }, { digest: 'value may only be 41 characters long'.replace('41', '40') }],
    [
      { ipconfig0: 'ip=10.0.0.2/24,gw=10.0.0.300' },
      { ipconfig0: 'invalid format - format error\nipconfig0.gw: invalid format - value does not look like a valid IPv4 address\n\n' },
    ],
    [{ net0: 'virtio,bogus=1' }, { net0: 'invalid format - invalid key in comma-separated list property: bogus\n' }],
    [{ net0: 'virtio,tag=5000' }, { net0: 'invalid format - format error\nnet0.tag: value must have a maximum value of 4094\n' }],
    [{ net0: 'bridge=vmbr0' }, { net0: 'invalid format - format error\nnet0.model: property is missing and it is not optional\n' }],
    [{ memory: 'lots' }, { memory: "invalid format - format error\nmemory.current: type check ('integer') failed - got 'lots'\n" }],
  ])('qemu config %j', (params, expected) => {
    expect(validateParams(PUT_QEMU, params, IGNORE)).toEqual(expected);
  });

  it('checks the vmid format before its minimum and reports missing required params', () => {
    expect(validateParams('GET /nodes/{node}/qemu/{vmid}/config', { node: 'pve-01', vmid: '99' })).toEqual({
      vmid: 'invalid format - value does not look like a valid VM ID\n',
    });
    expect(validateParams('POST /nodes/{node}/lxc', { node: 'pve-01', vmid: '100' })).toEqual({
      ostemplate: 'property is missing and it is not optional',
    });
  });

  it('accepts JSON booleans and arrays only in JSON mode', () => {
    expect(validateParams(PUT_QEMU, { protection: true, delete: ['tags', 'cores'] }, { ...IGNORE, json: true })).toEqual({});
    expect(validateParams(PUT_QEMU, { cores: true }, { ...IGNORE, json: true })).toEqual({
      cores: "type check ('integer') failed - got JSON::PP::Boolean",
    });
    expect(validateParams(PUT_QEMU, { protection: true }, IGNORE)).toEqual({
      protection: "type check ('boolean') failed - got 'true'",
    });
  });

  it('uses the lxc limits and sub-formats', () => {
    expect(validateParams(PUT_LXC, { net0: 'name=eth0,bridge=vmbr0,hwaddr=01:00:00:00:00:00' }, IGNORE)).toEqual({
      net0: 'invalid format - format error\nnet0.hwaddr: invalid format - value does not look like a valid unicast MAC address\n\n',
    });
    expect(validateParams(PUT_LXC, { mp255: 'local-lvm:8,mp=/srv', mp256: 'local-lvm:8,mp=/x' }, IGNORE)).toEqual({
      mp256: 'property is not defined in schema and the schema does not allow additional properties',
    });
    expect(validateParams(PUT_LXC, { mp0: 'local-lvm:8' }, IGNORE)).toEqual({
      mp0: 'invalid format - format error\nmp0.mp: property is missing and it is not optional\n',
    });
  });

  it('refuses unknown endpoints', () => {
    expect(() => validateParams('GET /nope', {})).toThrow(UnknownEndpointError);
  });
});
