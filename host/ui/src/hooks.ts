import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api';

export interface Loaded<T> {
  data?: T;
  error?: ApiError;
  /** The first answer (or error) for the current arguments has come. */
  loaded: boolean;
  reload: () => void;
}

function asApiError(e: unknown): ApiError {
  return e instanceof ApiError ? e : new ApiError(0, 'client', (e as Error)?.message ?? String(e));
}

/**
 * Loads `load()` now and whenever `deps` change, then every `everyMs` (0:
 * once). Answers to superseded loads are dropped.
 */
export function usePoll<T>(load: () => Promise<T>, deps: unknown[], everyMs = 0): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: ApiError; loaded: boolean }>({ loaded: false });
  const runRef = useRef<() => void>(() => {});
  useEffect(() => {
    let alive = true;
    let timer: number | undefined;
    let seq = 0;
    setState({ loaded: false });
    const run = async () => {
      window.clearTimeout(timer);
      const mine = ++seq;
      try {
        const data = await load();
        if (alive && mine === seq) setState({ data, loaded: true });
      } catch (e) {
        if (alive && mine === seq) setState((s) => ({ data: s.data, error: asApiError(e), loaded: true }));
      }
      if (alive && mine === seq && everyMs > 0) timer = window.setTimeout(run, everyMs);
    };
    runRef.current = run;
    run();
    return () => {
      alive = false;
      window.clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  const reload = useCallback(() => runRef.current(), []);
  return { ...state, reload };
}

export interface Action {
  run: (fn: () => Promise<unknown>, after?: (result: unknown) => void) => Promise<boolean>;
  busy: boolean;
  error: ApiError | null;
  clear: () => void;
}

/** One user action at a time, with its error kept to show. */
export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const run = useCallback(async (fn: () => Promise<unknown>, after?: (result: unknown) => void) => {
    setBusy(true);
    setError(null);
    try {
      const result = await fn();
      after?.(result);
      return true;
    } catch (e) {
      setError(asApiError(e));
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { run, busy, error, clear: () => setError(null) };
}

/** Re-renders every `ms` (for "3 s ago"). */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = window.setInterval(() => setNow(Date.now()), ms);
    return () => window.clearInterval(t);
  }, [ms]);
  return now;
}
