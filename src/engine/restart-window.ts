/**
 * `restart: in-window` in the engine (README "Apply windows"): a restart the plan announces with
 * `inWindow` is carried out only while one of the guest's apply windows is open. An apply let in
 * outside every window (`--now`) writes the values and leaves them pending, saying so.
 */
import type { ApplyStep } from '../core/apply-result.js';
import type { PlannedRestart } from '../core/model.js';

/** The step that says the restart was held, or undefined when the restart may go ahead. */
export function restartHeldOutsideWindow(restart: PlannedRestart, insideWindow: (() => boolean) | undefined): ApplyStep | undefined {
  if (!restart.inWindow || !insideWindow || insideWindow()) return undefined;
  return {
    op: 'restart-held',
    detail: 'not restarted: restart: in-window and no apply window is open now; the values stay pending until a restart in a window',
  };
}
