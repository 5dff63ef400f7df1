/**
 * Apply windows (README "Apply windows"): when an apply may change a guest. A window is written
 * `DAYS HH:MM-HH:MM ZONE` — `Sat 02:00-05:00 Europe/Berlin`, `Mon-Fri 22:00-06:00 UTC`,
 * `Sat,Sun 00:00-24:00 America/New_York`, `daily 03:00-04:00 Asia/Tokyo` — a list of them per
 * cluster (`windows:` in its Cluster document) and optionally per guest (its own list, in place of
 * its cluster's). DAYS are English day abbreviations, ranges of them (`Fri-Mon` wraps) and comma
 * lists, or `daily`; an end at or before the start runs into the next day; ZONE is an IANA time
 * zone. Times are the zone's wall clock, daylight saving included: Luxon does the zone arithmetic
 * (a start that falls into a spring-forward gap opens at the first minute after it). Pure: every
 * decision takes the time it is asked about.
 */
import { DateTime, IANAZone } from 'luxon';

const DAY_NAMES = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;

/** A window as parsed: ISO weekdays (1 = Monday) it opens on, minutes since midnight, the zone. */
export interface ApplyWindow {
  text: string;
  days: ReadonlySet<number>;
  startMin: number;
  endMin: number;
  zone: string;
}

/** Whether windows let an apply in now, and until or from when (milliseconds since the epoch). */
export type WindowState = { open: true; closesAt: number; window: ApplyWindow } | { open: false; opensAt: number; window: ApplyWindow };

const SHAPE = /^(\S+)\s+(\d{2}):(\d{2})-(\d{2}):(\d{2})\s+(\S+)$/;

function dayOf(word: string): number | undefined {
  const i = DAY_NAMES.indexOf(word.toLowerCase() as (typeof DAY_NAMES)[number]);
  return i < 0 ? undefined : i + 1;
}

function parseDays(text: string): Set<number> | string {
  if (text.toLowerCase() === 'daily') return new Set([1, 2, 3, 4, 5, 6, 7]);
  const days = new Set<number>();
  for (const part of text.split(',')) {
    const [from, to, extra] = part.split('-');
    const a = dayOf(from ?? '');
    const b = to === undefined ? a : dayOf(to);
    if (a === undefined || b === undefined || extra !== undefined)
      return `'${part}' is not a day, a range of days (Mon-Fri) or 'daily'; days are Mon Tue Wed Thu Fri Sat Sun`;
    for (let d = a; ; d = (d % 7) + 1) {
      days.add(d);
      if (d === b) break;
    }
  }
  return days;
}

/** Parses one window; a string says what is wrong with it. */
export function parseWindow(text: string): ApplyWindow | string {
  const m = SHAPE.exec(text.trim());
  const shape = `expected 'DAYS HH:MM-HH:MM ZONE', e.g. 'Sat 02:00-05:00 Europe/Berlin'`;
  if (!m) return `window '${text}': ${shape}`;
  const [, daysText, sh, sm, eh, em, zone] = m as unknown as [string, string, string, string, string, string, string];
  const days = parseDays(daysText);
  if (typeof days === 'string') return `window '${text}': ${days}`;
  const startMin = Number(sh) * 60 + Number(sm);
  const endMin = Number(eh) * 60 + Number(em);
  if (Number(sh) > 23 || Number(sm) > 59 || Number(em) > 59 || endMin > 24 * 60)
    return `window '${text}': times are HH:MM from 00:00 to 23:59 (an end may be 24:00)`;
  if (!IANAZone.isValidZone(zone)) return `window '${text}': '${zone}' is not an IANA time zone (e.g. Europe/Berlin, UTC)`;
  return { text: text.trim(), days, startMin, endMin, zone };
}

/** Parses a list of windows that validation accepted; throws on one it would refuse. */
export function parseWindows(texts: readonly string[]): ApplyWindow[] {
  return texts.map((text) => {
    const parsed = parseWindow(text);
    if (typeof parsed === 'string') throw new Error(parsed);
    return parsed;
  });
}

/** The occurrences of `w` opening from the day before `now` to a week after, in its zone. */
function occurrences(w: ApplyWindow, now: number): Array<{ start: number; end: number }> {
  const today = DateTime.fromMillis(now, { zone: w.zone }).startOf('day');
  const out: Array<{ start: number; end: number }> = [];
  for (let d = -1; d <= 7; d++) {
    const day = today.plus({ days: d });
    if (!w.days.has(day.weekday)) continue;
    const at = (date: DateTime, min: number): number =>
      date
        .plus({ days: Math.floor(min / 1440) })
        .set({ hour: Math.floor((min % 1440) / 60), minute: min % 60 })
        .toMillis();
    const start = at(day, w.startMin);
    const end = w.endMin > w.startMin ? at(day, w.endMin) : at(day.plus({ days: 1 }), w.endMin);
    out.push({ start, end });
  }
  return out;
}

/**
 * Whether `windows` let an apply in at `now`: open (and when the window closes, the latest close of
 * the windows open now) or closed (and when the next one opens).
 */
export function windowState(windows: readonly ApplyWindow[], now: number): WindowState {
  let open: { closesAt: number; window: ApplyWindow } | undefined;
  let next: { opensAt: number; window: ApplyWindow } | undefined;
  for (const w of windows) {
    for (const { start, end } of occurrences(w, now)) {
      if (start <= now && now < end) {
        if (!open || end > open.closesAt) open = { closesAt: end, window: w };
      } else if (start > now && (!next || start < next.opensAt)) next = { opensAt: start, window: w };
    }
  }
  if (open) return { open: true, ...open };
  if (!next) throw new Error('apply windows: none opens within a week'); // every parsed window opens weekly
  return { open: false, ...next };
}

/** Whether `windows` (absent or empty: none, any time) let an apply in at `now`. */
export function windowsOpen(windows: readonly string[] | undefined, now: number): boolean {
  if (!windows || windows.length === 0) return true;
  return windowState(parseWindows(windows), now).open;
}

/** An instant as a reader of the window sees it: `Sat 2026-12-05 02:00 Europe/Berlin (01:00 UTC)`. */
export function windowTime(ms: number, zone: string): string {
  const local = DateTime.fromMillis(ms, { zone });
  const utc = DateTime.fromMillis(ms, { zone: 'UTC' });
  const inZone = `${local.toFormat('ccc yyyy-LL-dd HH:mm', { locale: 'en' })} ${zone}`;
  return zone === 'UTC' ? inZone : `${inZone} (${utc.toFormat('HH:mm', { locale: 'en' })} UTC)`;
}

/** How every wait for a window begins, so a report can find them. */
export const WINDOW_WAIT = 'outside its apply window';

/** Why a guest waits: its windows are closed, and when the next opens. */
export function closedReason(state: Extract<WindowState, { open: false }>): string {
  return `${WINDOW_WAIT}: runs when ${state.window.text} opens, ${windowTime(state.opensAt, state.window.zone)}`;
}

/** The windows in force for a guest: its own, else its cluster's; undefined when neither has any. */
export function effectiveWindows(guest: readonly string[] | undefined, cluster: readonly string[] | undefined): string[] | undefined {
  const list = guest ?? cluster;
  return list && list.length > 0 ? [...list] : undefined;
}
