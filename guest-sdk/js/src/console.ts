// `console.*` as job log lines with their level (both engines; stdout would
// land in the job's log too, but as `stdout` without a level).

import type { Host, LogLevel } from './host';

/** One argument of a console call as text. */
export function formatArg(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value instanceof Error) return value.stack && value.stack.includes(value.message) ? value.stack : `${value.name}: ${value.message}`;
  if (typeof value === 'bigint') return `${value}n`;
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return String(value);
  try {
    const text = JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v));
    return text === undefined ? String(value) : text;
  } catch {
    return String(value);
  }
}

/** A console call's arguments as one line (`%s`/`%d`/`%o` are not interpreted). */
export function formatArgs(args: readonly unknown[]): string {
  return args.map(formatArg).join(' ');
}

/** Routes `console.log/info/debug/trace/warn/error` to the job's log. */
export function installConsole(host: Host): void {
  const line = (level: LogLevel) => (...args: unknown[]) => host.log(level, formatArgs(args));
  const previous = ((globalThis as unknown as { console?: object }).console ?? {}) as object;
  const replacement = {
    ...previous,
    log: line('info'),
    info: line('info'),
    debug: line('debug'),
    trace: line('trace'),
    warn: line('warn'),
    error: line('error'),
  };
  try {
    (globalThis as { console: unknown }).console = replacement;
  } catch {
    // a frozen console stays as it is: stdout still reaches the log
  }
}
