// Small shared pieces: badges, errors, the confirmation dialog, JSON, meters.
import type { ComponentChildren, TargetedSubmitEvent } from 'preact';
import { createContext } from 'preact';
import { useContext, useEffect, useRef, useState } from 'preact/hooks';
import type { ApiError } from './api';
import type { Me } from './types';
import { clock, fullTime, json, ago, proseParts } from './format';

export const MeContext = createContext<Me>({ name: '', role: 'reader' });
export const useMe = () => useContext(MeContext);

const reads = (me: Me) => me.role === 'admin' || me.role === 'deployer' || me.role === 'reader';

/** What a role may do (the API enforces it; the UI offers only that). A
 * scoped token's lists hold only its queues and handlers (the API filters
 * them); the hosts and the audit log are not its to see. */
export const can = {
  administer: (me: Me) => me.role === 'admin',
  deploy: (me: Me) => me.role === 'admin' || me.role === 'deployer',
  actOnJobs: (me: Me) => me.role === 'admin' || me.role === 'deployer' || me.role === 'producer',
  readFigures: reads,
  readFleet: (me: Me) => reads(me) && !me.scope,
  readSchedules: reads,
  trigger: (me: Me) => me.role === 'admin' || me.role === 'deployer' || me.role === 'cron',
  readSecrets: (me: Me) => me.role === 'admin' || me.role === 'deployer',
};

export function Badge(props: { kind: string; children?: ComponentChildren; testid?: string; title?: string }) {
  return (
    <span class={`badge b-${props.kind.replace(/[^a-z0-9_-]/gi, '')}`} data-testid={props.testid} title={props.title}>
      {props.children ?? props.kind}
    </span>
  );
}

/** A message from the API, its backticked names and values set as code. */
export function Prose(props: { text: string }) {
  return (
    <>
      {proseParts(props.text).map((part, i) => (part.code ? <code key={i}>{part.text}</code> : part.text))}
    </>
  );
}

export function ErrorBox(props: { error?: ApiError | null; testid?: string }) {
  if (!props.error) return null;
  return (
    <div class="error" role="alert" data-testid={props.testid ?? 'error'} data-code={props.error.code}>
      <Prose text={props.error.message} />
    </div>
  );
}

/** The page of one view: a heading, and `data-ready` once its first load came. */
export function View(props: {
  name: string;
  title: ComponentChildren;
  ready: boolean;
  actions?: ComponentChildren;
  children?: ComponentChildren;
}) {
  return (
    <section class="view" data-testid={`view-${props.name}`} data-ready={props.ready ? 'true' : 'false'}>
      <header class="view-head">
        <h1>{props.title}</h1>
        {props.actions && <div class="actions">{props.actions}</div>}
      </header>
      {props.children}
    </section>
  );
}

export function Loading() {
  return <p class="muted">Loading…</p>;
}

export function Time(props: { ms?: number | null }) {
  if (!props.ms) return <span class="muted">—</span>;
  return (
    <time dateTime={new Date(props.ms).toISOString()} title={`${fullTime(props.ms)} (${ago(props.ms)})`}>
      {clock(props.ms)}
    </time>
  );
}

export function Json(props: { value: unknown; testid?: string }) {
  return (
    <pre class="json" data-testid={props.testid}>
      {json(props.value)}
    </pre>
  );
}

export function Meter(props: { used: number; total: number; label: string; testid?: string }) {
  const pct = props.total > 0 ? Math.min(100, (props.used / props.total) * 100) : 0;
  return (
    <div class="meter" data-testid={props.testid} title={`${pct.toFixed(0)}%`}>
      <div class="meter-track">
        <div class={`meter-fill${pct >= 90 ? ' hot' : ''}`} style={{ width: `${pct}%` }} />
      </div>
      <span class="meter-label">{props.label}</span>
    </div>
  );
}

/**
 * A table in a box that scrolls sideways when the table is wider than the
 * screen. Then the first column (mostly the row's key: a job, a queue, a handler)
 * stays in view while the rest scrolls under it, and a line above the
 * table says there is more to the right until the user has scrolled there.
 */
