// Timers a job leaves behind. On StarlingMonkey `run` returns as soon as the
// handler's promise settles; a `setTimeout` or `setInterval` still pending
// then stays in the engine's event loop and, on a reused (warm) instance,
// fires during a later job — its console lines in that job's log. So the
// SDK wraps the timer globals (once, where the engine has them: QuickJS has
// none) and clears, when a job starts and when it ends, every timer set
// since then that has neither fired nor been cleared: a timer never
// outlives the job that set it, as on a fresh instance, which is dropped
// with its timers.

type TimerFn = (...args: unknown[]) => unknown;

interface NativeTimers {
  setTimeout: TimerFn;
  clearTimeout: TimerFn;
  setInterval: TimerFn | undefined;
  clearInterval: TimerFn | undefined;
}

/** Timers set since the last {@link clearTimers} and still pending, by id. */
const pending = new Map<unknown, 'timeout' | 'interval'>();
let native: NativeTimers | undefined;
let unavailable = false;

/** Wraps the timer globals (once); whether the engine has timers at all. */
function install(): boolean {
  if (native !== undefined) return true;
  if (unavailable) return false;
  const g = globalThis as Record<string, unknown>;
  const fn = (name: string) => (typeof g[name] === 'function' ? (g[name] as TimerFn) : undefined);
  const set = fn('setTimeout');
  const clear = fn('clearTimeout');
  if (set === undefined || clear === undefined) {
    unavailable = true;
    return false;
  }
  const timers: NativeTimers = { setTimeout: set, clearTimeout: clear, setInterval: fn('setInterval'), clearInterval: fn('clearInterval') };
  const wrapped: Record<string, TimerFn> = {
    setTimeout(callback: unknown, ...rest: unknown[]) {
      if (typeof callback !== 'function') return set.call(g, callback, ...rest);
      const id: unknown = set.call(
        g,
        function (this: unknown, ...args: unknown[]) {
          pending.delete(id);
          return (callback as TimerFn).apply(this, args);
        },
        ...rest,
      );
      pending.set(id, 'timeout');
      return id;
    },
    clearTimeout(id: unknown) {
      pending.delete(id);
      return clear.call(g, id);
    },
  };
  const setInterval = timers.setInterval;
  const clearInterval = timers.clearInterval;
  if (setInterval !== undefined && clearInterval !== undefined) {
    wrapped.setInterval = (...args: unknown[]) => {
      const id = setInterval.apply(g, args);
      pending.set(id, 'interval');
      return id;
    };
    wrapped.clearInterval = (id: unknown) => {
      pending.delete(id);
      return clearInterval.call(g, id);
    };
  }
  try {
    for (const [name, f] of Object.entries(wrapped)) g[name] = f;
  } catch {
    // read-only timer globals stay as they are (and untracked)
    try {
      Object.assign(g, { setTimeout: set, clearTimeout: clear, setInterval, clearInterval });
    } catch {
      // nothing more to do
    }
    unavailable = true;
    return false;
  }
  native = timers;
  return true;
}

/**
 * Clears every timer set (through the globals) since the last call that is
 * still pending; how many. `run` calls it when a job starts and when it
 * ends.
 */
export function clearTimers(): number {
  if (!install() || pending.size === 0) return 0;
  const n = pending.size;
  for (const [id, kind] of pending) {
    const clear = kind === 'interval' ? native!.clearInterval! : native!.clearTimeout;
    clear.call(globalThis, id);
  }
  pending.clear();
  return n;
}
