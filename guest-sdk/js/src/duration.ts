// Durations the way Inngest writes them: "30s", "5m", "24h", "1d", "1h30m",
// "2.5 hours", or a number of milliseconds.

import { FatalError } from './errors';

/** Milliseconds, or text like `"30s"`, `"5m"`, `"24h"`, `"1d"`, `"1h30m"`, `"500ms"`. */
export type Duration = number | string;

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const WEEK = 7 * DAY;
const YEAR = 365.25 * DAY;

const UNITS: Record<string, number> = {
  ms: 1, msec: 1, msecs: 1, millisecond: 1, milliseconds: 1,
  s: SECOND, sec: SECOND, secs: SECOND, second: SECOND, seconds: SECOND,
  m: MINUTE, min: MINUTE, mins: MINUTE, minute: MINUTE, minutes: MINUTE,
  h: HOUR, hr: HOUR, hrs: HOUR, hour: HOUR, hours: HOUR,
  d: DAY, day: DAY, days: DAY,
  w: WEEK, wk: WEEK, wks: WEEK, week: WEEK, weeks: WEEK,
  y: YEAR, yr: YEAR, yrs: YEAR, year: YEAR, years: YEAR,
};

const TOKEN = /(\d+(?:\.\d+)?|\.\d+)\s*([a-z]*)\s*/gy;

/**
 * The duration in milliseconds. A bare number (or numeric text) is
 * milliseconds. Anything unreadable, negative or infinite is a
 * {@link FatalError}: a retry would not make it readable.
 */
export function parseDuration(input: Duration): number {
  if (typeof input === 'number') {
    if (Number.isFinite(input) && input >= 0) return input;
    throw new FatalError(`invalid duration ${String(input)}: expected a non-negative number of milliseconds`);
  }
  if (typeof input !== 'string') {
    throw new FatalError(`invalid duration ${String(input)}: expected milliseconds or text like "30s", "5m", "24h", "1d"`);
  }
  const text = input.trim().toLowerCase();
  let total = 0;
  let matched = 0;
  let tokens = 0;
  TOKEN.lastIndex = 0;
  if (text.length > 0) {
    for (let m = TOKEN.exec(text); m !== null; m = TOKEN.exec(text)) {
      const unit = m[2] === '' ? (tokens === 0 && m.index + m[0].length === text.length ? 'ms' : '') : m[2];
      const factor = UNITS[unit];
      if (factor === undefined) break;
      total += Number(m[1]) * factor;
      matched = TOKEN.lastIndex;
      tokens++;
      if (matched === text.length) break;
    }
  }
  if (tokens === 0 || matched !== text.length || !Number.isFinite(total)) {
    throw new FatalError(`invalid duration "${input}": expected milliseconds or text like "30s", "5m", "24h", "1d", "1h30m"`);
  }
  return total;
}
