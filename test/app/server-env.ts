/** A server environment that passes `loadServerConfig`, for tests that change one setting of it. */
import { generateKeyPairSync } from 'node:crypto';

/** A fresh RSA private key in PKCS#1 PEM, as GitHub hands out App keys. */
export const TEST_PRIVATE_KEY_PEM = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .privateKey.export({ type: 'pkcs1', format: 'pem' })
  .toString();

/** Every required setting, with one cluster `lab`. */
export const VALID_SERVER_ENV = {
  APP_ID: '12345',
  PRIVATE_KEY: TEST_PRIVATE_KEY_PEM,
  WEBHOOK_SECRET: 'a-webhook-secret',
  REDIS_URL: 'redis://127.0.0.1:6379',
  PVE_CLUSTER_LAB_URL: 'https://pve.example.net:8006',
  PVE_CLUSTER_LAB_TOKEN: 'gitops@pve!plan=00000000-0000-0000-0000-000000000000',
};
