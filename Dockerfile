# syntax=docker/dockerfile:1
# Build stage: install everything (prepare typechecks and bundles dist/, scripts/build.ts), then
# drop dev dependencies. The bundle still requires a few packages from node_modules at run time
# (undici's parts, ioredis, msgpackr, pino: scripts/build.ts says why), so the image keeps them.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm ci --no-audit --no-fund \
 && npm prune --omit=dev --no-audit --no-fund

# Runtime stage: the built program and production dependencies only, as an unprivileged user.
FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY app.yml ./
COPY specs-example ./specs-example
USER node
# Semi-spaces of up to 64 MB (V8's young generation; Node 20's default is 16 MB): a burst of webhooks
# allocates their payloads faster than the default one is scavenged, and copying what is still
# alive cost the web process about a quarter of its CPU (README "Running it").
ENTRYPOINT ["node", "--max-semi-space-size=64", "dist/bin.js"]
# The GitHub App (webhooks and workers in one process; `serve --role web|worker` runs one of them),
# configured by the environment the README describes. SIGTERM stops it: webhooks first, running
# applies handed back to the queue, then Redis; exit 0.
EXPOSE 3000
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["serve"]
