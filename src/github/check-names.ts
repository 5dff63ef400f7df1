/** Names the App gives its check runs; GitHub's "Re-run" comes back with the name. */
export const PLAN_CHECK_NAME = 'pve-gitops/plan';
