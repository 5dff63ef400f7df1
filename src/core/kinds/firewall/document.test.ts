/**
 * A live firewall written as `firewall:` reads back as the same firewall: every section of
 * `firewallDocument` compares equal to the read it came from, and a guest with no firewall file
 * gets no `firewall:` at all.
 */
import { describe, expect, it } from 'vitest';
import { firewallDocument, sectionDocument } from './document.js';
import { wantedState } from './spec.js';
import { type FirewallState, SECTIONS, sameSection } from './state.js';

const live: FirewallState = {
  options: { policy_in: 'DROP', enable: true, macfilter: false, log_level_in: 'info' },
  aliases: { bastion: { name: 'Bastion', cidr: '10.1.0.5', comment: 'jump host' }, gw: { name: 'gw', cidr: '10.0.0.1' } },
  ipsets: {
    admins: { comment: 'the admins', entries: [{ cidr: '10.0.0.0/24' }, { cidr: '10.9.9.9', nomatch: true }] },
    plain: { entries: [{ cidr: '192.168.1.0/24', comment: 'lan' }, { cidr: 'fd00::1' }] },
    empty: { entries: [] },
  },
  rules: [
    { type: 'in', action: 'ACCEPT', enable: true, proto: 'tcp', dport: '22', source: '+admins', comment: 'ssh' },
    { type: 'in', action: 'ACCEPT', enable: false, macro: 'HTTPS', iface: 'net0', log: 'nolog' },
    { type: 'out', action: 'DROP', enable: true, proto: 'udp', dport: '5000:5100', dest: 'gw' },
    { type: 'group', action: 'webservers', enable: true },
  ],
};

describe('firewallDocument', () => {
  it('writes every section so that the spec reads it back equal to the live firewall', () => {
    const document = firewallDocument(live);
    const wanted = wantedState(document);
    for (const section of SECTIONS) expect(sameSection(section, wanted, live), section).toBe(true);
    expect(Object.keys(document ?? {})).toEqual(['options', 'aliases', 'ipsets', 'rules']);
  });

  it('writes short forms where they mean the same, and enable only when a rule is off', () => {
    expect(sectionDocument('aliases', live)).toEqual({ Bastion: { cidr: '10.1.0.5', comment: 'jump host' }, gw: '10.0.0.1' });
    expect(sectionDocument('ipsets', live)).toEqual({
      admins: { comment: 'the admins', entries: ['10.0.0.0/24', { cidr: '10.9.9.9', nomatch: true }] },
      empty: [],
      plain: [{ cidr: '192.168.1.0/24', comment: 'lan' }, 'fd00::1'],
    });
    expect(sectionDocument('rules', live)).toEqual([
      { type: 'in', action: 'ACCEPT', source: '+admins', proto: 'tcp', dport: 22, comment: 'ssh' },
      { type: 'in', action: 'ACCEPT', enable: false, macro: 'HTTPS', iface: 'net0', log: 'nolog' },
      { type: 'out', action: 'DROP', dest: 'gw', proto: 'udp', dport: '5000:5100' },
      { type: 'group', action: 'webservers' },
    ]);
    expect(sectionDocument('options', live)).toEqual({ enable: true, policy_in: 'DROP', macfilter: false, log_level_in: 'info' });
  });

  it('leaves out the sections that hold nothing, and the whole key for a guest without a firewall file', () => {
    expect(firewallDocument({ options: {}, aliases: {}, ipsets: {}, rules: [] })).toBeUndefined();
    expect(firewallDocument({ options: {}, aliases: {}, ipsets: {}, rules: [{ type: 'in', action: 'DROP', enable: true }] })).toEqual({
      rules: [{ type: 'in', action: 'DROP' }],
    });
  });
});
