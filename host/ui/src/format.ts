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
  else if (a < 60_000) s = `${(a / 1000).toFixed(a < 10_000 ? 2 : 1)} s`;
  else if (a < 3_600_000) s = two(Math.floor(a / 60_000), 'min', Math.round((a % 60_000) / 1000), 's');
  else if (a < 86_400_000) s = two(Math.floor(a / 3_600_000), 'h', Math.round((a % 3_600_000) / 60_000), 'min');
  else s = two(Math.floor(a / 86_400_000), 'd', Math.round((a % 86_400_000) / 3_600_000), 'h');
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
  if (a < 60_000) s = `${Math.round(a / 1000)} s`;
  else if (a < 3_600_000) s = `${Math.round(a / 60_000)} min`;
  else if (a < 86_400_000) s = `${Math.round(a / 3_600_000)} h`;
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
