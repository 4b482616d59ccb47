// Hash routing: `#/jobs/payments:12`, `#/jobs?queue=payments&state=failed`.
import { useEffect, useMemo, useState } from 'preact/hooks';

export interface Route {
  /** Decoded path segments: `['jobs', 'payments:12']`. */
  parts: string[];
  query: URLSearchParams;
}

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#/, '');
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  const query = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
  const parts = path
    .split('/')
    .filter(Boolean)
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return p;
      }
    });
  return { parts, query };
}

/** Encodes one path segment, keeping `:` readable (job refs). */
export function seg(value: string): string {
  return encodeURIComponent(value).replace(/%3A/gi, ':');
}

export function href(parts: string[], query?: Record<string, string | number | undefined | null>): string {
  let h = '#/' + parts.map(seg).join('/');
  if (query) {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) {
      if (v !== undefined && v !== null && v !== '') qs.set(k, String(v));
    }
    const s = qs.toString();
    if (s) h += '?' + s;
  }
  return h;
}

export const jobHref = (ref: string) => href(['jobs', ref]);
export const queueHref = (q: string) => href(['queues', q]);
export const handlerHref = (name: string, digest?: string | null) =>
  href(['handlers', name], digest ? { digest } : undefined);

export function navigate(to: string, replace = false): void {
  if (replace) {
    history.replaceState(null, '', to);
    window.dispatchEvent(new HashChangeEvent('hashchange'));
  } else {
    location.hash = to.replace(/^#/, '');
  }
}

export function useRoute(): Route {
  const [hash, setHash] = useState(() => location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    window.addEventListener('hashchange', on);
    // The hash may have moved between the first render and this
    // subscription (a link followed at once): catch up with it.
    on();
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return useMemo(() => parseHash(hash), [hash]);
}
