/**
 * The reference for the webhook benchmark: a bare Probot 14 app whose handler does nothing,
 * served by Probot's own node middleware on a plain node:http server, logging JSON at info like
 * `pve-gitops serve`. What `pve-gitops serve --role web` costs beyond this is the App's own work
 * per delivery. Prints `{"msg":"bare probot serving","url":…}` once it listens.
 *
 *   APP_ID=… PRIVATE_KEY=… WEBHOOK_SECRET=… node --import tsx test/bench/bare-probot.ts
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { createNodeMiddleware, Probot, type Probot as ProbotApp } from 'probot';

const log = pino({ level: process.env.LOG_LEVEL ?? 'info' });
const probot = new Probot({
  appId: Number(process.env.APP_ID),
  privateKey: process.env.PRIVATE_KEY ?? '',
  secret: process.env.WEBHOOK_SECRET ?? '',
  log,
});
const app = (bare: ProbotApp): void => {
  bare.on('pull_request', async () => {});
};
const middleware = await createNodeMiddleware(app, { probot, webhooksPath: '/api/github/webhooks' });
const server = createServer((req, res) => {
  void (middleware(req, res) as Promise<boolean>).then((handled) => {
    if (!handled) {
      res.writeHead(404);
      res.end();
    }
  });
});
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  log.info({ url: `http://127.0.0.1:${port}` }, 'bare probot serving');
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