export function TableBox(props: { children: ComponentChildren; testid?: string }) {
  const box = useRef<HTMLDivElement>(null);
  const table = useRef<HTMLTableElement>(null);
  // 'none': the table fits; 'more': columns hidden to the right; 'end': scrolled to them.
  const [overflow, setOverflow] = useState<'none' | 'more' | 'end'>('none');
  useEffect(() => {
    const el = box.current;
    if (!el || !table.current) return;
    const measure = () => {
      const hidden = el.scrollWidth - el.clientWidth;
      setOverflow(hidden <= 1 ? 'none' : el.scrollLeft >= hidden - 1 ? 'end' : 'more');
    };
    measure();
    // The box resizes with the window; the table, with its rows.
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    ro.observe(table.current);
    el.addEventListener('scroll', measure, { passive: true });
    return () => {
      ro.disconnect();
      el.removeEventListener('scroll', measure);
    };
  }, []);
  return (
    <>
      {overflow === 'more' && (
        <p class="scroll-hint muted small" data-testid="scroll-hint">
          More columns to the right: scroll the table sideways →
        </p>
      )}
      <div
        class={overflow === 'none' ? 'table-box' : 'table-box scrolls'}
        data-testid={props.testid}
        data-overflow={overflow}
        ref={box}
      >
        <table ref={table}>{props.children}</table>
      </div>
    </>
  );
}

export function Facts(props: { children: ComponentChildren; testid?: string }) {
  return (
    <dl class="facts" data-testid={props.testid}>
      {props.children}
    </dl>
  );
}

export function Fact(props: { label: string; children: ComponentChildren; testid?: string }) {
  return (
    <div class="fact">
      <dt>{props.label}</dt>
      <dd data-testid={props.testid}>{props.children}</dd>
    </div>
  );
}

export function Card(props: { title?: ComponentChildren; children: ComponentChildren; testid?: string; class?: string }) {
  return (
    <section class={`card ${props.class ?? ''}`} data-testid={props.testid}>
      {props.title && <h2>{props.title}</h2>}
      {props.children}
    </section>
  );
}

// ---- the confirmation dialog (in the page, so tests can click it) ----

export interface ConfirmRequest {
  title: string;
  message?: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  /** Ask for a free-text reason (cancel). */
  reasonLabel?: string;
}
type Pending = ConfirmRequest & { resolve: (answer: string | false) => void };
let showDialog: ((p: Pending) => void) | null = null;

/** Asks; resolves with the reason text ('' when none is asked) or false. */
export function confirmAction(request: ConfirmRequest): Promise<string | false> {
  return new Promise((resolve) => {
    if (!showDialog) resolve(false);
    else showDialog({ ...request, resolve });
  });
}

export function DialogHost() {
  const [pending, setPending] = useState<Pending | null>(null);
  const [reason, setReason] = useState('');
  const okRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    showDialog = (p) => {
      setReason('');
      setPending(p);
    };
    return () => {
      showDialog = null;
    };
  }, []);
  useEffect(() => {
    if (!pending) return;
    okRef.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') answer(false);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [pending]);
  if (!pending) return null;
  function answer(value: string | false) {
    pending?.resolve(value);
    setPending(null);
  }
  const onSubmit = (e: TargetedSubmitEvent<HTMLFormElement>) => {
    e.preventDefault();
    answer(reason);
  };
  return (
    <div class="backdrop" onClick={(e) => e.target === e.currentTarget && answer(false)}>
      <div class="dialog" role="dialog" aria-modal="true" aria-labelledby="dialog-title" data-testid="confirm-dialog">
        <form onSubmit={onSubmit}>
        <h2 id="dialog-title">{pending.title}</h2>
        {pending.message && <div class="dialog-body">{pending.message}</div>}
        {pending.reasonLabel && (
          <label class="field">
            <span>{pending.reasonLabel}</span>
            <input
              type="text"
              maxLength={500}
              value={reason}
              data-testid="confirm-reason"
              onInput={(e) => setReason(e.currentTarget.value)}
            />
          </label>
        )}
        <div class="dialog-actions">
          <button type="button" data-testid="confirm-cancel" onClick={() => answer(false)}>
            Go back
          </button>
          <button type="submit" ref={okRef} class={pending.danger ? 'danger' : 'primary'} data-testid="confirm-ok">
            {pending.confirmLabel}
          </button>
        </div>
        </form>
      </div>
    </div>
  );
}
