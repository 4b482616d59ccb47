import { useEffect, useRef, useState } from 'preact/hooks';
import { api, followJob, ApiError } from '../api';
import { usePoll, useAction, useNow } from '../hooks';
import { bytes, clock, duration, num, ago, shortDigest, compact, plural } from '../format';
import { attemptsAllowed, type JobDetails, type Timeline } from '../types';
import {
  Badge, Card, ErrorBox, Fact, Facts, Json, Loading, Prose, TableBox, View, Time, can, confirmAction, useMe,
} from '../ui';
import { Waterfall, endClass } from '../waterfall';
import { Transcript } from './Transcript';
import { handlerHref, href, jobHref, navigate, queueHref } from '../router';

/** `<prefix>:<queue>:<id>` (BullMQ's `parentKey`) as a job ref, `<queue>:<id>`. */
const parentRef = (key: string): string => key.split(':').slice(-2).join(':');

const FINISHED = new Set(['completed', 'failed']);

type Live = 'connecting' | 'live' | 'finished' | 'off';

export function Job(props: { jobRef: string }) {
  const ref = props.jobRef;
  const me = useMe();
  const now = useNow(1000);
  const job = usePoll(() => api.job(ref), [ref], 4000);
  const timeline = usePoll(() => api.timeline(ref), [ref], 5000);
  const queueName = ref.slice(0, ref.indexOf(':'));
  const queue = usePoll(() => api.queue(queueName), [queueName], 0);
  const action = useAction();
  const [live, setLive] = useState<Live>('connecting');
  const [epoch, setEpoch] = useState(0);
  const finished = useRef(false);
  const reloadTimer = useRef<number | undefined>(undefined);

  // Live: the job's SSE stream; each event re-reads the job and its timeline.
  useEffect(() => {
    const ctl = new AbortController();
    setLive('connecting');
    followJob(
      ref,
      ctl.signal,
      (ev) => {
        if (ev.event === 'state') {
          try {
            finished.current = FINISHED.has(JSON.parse(ev.data).state);
          } catch {
            // keep what we knew
          }
        } else if (ev.event === 'completed' || ev.event === 'failed') {
          finished.current = true;
        }
        setLive(finished.current ? 'finished' : 'live');
        window.clearTimeout(reloadTimer.current);
        reloadTimer.current = window.setTimeout(() => {
          job.reload();
          timeline.reload();
        }, 30);
      },
      () => !finished.current,
      () => setLive('off'),
    );
    return () => {
      ctl.abort();
      window.clearTimeout(reloadTimer.current);
    };
  }, [ref, epoch]);

  // A finished job that runs again (retried) gets its stream back; the
  // timeline follows the job's runs.
  const state = job.data?.state;
  const started = job.data?.attemptsStarted;
  const prevState = useRef<string | undefined>(undefined);
  useEffect(() => {
    const was = prevState.current;
    prevState.current = state;
    if (was && state && FINISHED.has(was) && !FINISHED.has(state)) {
      finished.current = false;
      setEpoch((e) => e + 1);
    }
    if (was && state !== was) timeline.reload();
  }, [state]);
  useEffect(() => {
    if (started !== undefined) timeline.reload();
  }, [started]);

  const j = job.data;
  const notFound = job.error?.notFound;
  if (notFound || (!j && job.loaded)) {
    return (
      <View name="job" title={<>Job <span class="mono">{ref}</span></>} ready={job.loaded}>
        <ErrorBox error={job.error} testid={notFound ? 'not-found' : 'error'} />
        <p>
          <a href={href(['jobs'], { queue: queueName })}>Back to the jobs of {queueName}</a>
        </p>
      </View>
    );
  }
  if (!j) {
    return (
      <View name="job" title={<>Job <span class="mono">{ref}</span></>} ready={false}>
        <Loading />
      </View>
    );
  }

  const maxAttempts = attemptsAllowed(j);
  // A failed job with no run measured and none in its history failed before
  // a guest started (cancelled while it waited, dropped or skipped by flow
  // control, past its time to finish): BullMQ's `processedOn` is only when
  // it was taken to be failed.
  const neverRan =
    j.state === 'failed' && j.metrics.wallTimeMs == null && timeline.data !== undefined && timeline.data.runs.length === 0;
  const actions = can.actOnJobs(me) ? <JobActions job={j} onDone={() => job.reload()} action={action} /> : null;
  return (
    <View
      name="job"
      ready={job.loaded && timeline.loaded && queue.loaded}
      title={
        <>
          Job <span class="mono">{ref}</span> <Badge kind={j.state} testid="job-state" />
          {j.failureKind && (
            <>
              {' '}
              <Badge kind="failure" testid="job-failure-kind">
                {j.failureKind}
              </Badge>
            </>
          )}{' '}
          <span class={`live live-${live}`} data-testid="job-live" title="Server-Sent Events from /v1/jobs/{ref}/events">
            {live === 'live' ? '● live' : live === 'connecting' ? '○ connecting' : live === 'finished' ? '' : '○ not live'}
          </span>
        </>
      }
      actions={actions}
    >
      <ErrorBox error={action.error ?? (job.error && !job.error.notFound ? job.error : null)} />
      {j.waiting && (
        <div class="callout wait" data-testid="job-waiting" data-kind={j.waiting.kind}>
          <strong>Why it is not running: </strong>
          <span data-testid="job-waiting-message">
            <Prose text={j.waiting.message} />
          </span>
          {j.waiting.until ? (
            <span class="muted">
              {' '}
              (until {clock(j.waiting.until)}, {ago(j.waiting.until, now)})
            </span>
          ) : null}
        </div>
      )}
      {j.failedReason && (
        <div class={`callout ${j.state === 'failed' ? 'bad' : 'warn'}`} data-testid="job-failure">
          <strong>{j.state === 'failed' ? 'Failed: ' : 'Last attempt failed: '}</strong>
          <span class="mono wrap" data-testid="job-failed-reason">
            <FailedReason reason={j.failedReason} timeline={timeline.data} />
          </span>
        </div>
      )}
      {!(j.progress === 0 && FINISHED.has(j.state)) && <Progress value={j.progress} state={j.state} />}
      <div class="grid2">
        <Card title="Job" testid="job-facts">
          <Facts>
            <Fact label="Name">{j.name}</Fact>
            <Fact label="Queue">
              <a href={queueHref(j.queue)}>{j.queue}</a>
            </Fact>
            <Fact label="Attempts" testid="job-attempts">
              {num(j.attemptsMade)} made
              {maxAttempts === null ? '' : ` of ${num(maxAttempts)}`}, {num(j.attemptsStarted)}{' '}
              started{j.stalledCount ? `, ${num(j.stalledCount)} stalled` : ''}
            </Fact>
            <Fact label="Enqueued">
              <Time ms={j.timestamp} /> {j.producer ? <span class="muted">by {j.producer}</span> : null}
            </Fact>
            <Fact label="Last started" testid="job-last-started">
              {neverRan ? (
                <span class="muted">never ran</span>
              ) : (
                <>
                  <Time ms={j.processedOn} />
                  {j.processedOn ? <span class="muted"> ({duration(j.processedOn - j.timestamp)} after enqueue)</span> : null}
                </>
              )}
            </Fact>
            <Fact label="Finished" testid="job-finished">
              <Time ms={j.finishedOn} />
              {j.finishedOn && j.processedOn && !neverRan ? (
                <span class="muted"> ({duration(j.finishedOn - j.processedOn)} after its last start)</span>
              ) : null}
            </Fact>
            <Fact label="Handler version" testid="job-handler">
              {j.handlerDigest ? (
                <a
                  class="mono"
                  href={queue.data ? handlerHref(queue.data.handler, j.handlerDigest) : undefined}
                  title={j.handlerDigest}
                >
                  {queue.data ? `${queue.data.handler} @ ` : ''}
                  {shortDigest(j.handlerDigest)}
                </a>
              ) : (
                <span class="muted">not pinned yet</span>
              )}
            </Fact>
            <Fact label="Host">{j.processedByHost ?? <span class="muted">—</span>}</Fact>
            {j.priority ? <Fact label="Priority">{num(j.priority)}</Fact> : null}
            {j.delay ? <Fact label="Delay">{duration(j.delay)}</Fact> : null}
            {j.batch ? (
              <Fact label="Batch" testid="job-batch">
                <span class="mono">{j.batch.id}</span> <span class="muted">({num(j.batch.size)} jobs, one run)</span>
              </Fact>
            ) : null}
            {j.parentKey ? (
              <Fact label="Parent" testid="job-parent">
                <a class="mono" href={jobHref(parentRef(j.parentKey))}>
                  {parentRef(j.parentKey)}
                </a>
              </Fact>
            ) : null}
          </Facts>
        </Card>
        <Card title="Cost of the last run" testid="job-metrics">
          <Facts>
            <Fact label="Fuel" testid="metric-fuel">
              {j.metrics.fuelUsed != null ? num(j.metrics.fuelUsed) : <span class="muted">unmetered or not yet</span>}
            </Fact>
            <Fact label="Peak memory" testid="metric-memory">
              {bytes(j.metrics.peakMemoryBytes)}
            </Fact>
            <Fact label="Wall time" testid="metric-wall">
              {duration(j.metrics.wallTimeMs)}
            </Fact>
            <Fact label="HTTP requests" testid="metric-http">
              {j.metrics.httpRequests != null ? (
                <>
                  {num(j.metrics.httpRequests)} sent, {num(j.metrics.httpRefused ?? 0)} refused
                </>
              ) : (
                <span class="muted">none tried</span>
              )}
            </Fact>
            <Fact label="HTTP bytes">
              {j.metrics.httpRequests != null ? (
                <>
                  {bytes(j.metrics.httpBytesOut ?? 0)} out, {bytes(j.metrics.httpBytesIn ?? 0)} in
                </>
              ) : (
                <span class="muted">—</span>
              )}
            </Fact>
          </Facts>
        </Card>
      </div>
      <TimelineCards job={j} timeline={timeline.data} error={timeline.error} now={now} />
      <Transcript jobRef={ref} handler={queue.data?.handler} runs={timeline.data?.runs.length} />
      <div class="grid2">
        <Card title="Data" testid="job-data">
          <Json value={j.data} />
        </Card>
        <Card title="Result" testid="job-result">
          {j.state === 'completed' ? (
            <Json value={j.returnvalue} testid="job-returnvalue" />
          ) : (
            <p class="muted">{j.state === 'failed' ? 'None: it failed.' : 'None yet.'}</p>
          )}
        </Card>
      </div>
      <Card title={`Log (${plural(j.logCount, 'line')}${j.logCount > j.logs.length ? `, first ${num(j.logs.length)} shown` : ''})`} testid="job-logs">
        {j.logs.length ? <pre class="logs">{j.logs.join('\n')}</pre> : <p class="muted">No log line.</p>}
      </Card>
    </View>
  );
}

