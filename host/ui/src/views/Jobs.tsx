import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api';
import { useAction, usePoll } from '../hooks';
import { duration, num } from '../format';
import {
  FAILURE_KINDS, LIST_STATES, attemptsAllowed, type JobSnapshot, type ListState, type QueueCounts,
} from '../types';
import { Badge, ErrorBox, Loading, Prose, TableBox, View, Time, can, confirmAction, useMe } from '../ui';
import { href, jobHref, navigate, type Route } from '../router';

const PAGE = 50;

/** How much of a failure's reason a list row shows (the job's page has it whole). */
const REASON_CHARS = 160;

/** The states whose jobs may carry a failure kind (a completed job's: of an earlier attempt). */
const KIND_STATES: ListState[] = ['failed', 'completed'];

function clip(text: string, chars: number): string {
  return text.length > chars ? `${text.slice(0, chars - 1)}…` : text;
}

const STATE_LABELS: Record<ListState, string> = {
  waiting: 'Waiting',
  active: 'Active',
  delayed: 'Delayed',
  prioritized: 'Prioritized',
  'waiting-children': 'Waiting for children',
  completed: 'Completed',
  failed: 'Failed',
};

function countOf(counts: QueueCounts | null | undefined, s: ListState): number | undefined {
  if (!counts) return undefined;
  return s === 'waiting-children' ? counts.waitingChildren : (counts[s] as number);
}

/** Words for a delayed job parked by Airlock (`parked`), not by a BullMQ delay. */
const PARKED: Record<string, string> = {
  sleeping: 'sleeping',
  event: 'waiting for an event',
  token: 'waiting for a token',
};

export function JobStateBadge(props: { job: Pick<JobSnapshot, 'state' | 'failureKind' | 'parked'>; testid?: string }) {
  const parked = props.job.state === 'delayed' && props.job.parked ? PARKED[props.job.parked] : undefined;
  if (parked) {
    return (
      <Badge kind="parked" testid={props.testid} title="delayed in BullMQ">
        {parked}
      </Badge>
    );
  }
  return <Badge kind={props.job.state} testid={props.testid} />;
}

