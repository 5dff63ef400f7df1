import { describe, expect, it } from 'vitest';
import { withEnvSnapshot } from './env-snapshot.js';

describe('withEnvSnapshot', () => {
  it('shows the same variables inside and puts the original object back', () => {
    const original = process.env;
    const seen = withEnvSnapshot(() => ({ same: process.env === original, path: process.env.PATH }));
    expect(seen).toEqual({ same: false, path: original.PATH });
    expect(process.env).toBe(original);
  });

  it('puts the original object back when the function throws', () => {
    const original = process.env;
    expect(() =>
      withEnvSnapshot(() => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(process.env).toBe(original);
  });
});