/**
 * A job's failure reason. A flow parent failed by a child says so with the
 * child's Redis key (`child bull:extract:42 failed`): that becomes a link to
 * the child, with the child's own reason beside it.
 */
function FailedReason(props: { reason: string; timeline?: Timeline }) {
  const m = /^child (\S+) failed$/.exec(props.reason);
  const child = m && props.timeline?.children.find((c) => m[1].endsWith(`:${c.ref}`));
  if (!child) return <Prose text={props.reason} />;
  return (
    <>
      child{' '}
      <a href={jobHref(child.ref)} data-testid="failed-child">
        {child.ref}
      </a>{' '}
      failed
      {child.outcome != null && (
        <span data-testid="failed-child-reason">
          : <Prose text={child.outcome} />
        </span>
      )}
    </>
  );
}

/** The job's reported progress; a failed job's bar is drawn as failed, where it stopped. */
function Progress(props: { value: unknown; state: string }) {
  const v = props.value;
  if (typeof v === 'number') {
    const pct = Math.max(0, Math.min(100, v));
    const failed = props.state === 'failed';
    return (
      <div class="progress" data-testid="job-progress" data-value={String(v)} data-failed={failed ? 'true' : 'false'}>
        <div class="progress-track">
          <div class={failed ? 'progress-fill failed' : 'progress-fill'} style={{ width: `${pct}%` }} />
        </div>
        <span class="progress-label">{num(v)}%</span>
      </div>
    );
  }
  if (v === null || v === undefined || v === false) return null;
  return (
    <Card title="Progress" testid="job-progress">
      <Json value={v} />
    </Card>
  );
}

