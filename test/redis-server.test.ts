import { Redis } from 'ioredis';
import { describe, expect, inject, it } from 'vitest';

describe('test setup', () => {
  it('provides a real Redis server that stores and returns data', async () => {
    const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
    try {
      const key = `setup-check-${process.pid}-${Date.now()}`;
      await redis.set(key, 'stored', 'EX', 30);
      expect(await redis.get(key)).toBe('stored');
      const info = await redis.info('server');
      expect(info).toMatch(/redis_version:\d+/);
    } finally {
      redis.disconnect();
    }
  });
});