export function Jobs(props: { route: Route }) {
  const me = useMe();
  const params = props.route.query;
  const queue = params.get('queue') ?? '';
  const stateParam = params.get('state') as ListState | null;
  const state: ListState = stateParam && LIST_STATES.includes(stateParam) ? stateParam : 'waiting';
  const search = params.get('q') ?? '';
  const kindParam = params.get('kind') ?? '';
  const kind = KIND_STATES.includes(state) && (FAILURE_KINDS as readonly string[]).includes(kindParam) ? kindParam : '';
  const start = Math.max(0, Number(params.get('start') ?? 0) || 0);
  const queues = usePoll(() => api.queues(), [], 5000);
  const names = (queues.data?.queues ?? []).map((q) => q.queue);
  const current = queues.data?.queues.find((q) => q.queue === queue);

  const go = (next: { queue?: string; state?: ListState; q?: string; kind?: string; start?: number }, replace = false) =>
    navigate(
      href(['jobs'], {
        queue: next.queue ?? queue,
        state: next.state ?? state,
        q: next.q ?? search,
        kind: (next.kind ?? kind) || undefined,
        start: next.start ? next.start : undefined,
      }),
      replace,
    );

  // No queue picked: the first one, on the first tab that has jobs.
  useEffect(() => {
    if (queue || !queues.data?.queues.length) return;
    const first = queues.data.queues[0];
    const busy = (['active', 'waiting', 'prioritized', 'delayed', 'failed', 'completed'] as ListState[]).find(
      (s) => (countOf(first.counts, s) ?? 0) > 0,
    );
    go({ queue: first.queue, state: stateParam ? state : busy ?? 'waiting' }, true);
  }, [queue, queues.data]);

  // The rows and the tabs' counts are read on the same tick (both requests
  // go out at once), so a count does not lag the list it sits over by a
  // poll: they differ at most by what changed between the two reads. The
  // queue list's counts, polled apart, only fill in until the first read.
  const page = usePoll(
    async () => {
      if (!queue) return null;
      const [list, view] = await Promise.all([
        api.jobs(queue, state, start, PAGE, search || undefined, kind || undefined),
        api.queue(queue).catch(() => null),
      ]);
      return { ...list, counts: view?.counts };
    },
    [queue, state, start, search, kind],
    3000,
  );

  const [text, setText] = useState(search);
  const typing = useRef<number | undefined>(undefined);

  // On a narrow screen the tabs scroll sideways: keep the open one in view
  // (again once the counts arrive: they widen every tab).
  const tabs = useRef<HTMLElement>(null);
  const counts = page.data?.counts ?? current?.counts;
  const counted = counts !== undefined;
  useEffect(() => {
    tabs.current?.querySelector('.tab.active')?.scrollIntoView({ block: 'nearest', inline: 'nearest' });
  }, [state, counted]);
  useEffect(() => setText(search), [search]);
  function onSearch(value: string) {
    setText(value);
    window.clearTimeout(typing.current);
    typing.current = window.setTimeout(() => go({ q: value.trim() }, true), 350);
  }

  const jobs = page.data?.jobs ?? [];
  const next = page.data?.next ?? null;
  const showProducer = me.role !== 'producer';
  const action = useAction();
  const [done, setDone] = useState<string | null>(null);
  useEffect(() => setDone(null), [queue, state, kind]);

  async function retryFailed() {
    const which = kind ? `failed jobs of kind ${kind}` : 'failed jobs';
    const ok = await confirmAction({
      title: `Retry the ${which} of ${queue}?`,
      message: <p>Each goes back to waiting, newest first (at most 1,000), keeping its recorded steps.</p>,
      confirmLabel: 'Retry failed jobs',
    });
    if (ok === false) return;
    await action.run(
      () => api.retryFailed(queue, kind || undefined),
      (r) => {
        const n = (r as { retried: string[] }).retried.length;
        setDone(`${num(n)} job${n === 1 ? '' : 's'} retried.`);
        page.reload();
      },
    );
  }

  async function cleanFailed() {
    const ok = await confirmAction({
      title: `Remove the failed jobs of ${queue}?`,
      message: <p>Every failed job of the queue is deleted (at most 1,000 per click), whatever its kind. This cannot be undone.</p>,
      confirmLabel: 'Remove failed jobs',
      danger: true,
    });
    if (ok === false) return;
    await action.run(
      () => api.clean(queue, 'failed'),
      (r) => {
        const n = (r as { removed: string[] }).removed.length;
        setDone(`${num(n)} job${n === 1 ? '' : 's'} removed.`);
        page.reload();
      },
    );
  }
  return (
    <View name="jobs" title="Jobs" ready={queues.loaded && (!queue || page.loaded)}>
      <div class="toolbar">
        <label class="field inline">
          <span>Queue</span>
          <select
            data-testid="queue-picker"
            value={queue}
            onChange={(e) => go({ queue: e.currentTarget.value, start: 0 })}
          >
            {!queue && <option value="">—</option>}
            {names.map((n) => (
              <option value={n} key={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <form class="field inline grow" onSubmit={(e) => (e.preventDefault(), go({ q: text.trim() }, true))}>
          <span>Search</span>
          <input
            type="search"
            placeholder="id, name or data"
            maxLength={200}
            value={text}
            data-testid="job-search"
            onInput={(e) => onSearch(e.currentTarget.value)}
          />
        </form>
        {KIND_STATES.includes(state) && (
          <label class="field inline">
            <span>Failure kind</span>
            <select data-testid="kind-filter" value={kind} onChange={(e) => go({ kind: e.currentTarget.value, start: 0 })}>
              <option value="">any</option>
              {FAILURE_KINDS.map((k) => (
                <option value={k} key={k}>
                  {k}
                </option>
              ))}
            </select>
          </label>
        )}
      </div>
      {state === 'failed' && queue && can.deploy(me) && (
        <div class="toolbar" data-testid="failed-actions">
          <button disabled={action.busy} data-testid="retry-failed" onClick={retryFailed}>
            {kind ? `Retry failed ${kind} jobs` : 'Retry failed jobs'}
          </button>
          <button disabled={action.busy} class="danger" data-testid="clean-failed" onClick={cleanFailed}>
            Remove failed jobs
          </button>
          {done && (
            <span class="muted" data-testid="bulk-done">
              {done}
            </span>
          )}
        </div>
      )}
      <ErrorBox error={action.error} />
      <nav class="tabs" aria-label="Job states" ref={tabs}>
        {LIST_STATES.map((s) => {
          const n = countOf(counts, s);
          return (
            <a
              key={s}
              href={href(['jobs'], { queue, state: s, q: search })}
              class={s === state ? 'tab active' : 'tab'}
              aria-current={s === state ? 'page' : undefined}
              data-testid="state-tab"
              data-state={s}
            >
              {STATE_LABELS[s]}
              {n !== undefined && <span class="count">{num(n)}</span>}
            </a>
          );
        })}
      </nav>
      {me.role === 'producer' && (
        <p class="muted small" data-testid="own-jobs-note">
          Counts are the whole queue's; the list shows only the jobs your token ({me.name}) enqueued.
        </p>
      )}
      <ErrorBox error={queues.error ?? page.error} />
      {!queue ? (
        queues.loaded && <p class="muted">No queue to list.</p>
      ) : !page.loaded ? (
        <Loading />
      ) : jobs.length === 0 ? (
        <p class="muted" data-testid="jobs-empty">
          {next != null
            ? 'No job on this page matches; older pages may.'
            : search
              ? `No ${state} job matches “${search}”${kind ? ` of kind ${kind}` : ''}.`
              : kind
                ? `No ${state} job of kind ${kind}.`
                : `No ${state} job.`}
        </p>
      ) : (
        <TableBox testid="jobs-table">
          <thead>
            <tr>
              <th>Job</th>
              <th>State</th>
              <th>Failure</th>
              <th class="num">Attempts</th>
              <th>Enqueued</th>
              <th>Started</th>
              <th>Finished</th>
              <th class="num">Last run</th>
              {showProducer && <th>Producer</th>}
            </tr>
          </thead>
          <tbody>
            {jobs.map((j) => {
              const ref = `${j.queue}:${j.id}`;
              const max = attemptsAllowed(j);
              return (
                <tr key={ref} data-testid="job-row" data-ref={ref}>
                  <td>
                    <a href={jobHref(ref)} class="mono" data-testid="job-link">
                      {j.id}
                    </a>
                    <div class="muted small">{j.name}</div>
                  </td>
                  <td>
                    <JobStateBadge job={j} />
                  </td>
                  <td>
                    {j.failureKind && j.state === 'failed' ? (
                      <>
                        <Badge kind="failure" testid="job-failure-kind">
                          {j.failureKind}
                        </Badge>
                        {j.failedReason && (
                          <div class="muted small reason" title={j.failedReason} data-testid="job-reason">
                            <Prose text={clip(j.failedReason, REASON_CHARS)} />
                          </div>
                        )}
                      </>
                    ) : j.failureKind ? (
                      <span class="muted small" title="the kind of an earlier attempt's failure">
                        earlier: {j.failureKind}
                      </span>
                    ) : (
                      <span class="muted">—</span>
                    )}
                  </td>
                  <td class="num">
                    {num(j.attemptsMade)}
                    {max ? ` / ${num(max)}` : ''}
                  </td>
                  <td>
                    <Time ms={j.timestamp} />
                  </td>
                  <td>
                    <Time ms={j.processedOn} />
                  </td>
                  <td>
                    <Time ms={j.finishedOn} />
                  </td>
                  <td class="num">
                    {j.finishedOn && j.processedOn ? duration(j.finishedOn - j.processedOn) : '—'}
                  </td>
                  {showProducer && <td>{j.producer ?? <span class="muted">—</span>}</td>}
                </tr>
              );
            })}
          </tbody>
        </TableBox>
      )}
      {queue && page.loaded && (start > 0 || next != null) && (
        <div class="pager">
          <button disabled={start === 0} data-testid="jobs-prev" onClick={() => go({ start: Math.max(0, start - PAGE) })}>
            ← Newer
          </button>
          <span class="muted">
            {num(start + 1)}–{num(start + PAGE)} of this state, newest first
          </span>
          <button disabled={next == null} data-testid="jobs-next" onClick={() => next != null && go({ start: next })}>
            Older →
          </button>
        </div>
      )}
    </View>
  );
}
