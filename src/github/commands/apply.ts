/**
 * `/pve apply`: a merged pull request's latest plan applied again (the handler is merge-to-apply's
 * `applyCommand`, which answers an open pull request with how merges are applied).
 */
import type { CommandSpec } from './command.js';

export const applyCommand = {
  name: 'apply',
  help: 'on a merged pull request: apply its latest plan again (after a conflict, re-plan with /pve plan first); open pull requests are applied when they merge. --now (admins): apply outside the apply windows',
  where: ['merged-pull-request'],
  who: 'writer',
  handler: 'provided',
} as const satisfies CommandSpec;