function JobActions(props: { job: JobDetails; onDone: () => void; action: ReturnType<typeof useAction> }) {
  const { job, action } = props;
  const ref = `${job.queue}:${job.id}`;
  const finished = FINISHED.has(job.state);
  async function cancel() {
    const reason = await confirmAction({
      title: `Cancel job ${ref}?`,
      message: (
        <p>
          It fails as <code>cancelled</code> and is not retried{job.state === 'active' ? '; its guest is stopped now' : ''}.
        </p>
      ),
      confirmLabel: 'Cancel job',
      danger: true,
      reasonLabel: 'Reason (optional, goes into the failure reason)',
    });
    if (reason !== false) await action.run(() => api.cancel(ref, reason), props.onDone);
  }
  async function remove() {
    const ok = await confirmAction({
      title: `Remove job ${ref}?`,
      message: <p>Its data, result, steps and log are deleted. This cannot be undone.</p>,
      confirmLabel: 'Remove job',
      danger: true,
    });
    if (ok !== false) await action.run(() => api.remove(ref), () => navigate(href(['jobs'], { queue: job.queue })));
  }
  // A failed job's retry is what the button is for; a completed one's runs
  // work that already succeeded again, so it asks first, as pausing does.
  async function retry() {
    if (job.state === 'completed') {
      const ok = await confirmAction({
        title: `Run completed job ${ref} again?`,
        message: (
          <p>
            Its result is cleared and it goes back to waiting to run again. Its recorded durable steps are kept and not
            run again, but whatever it does outside a step (an outbound request, say) happens again.
          </p>
        ),
        confirmLabel: 'Run again',
      });
      if (ok === false) return;
    }
    await action.run(() => api.retry(ref), props.onDone);
  }
  return (
    <>
      {finished && (
        <button class="primary" disabled={action.busy} data-testid="job-retry" onClick={retry}>
          Retry
        </button>
      )}
      {job.state === 'delayed' && (
        <button disabled={action.busy} data-testid="job-promote" onClick={() => action.run(() => api.promote(ref), props.onDone)}>
          Run now
        </button>
      )}
      {!finished && job.state !== 'unknown' && (
        <button class="danger" disabled={action.busy} data-testid="job-cancel" onClick={cancel}>
          Cancel
        </button>
      )}
      {job.state !== 'active' && (
        <button class="danger" disabled={action.busy} data-testid="job-remove" onClick={remove}>
          Remove
        </button>
      )}
    </>
  );
}

