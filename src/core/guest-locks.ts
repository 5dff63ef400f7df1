/**
 * A guest's config lock, as the apply treats it (README "How apply decides"): every lock is waited
 * out — a backup's, a snapshot's, a migration's end when their task does — except a hibernated VM's
 * `suspended`/`suspending`, which only a resume ends (qemu-server `vm_suspend`), so waiting cannot help.
 */

/** True for a lock that only a resume of the VM ends. */
export function endsOnlyByResume(lock: string): boolean {
  return lock === 'suspended' || lock === 'suspending';
}
