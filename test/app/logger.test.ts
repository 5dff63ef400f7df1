import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { turnBuffered } from '../../src/logger.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('the process logger', () => {
  it('writes the lines of one turn of the event loop in one write, in order, at the end of the turn', async () => {
    const writes: string[] = [];
    const stream = turnBuffered({ write: (text: string) => writes.push(text) > 0 } as unknown as NodeJS.WritableStream);
    stream.write('one\n');
    stream.write('two\n');
    stream.write('three\n');
    expect(writes).toEqual([]);
    await new Promise(setImmediate);
    expect(writes).toEqual(['one\ntwo\nthree\n']);
    stream.write('four\n');
    await new Promise(setImmediate);
    expect(writes).toEqual(['one\ntwo\nthree\n', 'four\n']);
  });

  it('loses no line of the turn in which the process exits', async () => {
    // The serve command's logger on stderr, a line logged, and the process gone in the same turn.
    const script = "const { createLogger } = await import('./src/logger.ts'); createLogger().info('last words'); process.exit(3);";
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise((resolve) => child.once('close', resolve));
    expect(code).toBe(3);
    expect(stderr).toContain('"msg":"last words"');
  });
});
