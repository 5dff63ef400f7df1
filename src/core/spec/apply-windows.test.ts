import { describe, expect, it } from 'vitest';
import { closedReason, parseWindow, parseWindows, windowState } from './apply-windows.js';

const at = (iso: string): number => Date.parse(iso);

describe('apply windows', () => {
  it('parses days, ranges, lists and daily', () => {
    expect(parseWindow('Mon-Fri 22:00-06:00 UTC')).toMatchObject({ days: new Set([1, 2, 3, 4, 5]), startMin: 1320, endMin: 360 });
    expect(parseWindow('Fri-Mon 00:00-24:00 UTC')).toMatchObject({ days: new Set([5, 6, 7, 1]), endMin: 1440 });
    expect(parseWindow('sat,Sun 01:30-02:00 Asia/Tokyo')).toMatchObject({ days: new Set([6, 7]), startMin: 90, zone: 'Asia/Tokyo' });
    expect(parseWindow('daily 03:00-04:00 UTC')).toMatchObject({ days: new Set([1, 2, 3, 4, 5, 6, 7]) });
    expect(parseWindow('Sat 2:00-5:00 UTC')).toBe(
      "window 'Sat 2:00-5:00 UTC': expected 'DAYS HH:MM-HH:MM ZONE', e.g. 'Sat 02:00-05:00 Europe/Berlin'",
    );
  });

  it('is open inside a window and says when it closes; closed outside and says when the next opens', () => {
    const windows = parseWindows(['Sat 02:00-05:00 Europe/Berlin']);
    // 2026-12-05 is a Saturday; Berlin is UTC+1 in winter.
    expect(windowState(windows, at('2026-12-05T01:30:00Z'))).toMatchObject({ open: true, closesAt: at('2026-12-05T04:00:00Z') });
    const closed = windowState(windows, at('2026-12-05T04:00:00Z'));
    expect(closed).toMatchObject({ open: false, opensAt: at('2026-12-12T01:00:00Z') });
    if (closed.open) throw new Error('expected closed');
    expect(closedReason(closed)).toBe(
      'outside its apply window: runs when Sat 02:00-05:00 Europe/Berlin opens, Sat 2026-12-12 02:00 Europe/Berlin (01:00 UTC)',
    );
  });

  it('follows daylight saving: the same wall-clock window is an hour earlier in UTC in summer', () => {
    const windows = parseWindows(['Sat 02:00-05:00 Europe/Berlin']);
    expect(windowState(windows, at('2026-06-05T12:00:00Z'))).toMatchObject({ open: false, opensAt: at('2026-06-06T00:00:00Z') });
    // The Saturday of the spring change (2026-03-28 is a Saturday, the change is Sunday 29th 02:00): still winter time.
    expect(windowState(windows, at('2026-03-27T12:00:00Z'))).toMatchObject({ opensAt: at('2026-03-28T01:00:00Z') });
    // A window starting in the spring-forward gap (Sunday 2026-03-29 02:30 does not exist in Berlin) opens right after it.
    const gap = parseWindows(['Sun 02:30-04:00 Europe/Berlin']);
    expect(windowState(gap, at('2026-03-28T12:00:00Z'))).toMatchObject({ open: false, opensAt: at('2026-03-29T01:30:00Z') });
  });

  it('runs a window over midnight into the next day, and takes the soonest of several', () => {
    const windows = parseWindows(['Fri 22:00-02:00 UTC', 'Wed 12:00-13:00 UTC']);
    // Saturday 01:00 is inside Friday's window.
    expect(windowState(windows, at('2026-12-05T01:00:00Z'))).toMatchObject({ open: true, closesAt: at('2026-12-05T02:00:00Z') });
    expect(windowState(windows, at('2026-12-05T02:00:00Z'))).toMatchObject({ open: false, opensAt: at('2026-12-09T12:00:00Z') });
  });
});
