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

/** `2026-05-01 14:03:09` in local time. */
export function fullTime(ms: number | null | undefined): string {
  if (!ms) return '—';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(
    d.getMinutes(),
  )}:${pad(d.getSeconds())}`;
}

/** `14:03:09` today, else `05-01 14:03`. */
export function shortTime(ms: number | null | undefined): string {
  if (!ms) return '—';
  const d = new Date(ms);
  const now = new Date();
  if (d.toDateString() === now.toDateString()) {
    return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
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
