import { describe, expect, it } from 'vitest';
import { type DocumentEdit, editDocument, SpecEditError } from './yaml-edit.js';

const FILE = `# A web server.
kind: VM
name: web-01   # the name is the identity
cluster: lab
config:
  # Sized for the launch.
  cores: 2
  memory: 2048

  net0: { model: virtio, bridge: vmbr0 }
  tags: [web, env-lab]
---
# The second one.
kind: VM
name: web-02
cluster: lab
config:
  cores: 4
  net0:
    model: virtio
    bridge: vmbr0
`;
const FIRST = { file: 'web.yaml', line: 2, col: 1 };
const SECOND = { file: 'web.yaml', line: 14, col: 1 };

describe('editDocument', () => {
  it.each<[string, DocumentEdit[], string, string]>([
    ['a number in place', [{ path: ['config', 'cores'], value: 4 }], '  cores: 4\n', 'cores: 2'],
    ['a key removed with its line', [{ path: ['config', 'memory'] }], '  cores: 2\n\n  net0', 'memory'],
    ['a new key after the last one', [{ path: ['config', 'balloon'], value: 0 }], '  tags: [web, env-lab]\n  balloon: 0\n---', 'never'],
    [
      'a flow mapping stays flow',
      [{ path: ['config', 'net0'], value: { model: 'virtio', bridge: 'vmbr1' } }],
      'net0: { model: virtio, bridge: vmbr1 }',
      'vmbr0 }',
    ],
    ['a flow list stays flow', [{ path: ['config', 'tags'], value: ['db', 'web'] }], 'tags: [db, web]', 'env-lab'],
    ['a document field', [{ path: ['power'], value: 'running' }], 'config:\n', 'never'],
  ])('%s', (_what, edits, contains, gone) => {
    const out = editDocument('web.yaml', FILE, FIRST, edits);
    expect(out).toContain(contains);
    if (gone !== 'never') expect(out.split('---')[0]).not.toContain(gone);
    // Everything else is as written: comments, the trailing one, the second document.
    expect(out).toContain('# Sized for the launch.');
    expect(out).toContain('name: web-01   # the name is the identity');
    expect(out.slice(out.indexOf('---'))).toBe(FILE.slice(FILE.indexOf('---')));
  });

  it('keeps a block mapping a block in the second document', () => {
    const out = editDocument('web.yaml', FILE, SECOND, [{ path: ['config', 'net0'], value: { model: 'e1000', bridge: 'vmbr0' } }]);
    expect(out.slice(out.indexOf('---'))).toContain('  net0:\n    model: e1000\n    bridge: vmbr0\n');
    expect(out.slice(0, out.indexOf('---'))).toBe(FILE.slice(0, FILE.indexOf('---')));
  });

  it('writes a config mapping when the document has none', () => {
    const text = 'kind: VM\nname: a\ncluster: lab\n';
    expect(editDocument('a.yaml', text, { file: 'a.yaml', line: 1, col: 1 }, [{ path: ['config', 'cores'], value: 2 }])).toBe(
      'kind: VM\nname: a\ncluster: lab\nconfig:\n  cores: 2\n',
    );
  });

  it('removes a mapping that loses its last key', () => {
    const text = 'kind: VM\nname: a\nha:\n  state: stopped\npower: running\n';
    expect(editDocument('a.yaml', text, { file: 'a.yaml', line: 1, col: 1 }, [{ path: ['ha', 'state'] }])).toBe(
      'kind: VM\nname: a\npower: running\n',
    );
  });

  it('writes a multi-line value as a block scalar under its key', () => {
    const out = editDocument('web.yaml', FILE, FIRST, [{ path: ['config', 'description'], value: 'Shop front.\nOwned by the web team.' }]);
    expect(out).toContain('  description: |-\n    Shop front.\n    Owned by the web team.\n---');
  });

  it('refuses a document that is not there', () => {
    expect(() => editDocument('web.yaml', FILE, { file: 'web.yaml', line: 3, col: 1 }, [{ path: ['power'], value: 'stopped' }])).toThrow(
      SpecEditError,
    );
  });
});
