/** Errors raised when a stored plan cannot be read back. */

/** The plan was written by a pve-gitops whose plan format this build does not read. */
export class PlanVersionError extends Error {
  override readonly name = 'PlanVersionError';

  constructor(
    readonly found: unknown,
    readonly expected: number,
  ) {
    super(
      `plan version ${typeof found === 'number' ? String(found) : JSON.stringify(found)} is not supported by this pve-gitops (expects ${expected}): plan again with this version`,
    );
  }
}

/** The plan is not valid JSON or does not match the plan format; `path` names the first bad field. */
export class PlanFormatError extends Error {
  override readonly name = 'PlanFormatError';

  constructor(
    message: string,
    /** Dotted path of the first bad field (`guests[3].changes[0].impact`), empty for the whole file. */
    readonly path: string,
    /** Every problem found, for callers that list them all. */
    readonly issues: readonly { path: string; message: string }[] = [],
  ) {
    super(message);
  }
}
