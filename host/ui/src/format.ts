// Numbers, sizes, times and durations in words a person reads.

export function num(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  return n.toLocaleString('en-US');
}

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = -1;
  do {
    v /= 1024;
    u++;
  } while (v >= 1024 && u < units.length - 1);
  return `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ${units[u]}`;
}

/** `2 min 3 s`, `1 h` (a zero second part is left out). */
function two(a: number, ua: string, b: number, ub: string): string {
  return b ? `${a} ${ua} ${b} ${ub}` : `${a} ${ua}`;
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return '—';
  const neg = ms < 0;
  const a = Math.abs(ms);
  let s: string;
  if (a < 1) s = `${a.toFixed(3)} ms`;
  else if (a < 100) s = `${a.toFixed(a < 10 ? 2 : 1)} ms`;
  else if (a < 1000) s = `${Math.round(a)} ms`;
  else if (a < 59_950) s = `${(a / 1000).toFixed(a < 9_995 ? 2 : 1)} s`;
  else {
    // Rounded as a whole to the smaller unit, then split: 3,599.6 s is
    // `1 h`, never `59 min 60 s`.
    const seconds = Math.round(a / 1000);
    const minutes = Math.round(a / 60_000);
    const hours = Math.round(a / 3_600_000);
    if (seconds < 3600) s = two(Math.floor(seconds / 60), 'min', seconds % 60, 's');
    else if (minutes < 1440) s = two(Math.floor(minutes / 60), 'h', minutes % 60, 'min');
    else s = two(Math.floor(hours / 24), 'd', hours % 24, 'h');
  }
  return neg ? `-${s}` : s;
}

const pad = (n: number) => String(n).padStart(2, '0');

// One way to write a time, everywhere on the dashboard: lists, facts,
// waterfalls and the charts' axes all use `clock` (date and time in the
// browser's zone, which the top bar names once, `zone()`); a time's tooltip
// is `fullTime`, with the zone.

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `5 Dec`, or `5 Dec 2025` outside `now`'s year. */
export function day(ms: number, now = Date.now()): string {
  const d = new Date(ms);
  const year = d.getFullYear() === new Date(now).getFullYear() ? '' : ` ${d.getFullYear()}`;
  return `${d.getDate()} ${MONTHS[d.getMonth()]}${year}`;
}

/** `5 Dec 14:03:09` in the browser's zone (with the year outside `now`'s). */
export function clock(ms: number | null | undefined, now = Date.now()): string {
  if (!ms) return '—';
  const d = new Date(ms);
  return `${day(ms, now)} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** The browser's zone at `ms` as an offset from UTC: `UTC+01:00`, `UTC−03:30`, `UTC`. */
export function zone(ms = Date.now()): string {
  const offset = -new Date(ms).getTimezoneOffset();
  if (offset === 0) return 'UTC';
  const a = Math.abs(offset);
  return `UTC${offset > 0 ? '+' : '−'}${pad(Math.floor(a / 60))}:${pad(a % 60)}`;
}

/** `2026-12-05 14:03:09 UTC+01:00`: a time with its year and zone (for tooltips). */
export function fullTime(ms: number | null | undefined): string {
  if (!ms) return '—';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(
    d.getMinutes(),
  )}:${pad(d.getSeconds())} ${zone(ms)}`;
}

/**
 * A chart's time axis in the same words as `clock`: each tick `14:03`, and
 * the first tick and each tick on a new day with the day under it.
 */
export function axisTimes(ticks: number[], now = Date.now()): string[] {
  let lastDay = '';
  return ticks.map((ms) => {
    const d = new Date(ms);
    const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
    const today = day(ms, now);
    if (today === lastDay) return hm;
    lastDay = today;
    return `${hm}\n${today}`;
  });
}

/** `3 s ago`, `in 4 min`. */
export function ago(ms: number | null | undefined, now = Date.now()): string {
  if (!ms) return '—';
  const diff = now - ms;
  const a = Math.abs(diff);
  let s: string;
  if (a < 1000) return diff >= 0 ? 'just now' : 'now';
  // Each unit up to the point where it would round to the next one's 1.
  if (a < 59_500) s = `${Math.round(a / 1000)} s`;
  else if (a < 3_570_000) s = `${Math.round(a / 60_000)} min`;
  else if (a < 84_600_000) s = `${Math.round(a / 3_600_000)} h`;
  else s = `${Math.round(a / 86_400_000)} d`;
  return diff >= 0 ? `${s} ago` : `in ${s}`;
}

export function json(value: unknown, indent = 2): string {
  if (value === undefined) return '';
  try {
    return JSON.stringify(value, null, indent) ?? String(value);
  } catch {
    return String(value);
  }
}

export function compact(value: unknown, max = 120): string {
  const s = typeof value === 'string' ? value : json(value, 0);
  return s.length > max ? s.slice(0, max - 1) + '…' : s;
}

export const shortDigest = (d: string | null | undefined) => (d ? d.slice(0, 12) : '—');

export function plural(n: number, one: string, many = one + 's'): string {
  return `${num(n)} ${n === 1 ? one : many}`;
}

/** A run of text from the API: plain, or a code span it set in backticks. */
export interface ProsePart {
  code: boolean;
  text: string;
}

/**
 * Splits a message from the API into plain text and its `code` spans (the
 * API sets names, fields and values in backticks). A backtick without a
 * partner stays as it is.
 */
export function proseParts(text: string): ProsePart[] {
  const pieces = text.split('`');
  const parts: ProsePart[] = [];
  pieces.forEach((piece, i) => {
    const inside = i % 2 === 1;
    if (inside && i < pieces.length - 1) {
      parts.push({ code: true, text: piece });
    } else {
      const plain = inside ? `\`${piece}` : piece;
      const last = parts[parts.length - 1];
      if (last && !last.code) last.text += plain;
      else if (plain) parts.push({ code: false, text: plain });
    }
  });
  return parts;
}