function TimelineCards(props: { job: JobDetails; timeline?: Timeline; error?: ApiError; now: number }) {
  const t = props.timeline;
  if (!t) return props.error ? <ErrorBox error={props.error} /> : <Loading />;
  return (
    <>
      <Card title="Timeline" testid="job-timeline">
        <Waterfall job={props.job} timeline={t} now={props.now} />
        <h3>Runs</h3>
        {t.runs.length === 0 ? (
          <p class="muted">No run finished yet.</p>
        ) : (
          <TableBox testid="runs-table">
            <thead>
              <tr>
                <th class="num">Run</th>
                <th>Started</th>
                <th>Ended</th>
                <th class="num">Wall time</th>
                <th class="num">Fuel</th>
                <th class="num">Peak memory</th>
                <th class="num">HTTP sent / refused</th>
                <th class="num">Bytes out / in</th>
                <th>Host</th>
              </tr>
            </thead>
            <tbody>
              {t.runs.map((r) => (
                <tr key={r.run} data-testid="run-row" data-end={r.end}>
                  <td class="num">{r.run}</td>
                  <td>
                    <Time ms={r.startedAt} />
                  </td>
                  <td>
                    <Badge kind={endClass(r.end)} testid="run-end">
                      {r.end}
                    </Badge>
                    {r.parkedOn && (
                      <span class="muted" data-testid="run-parked-on">
                        {' '}
                        on <code>{r.parkedOn}</code>
                      </span>
                    )}
                    {r.reason && (
                      <div class="muted wrap" data-testid="run-reason">
                        <Prose text={r.reason} />
                      </div>
                    )}
                  </td>
                  <td class="num">{duration(r.wallTimeMs)}</td>
                  <td class="num">{r.fuelUsed != null ? num(r.fuelUsed) : 'unmetered'}</td>
                  <td class="num">{bytes(r.peakMemoryBytes)}</td>
                  <td class="num">
                    {num(r.httpRequests)} / {num(r.httpRefused)}
                  </td>
                  <td class="num">
                    {bytes(r.httpBytesOut)} / {bytes(r.httpBytesIn)}
                  </td>
                  <td class="mono">{r.host}</td>
                </tr>
              ))}
            </tbody>
          </TableBox>
        )}
      </Card>
      <Card title={`Durable steps (${t.steps.length})`} testid="job-steps">
        {t.steps.length === 0 ? (
          <p class="muted">No step recorded.</p>
        ) : (
          <TableBox>
            <thead>
              <tr>
                <th class="num">#</th>
                <th>Step</th>
                <th>Recorded</th>
                <th>Result</th>
              </tr>
            </thead>
            <tbody>
              {t.steps.map((s, i) => (
                <tr key={s.id} data-testid="step-row" data-step={s.id}>
                  <td class="num">{s.at ? i + 1 : ''}</td>
                  <td class="mono">{s.id}</td>
                  <td>
                    <Time ms={s.at} />
                  </td>
                  <td>
                    <code class="wrap">{compact(s.result, 300)}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </TableBox>
        )}
        {t.sleeps.length > 0 && (
          <>
            <h3>Sleeps</h3>
            <TableBox testid="job-sleeps">
              <thead>
                <tr>
                  <th>Sleep</th>
                  <th>Wakes</th>
                </tr>
              </thead>
              <tbody>
                {t.sleeps.map((s) => (
                  <tr key={s.id} data-testid="sleep-row">
                    <td class="mono">{s.id}</td>
                    <td>
                      {clock(s.until)} <span class="muted">({ago(s.until, props.now)})</span>
                    </td>
                  </tr>
                ))}
              </tbody>
            </TableBox>
          </>
        )}
        {t.batch && (
          <>
            <h3>Batch {t.batch.id}</h3>
            <p class="muted">
              {num(t.batch.size)} jobs ran in one instance; the cost above is this job's share (fuel and wall time
              split evenly, the instance's peak memory).
            </p>
            <TableBox testid="job-batch-jobs">
              <thead>
                <tr>
                  <th>Job</th>
                  <th>State</th>
                </tr>
              </thead>
              <tbody>
                {t.batch.jobs.map((b) => (
                  <tr key={b.ref} data-testid="batch-row" data-state={b.state}>
                    <td>
                      <a class="mono" href={jobHref(b.ref)}>
                        {b.ref}
                      </a>
                      {b.ref === `${props.job.queue}:${props.job.id}` ? <span class="muted"> (this job)</span> : null}
                    </td>
                    <td>
                      <Badge kind={b.state === 'completed' ? 'ok' : b.state === 'unfinished' ? 'parked' : 'bad'}>{b.state}</Badge>
                    </td>
                  </tr>
                ))}
              </tbody>
            </TableBox>
          </>
        )}
        {t.children.length > 0 && (
          <>
            <h3>Children</h3>
            <TableBox testid="job-children">
              <thead>
                <tr>
                  <th>Child</th>
                  <th>State</th>
                  <th>Result or reason</th>
                </tr>
              </thead>
              <tbody>
                {t.children.map((c) => (
                  <tr key={c.ref} data-testid="child-row" data-state={c.state}>
                    <td>
                      <a class="mono" href={jobHref(c.ref)}>
                        {c.ref}
                      </a>
                    </td>
                    <td>
                      <Badge kind={c.state === 'completed' ? 'ok' : c.state === 'pending' ? 'parked' : 'bad'}>{c.state}</Badge>
                    </td>
                    <td>{c.outcome != null ? <code class="wrap">{compact(c.outcome, 300)}</code> : '—'}</td>
                  </tr>
                ))}
              </tbody>
            </TableBox>
          </>
        )}
        {t.waits.length > 0 && (
          <>
            <h3>Waits</h3>
            <TableBox testid="job-waits">
              <thead>
                <tr>
                  <th>Wait</th>
                  <th>Waits for</th>
                  <th>Deadline</th>
                  <th>Outcome</th>
                  <th>What came</th>
                </tr>
              </thead>
              <tbody>
                {t.waits.map((w) => (
                  <tr key={w.id} data-testid="wait-row" data-outcome={w.outcome}>
                    <td class="mono">{w.id}</td>
                    <td>{w.waitsFor}</td>
                    <td>
                      <Time ms={w.deadline} />
                    </td>
                    <td>
                      <Badge kind={w.outcome === 'came' ? 'ok' : w.outcome === 'pending' ? 'parked' : 'bad'}>{w.outcome}</Badge>
                    </td>
                    <td>{w.value !== undefined && w.value !== null ? <code class="wrap">{compact(w.value, 300)}</code> : '—'}</td>
                  </tr>
                ))}
              </tbody>
            </TableBox>
          </>
        )}
      </Card>
    </>
  );
}
