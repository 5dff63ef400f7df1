/**
 * `/pve plan`: a fresh plan of the pull request's head. This file only declares the command for
 * the registry (`registry.ts`); planning is the plan worker's (`src/queue/plan`).
 */
import type { CommandSpec } from './command.js';

export const planCommand = {
  name: 'plan',
  help: 'plan the pull request again, against the clusters as they are now',
  // A merged pull request is planned again too: after a conflict, that plan is what `/pve apply` applies.
  where: ['pull-request', 'merged-pull-request'],
  who: 'writer',
  handler: 'replan',
} as const satisfies CommandSpec;
