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

/** The host of the job running now: where console lines go. */
let current: Host | undefined;
/** The console the SDK installed (once per instance), if it could. */
let installed: object | undefined;

/**
 * Routes `console.log/info/debug/trace/warn/error` to the job's log: to
 * `host`, the host of the job starting now, until {@link releaseConsole}.
 *
 * The replacement is installed once per instance, the first time; later
 * jobs of a reused (warm) instance only point it at their own host, so
 * console calls never go through one wrapper per earlier job, nor to an
 * earlier job's host. Between jobs (no job's host set) console calls go
 * to the console the engine had, whose output lands in the job log as
 * `stdout`/`stderr` lines.
 */
export function installConsole(host: Host): void {
  current = host;
  if (installed !== undefined) return;
  const previous = ((globalThis as unknown as { console?: Record<string, unknown> }).console ?? {}) as Record<
    string,
    unknown
  >;
  const line =
    (level: LogLevel, fallback: string) =>
    (...args: unknown[]) => {
      if (current !== undefined) {
        current.log(level, formatArgs(args));
        return;
      }
      const f = previous[fallback];
      if (typeof f === 'function') f.apply(previous, args);
    };
  const replacement = {
    ...previous,
    log: line('info', 'log'),
    info: line('info', 'info'),
    debug: line('debug', 'debug'),
    trace: line('trace', 'trace'),
    warn: line('warn', 'warn'),
    error: line('error', 'error'),
  };
  try {
    (globalThis as { console: unknown }).console = replacement;
    installed = replacement;
  } catch {
    // a frozen console stays as it is: stdout still reaches the log
  }
}

/** Ends `host`'s hold on the console (its job's run has returned). */
export function releaseConsole(host: Host): void {
  if (current === host) current = undefined;
}
