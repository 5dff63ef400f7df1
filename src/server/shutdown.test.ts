import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { closeOnSignals, type SignalSource } from './shutdown.js';

describe('closeOnSignals', () => {
  it('resolves closed with the signal once close finished, and closes only once', async () => {
    const source = new EventEmitter() as unknown as SignalSource & EventEmitter;
    const repeats: string[] = [];
    let closes = 0;
    const signals = closeOnSignals(
      async () => {
        closes += 1;
      },
      { source, onRepeat: (signal) => repeats.push(signal) },
    );
    source.emit('SIGTERM', 'SIGTERM');
    source.emit('SIGINT', 'SIGINT');
    expect(await signals.closed).toBe('SIGTERM');
    expect(closes).toBe(1);
    expect(repeats).toEqual(['SIGINT']);
    signals.remove();
  });

  it('rejects closed with the error of a close that failed (not an unhandled rejection that kills the process)', async () => {
    const source = new EventEmitter() as unknown as SignalSource & EventEmitter;
    const signals = closeOnSignals(
      async () => {
        throw new Error('redis went away while closing');
      },
      { source },
    );
    source.emit('SIGTERM', 'SIGTERM');
    await expect(signals.closed).rejects.toThrow('redis went away while closing');
    signals.remove();
  });
});
