/** Names the App gives its check runs; GitHub's "Re-run" comes back with the name. */
export const PLAN_CHECK_NAME = 'pve-gitops/plan';

/** The check run of an apply, on the merge commit. */
export const APPLY_CHECK_NAME = 'pve-gitops/apply';
