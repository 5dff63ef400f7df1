/**
 * Where the App's own state lives in Redis. BullMQ keeps its queues under `<prefix>:<queue>:…`;
 * the App's state (newest heads, stored plans, sticky comment ids, locks) goes under
 * `<prefix>:state:…`, so the two never collide and one prefix holds an installation of the App.
 */
export function statePrefix(redisPrefix: string): string {
  return `${redisPrefix}:state`;
}
