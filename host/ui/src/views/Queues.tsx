import { api } from '../api';
import { usePoll, useAction, type Action, type Loaded } from '../hooks';
import { bytes, clock, duration, json, num, compact, shortDigest } from '../format';
import type { Binding, QueueView, EgressRule, Retention, ListState, SecretList, QueueKeys, VersionStats } from '../types';
import {
  Badge, Card, ErrorBox, Fact, Facts, Loading, TableBox, View, can, confirmAction, useMe, Meter,
} from '../ui';
import { handlerHref, href, queueHref } from '../router';
import { LatencyCard } from './Latency';

export const jobsHref = (queue: string, state?: ListState) => href(['jobs'], { queue, state });

export async function pauseQueue(action: Action, queue: string, after: () => void) {
  const ok = await confirmAction({
    title: `Pause queue ${queue}?`,
    message: <p>No host takes new jobs from it until it is resumed. Jobs running now finish.</p>,
    confirmLabel: 'Pause queue',
    danger: true,
  });
  if (ok !== false) await action.run(() => api.pauseQueue(queue), after);
}

function PauseButtons(props: { q: QueueView; action: Action; after: () => void }) {
  const me = useMe();
  if (!can.deploy(me)) return null;
  return props.q.counts?.paused ? (
    <button
      disabled={props.action.busy}
      data-testid="resume-queue"
      onClick={() => props.action.run(() => api.resumeQueue(props.q.queue), props.after)}
    >
      Resume
    </button>
  ) : (
    <button
      class="danger"
      disabled={props.action.busy}
      data-testid="pause-queue"
      onClick={() => pauseQueue(props.action, props.q.queue, props.after)}
    >
      Pause
    </button>
  );
}

/** What a producer token sees for a count: the whole queue's are not its business. */
export const NOT_COUNTED =
  'Counts are the whole queue’s, other producers’ jobs included: a producer token reads only the jobs it enqueued.';

function Count(props: { q: QueueView; state: ListState; n: (c: NonNullable<QueueView['counts']>) => number }) {
  const c = props.q.counts;
  if (!c) return <span class="muted" title={NOT_COUNTED} data-testid="not-counted">—</span>;
  const n = props.n(c);
  return (
    <a href={jobsHref(props.q.queue, props.state)} class={props.state === 'failed' && n ? 'bad' : ''}>
      {num(n)}
    </a>
  );
}

export function QueueState(props: { paused: boolean }) {
  return props.paused ? <Badge kind="paused" testid="queue-paused" /> : <Badge kind="running" testid="queue-running" />;
}

/** The rules a binding adds beyond per-host concurrency, in words. */
export function flowRules(b: Binding): { name: string; text: string }[] {
  const rules: { name: string; text: string }[] = [];
  const per = (ms: number) => (ms === 1000 ? 'second' : ms === 60_000 ? 'minute' : duration(ms));
  if (b.globalConcurrency != null)
    rules.push({ name: 'globalConcurrency', text: `at most ${num(b.globalConcurrency)} running across the fleet` });
  if (b.rateLimit)
    rules.push({
      name: 'rateLimit',
      text: `at most ${num(b.rateLimit.max)} starts per ${per(b.rateLimit.durationMs)} across the fleet`,
    });
  if (b.keyConcurrency)
    rules.push({
      name: 'keyConcurrency',
      text: `at most ${num(b.keyConcurrency.limit)} running per ${b.keyConcurrency.key} across the fleet`,
    });
  if (b.keyThrottle)
    rules.push({
      name: 'keyThrottle',
      text: `${num(b.keyThrottle.limit)} starts per ${per(b.keyThrottle.periodMs)} per ${b.keyThrottle.key}${
        b.keyThrottle.burst ? `, bursts of ${num(b.keyThrottle.burst)}` : ''
      }; over it a job waits for its turn`,
    });
  if (b.keyRateLimit)
    rules.push({
      name: 'keyRateLimit',
      text: `${num(b.keyRateLimit.limit)} starts per ${per(b.keyRateLimit.periodMs)} per ${b.keyRateLimit.key}${
        b.keyRateLimit.burst ? `, bursts of ${num(b.keyRateLimit.burst)}` : ''
      }; over it a job is dropped as rate_limited`,
    });
  if (b.singleton)
    rules.push({
      name: 'singleton',
      text: `one running job per ${b.singleton.key}; a new one ${
        b.singleton.mode === 'skip' ? 'is skipped' : 'cancels the running one (same producer) and runs next'
      }`,
    });
  if (b.debounce)
    rules.push({
      name: 'debounce',
      text: `of a ${b.debounce.key}'s jobs added less than ${duration(b.debounce.periodMs)} apart only the last runs${
        b.debounce.maxWaitMs ? `, at most ${duration(b.debounce.maxWaitMs)} after the first` : ''
      }`,
    });
  for (const c of b.cancelOn ?? [])
    rules.push({
      name: 'cancelOn',
      text: `event ${c.event} cancels started jobs whose ${c.match} equals the event's ${c.eventMatch ?? c.match}`,
    });
  if (b.finishTimeoutMs != null)
    rules.push({
      name: 'finishTimeoutMs',
      text: `a job fails as timed_out ${duration(b.finishTimeoutMs)} after it became ready`,
    });
  return rules;
}

export function Queues() {
  const queues = usePoll(() => api.queues(), [], 3000);
  const action = useAction();
  const list = queues.data?.queues ?? [];
  return (
    <View name="queues" title="Queues" ready={queues.loaded}>
      <ErrorBox error={queues.error ?? action.error} />
      {!queues.loaded ? (
        <Loading />
      ) : list.length === 0 ? (
        <p class="muted">No queue is bound to a handler yet.</p>
      ) : (
        <TableBox testid="queues-table">
          <thead>
            <tr>
              <th>Queue</th>
              <th>Handler</th>
              <th>State</th>
              <th class="num">Waiting</th>
              <th class="num">Active</th>
              <th class="num">Delayed</th>
              <th class="num">Completed</th>
              <th class="num">Failed</th>
              <th>Flow control</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.map((q) => (
              <tr key={q.queue} data-testid="queue-row" data-queue={q.queue}>
                <td>
                  <a href={queueHref(q.queue)} data-testid="queue-link">
                    <strong>{q.queue}</strong>
                  </a>
                  <div class="muted small">concurrency {num(q.concurrency)} per host</div>
                </td>
                <td>
                  <a href={handlerHref(q.handler)}>{q.handler}</a>
                </td>
                <td>{q.counts && <QueueState paused={q.counts.paused} />}</td>
                <td class="num">
                  <Count q={q} state="waiting" n={(c) => c.waiting + c.prioritized} />
                </td>
                <td class="num">
                  <Count q={q} state="active" n={(c) => c.active} />
                </td>
                <td class="num">
                  <Count q={q} state="delayed" n={(c) => c.delayed} />
                </td>
                <td class="num">
                  <Count q={q} state="completed" n={(c) => c.completed} />
                </td>
                <td class="num">
                  <Count q={q} state="failed" n={(c) => c.failed} />
                </td>
                <td>
                  <div class="chips">
                    {flowRules(q).map((r) => (
                      <span class="chip" title={r.text} key={r.name + r.text}>
                        {r.name}
                      </span>
                    ))}
                  </div>
                </td>
                <td class="row-actions">
                  <PauseButtons q={q} action={action} after={queues.reload} />
                </td>
              </tr>
            ))}
          </tbody>
        </TableBox>
      )}
    </View>
  );
}

function retention(r: Retention | null | undefined): string {
  if (r === null || r === undefined) return 'kept';
  if (r === true) return 'removed at once';
  if (r === false) return 'kept';
  if (typeof r === 'number') return `newest ${num(r)} kept`;
  const parts = [];
  if (r.count != null) parts.push(`newest ${num(r.count)}`);
  if (r.age != null) parts.push(`younger than ${duration(r.age * 1000)}`);
  return parts.length ? `${parts.join(', ')} kept` : 'kept';
}

function egressText(rule: EgressRule): string {
  if (typeof rule === 'string') return rule;
  const methods = rule.methods?.length ? ` (${rule.methods.join(', ')})` : '';
  const paths = rule.pathPrefix ? ` paths under ${rule.pathPrefix}` : '';
  return `${rule.url}${methods}${paths}`;
}

export function Queue(props: { name: string }) {
  const me = useMe();
  const queue = usePoll(() => api.queue(props.name), [props.name], 3000);
  const action = useAction();
  const q = queue.data;
  const withKeys = !!q?.keyConcurrency && can.readFigures(me);
  const secrets = usePoll(
    () => (can.readSecrets(me) ? api.secrets(props.name) : Promise.resolve(null)),
    [props.name, me.role],
    15_000,
  );
  const keys = usePoll(() => (withKeys ? api.keys(props.name) : Promise.resolve(null)), [props.name, withKeys], 3000);
  const notFound = queue.error?.notFound && !q;
  return (
    <View
      name="queue"
      title={
        <>
          Queue <span class="mono">{props.name}</span> {q?.counts && <QueueState paused={q.counts.paused} />}
        </>
      }
      ready={queue.loaded && secrets.loaded && keys.loaded}
      actions={
        q && (
          <>
            <a class="button" href={jobsHref(q.queue)}>
              Jobs
            </a>
            <PauseButtons q={q} action={action} after={queue.reload} />
          </>
        )
      }
    >
      <ErrorBox error={notFound ? queue.error : action.error ?? queue.error} testid={notFound ? 'not-found' : 'error'} />
      {q?.canary && <CanaryCard q={q} action={action} after={queue.reload} />}
      {!queue.loaded ? <Loading /> : q && <QueueBody q={q} me={me} secrets={secrets} keys={keys} />}
    </View>
  );
}

/** Mean of a summed figure over a version's runs. */
function mean(total: number, v: VersionStats): string {
  const runs = Object.values(v.runs).reduce((a, b) => a + b, 0);
  return runs ? num(Math.round(total / runs)) : '—';
}

/**
 * A queue's canary: the candidate and what the queue runs now, their runs
 * over the last hour side by side (what `airlock queue versions` prints),
 * and for an admin a promote (this queue only) and a rollback (the canary
 * removed).
 */
function CanaryCard(props: { q: QueueView; action: Action; after: () => void }) {
  const { q, action } = props;
  const me = useMe();
  const canary = q.canary;
  const stats = usePoll(() => api.stats(60, { queue: q.queue }), [q.queue, canary?.digest], 5000);
  if (!canary) return null;
  const versions = Object.entries(stats.data?.versions ?? {}).sort(([a], [b]) =>
    a === canary.digest ? -1 : b === canary.digest ? 1 : 0,
  );
  const promote = async () => {
    const ok = await confirmAction({
      title: `Promote the candidate on ${q.queue}?`,
      message: (
        <p>
          Every new job of this queue runs <span class="mono">{shortDigest(canary.digest)}</span>. Other queues of
          handler {q.handler} stay as they are.
        </p>
      ),
      confirmLabel: 'Promote',
    });
    if (ok !== false) await action.run(() => api.promoteQueue(q.queue), props.after);
  };
  const rollback = async () => {
    const ok = await confirmAction({
      title: `Remove the canary of ${q.queue}?`,
      message: <p>Every new job runs what the queue ran before the canary. Jobs already started stay on their version.</p>,
      confirmLabel: 'Roll back',
      danger: true,
    });
    if (ok !== false) await action.run(() => api.rollbackQueue(q.queue), props.after);
  };
  return (
    <Card title={`Canary: ${canary.percent} % of new jobs to a candidate`} testid="canary">
      <TableBox testid="canary-versions">
        <thead>
          <tr>
            <th>Version</th>
            <th></th>
            <th class="num">Runs</th>
            <th>By end</th>
            <th class="num">Mean wall time</th>
            <th class="num">Mean fuel</th>
          </tr>
        </thead>
        <tbody>
          {versions.length === 0 && (
            <tr>
              <td colSpan={6} class="muted">
                No runs in the last hour yet.
              </td>
            </tr>
          )}
          {versions.map(([digest, v]) => (
            <tr key={digest} data-testid="canary-version" data-digest={digest} data-runs={Object.values(v.runs).reduce((a, b) => a + b, 0)}>
              <td class="mono">{shortDigest(digest)}</td>
              <td>{digest === canary.digest ? <Badge kind="parked">candidate</Badge> : <Badge kind="ok">runs now</Badge>}</td>
              <td class="num">{num(Object.values(v.runs).reduce((a, b) => a + b, 0))}</td>
              <td>
                {Object.entries(v.runs)
                  .map(([end, n]) => `${end} ${num(n)}`)
                  .join(', ')}
              </td>
              <td class="num">{mean(v.wallMs, v)} ms</td>
              <td class="num">{mean(v.fuel, v)}</td>
            </tr>
          ))}
        </tbody>
      </TableBox>
      {can.deploy(me) && (
        <p class="actions">
          <button disabled={action.busy} data-testid="promote-canary" onClick={promote}>
            Promote on this queue
          </button>{' '}
          <button class="danger" disabled={action.busy} data-testid="rollback-canary" onClick={rollback}>
            Roll back
          </button>
        </p>
      )}
    </Card>
  );
}

function QueueBody(props: {
  q: QueueView;
  me: ReturnType<typeof useMe>;
  secrets: Loaded<SecretList | null>;
  keys: Loaded<QueueKeys | null>;
}) {
  const { q, me } = props;
  const l = q.limits;
  const o = q.defaultJobOptions ?? {};
  const rules = flowRules(q);
  const c = q.counts;
  const counts: [ListState, string, number][] = c
    ? [
        ['waiting', 'waiting', c.waiting],
        ['prioritized', 'prioritized', c.prioritized],
        ['active', 'active', c.active],
        ['delayed', 'delayed', c.delayed],
        ['waiting-children', 'waiting for children', c.waitingChildren],
        ['completed', 'completed', c.completed],
        ['failed', 'failed', c.failed],
      ]
    : [];
  return (
    <>
      {c ? (
        <div class="tiles" data-testid="queue-counts">
          {counts.map(([state, label, n]) => (
            <a class={`tile t-${state}`} href={jobsHref(q.queue, state)} key={state} data-state={state}>
              <span class="tile-n">{num(n)}</span>
              <span class="tile-label">{label}</span>
            </a>
          ))}
        </div>
      ) : (
        <p class="muted" data-testid="not-counted">
          {NOT_COUNTED} <a href={jobsHref(q.queue)}>Your jobs</a>
        </p>
      )}
      <LatencyCard queue={q.queue} />
      <div class="grid2">
        <Card title="Binding" testid="binding">
          <Facts>
            <Fact label="Handler">
              <a href={handlerHref(q.handler)}>{q.handler}</a>
            </Fact>
            <Fact label="Version" testid="queue-version">
              {q.version ? (
                <span class="mono" data-pinned={q.version} title="This queue runs this version, not its handler’s current one (a per-queue promote or rollback)">
                  {shortDigest(q.version)} (this queue’s own)
                </span>
              ) : (
                <span class="muted">the handler’s current</span>
              )}
            </Fact>
            <Fact label="Concurrency">{num(q.concurrency)} per host</Fact>
            <Fact label="Events that enqueue">
              {q.events?.length ? q.events.map((e) => <code key={e}>{e} </code>) : <span class="muted">none</span>}
            </Fact>
          </Facts>
          <h3>Flow control</h3>
          {rules.length === 0 ? (
            <p class="muted">No fleet-wide or per-key rule.</p>
          ) : (
            <ul class="rules" data-testid="flow-rules">
              {rules.map((r) => (
                <li key={r.name + r.text} data-rule={r.name}>
                  <code>{r.name}</code> {r.text}
                </li>
              ))}
            </ul>
          )}
          <h3>Default job options</h3>
          <Facts>
            <Fact label="Attempts">{o.attempts ? num(o.attempts) : '1 (not retried)'}</Fact>
            <Fact label="Backoff">
              {o.backoff ? `${o.backoff.type}, ${duration(o.backoff.delay)}` : <span class="muted">none</span>}
            </Fact>
            {o.delay ? <Fact label="Delay">{duration(o.delay)}</Fact> : null}
            {o.priority ? <Fact label="Priority">{num(o.priority)}</Fact> : null}
            {o.lifo ? <Fact label="Order">LIFO</Fact> : null}
            <Fact label="Completed jobs">{retention(o.removeOnComplete)}</Fact>
            <Fact label="Failed jobs">{retention(o.removeOnFail)}</Fact>
          </Facts>
        </Card>
        <Card title="Limits of every run" testid="limits">
          <Facts>
            <Fact label="Fuel">{l.fuel == null ? 'unmetered (deadline only)' : num(l.fuel)}</Fact>
            <Fact label="Memory">{bytes(l.memoryBytes)}</Fact>
            <Fact label="Timeout">{duration(l.timeoutMs)}</Fact>
            <Fact label="Output">{bytes(l.maxOutputBytes)}</Fact>
            <Fact label="Logs">
              {bytes(l.maxLogBytes)}, {num(l.maxLogLines)} lines
            </Fact>
            <Fact label="Steps">
              {num(l.maxSteps)}, {bytes(l.maxStepBytes)} each
            </Fact>
            <Fact label="HTTP requests">{num(l.maxHttpRequests)}</Fact>
            <Fact label="HTTP bodies">
              {bytes(l.maxHttpRequestBytes)} out, {bytes(l.maxHttpResponseBytes)} in
            </Fact>
            <Fact label="HTTP timeout">{duration(l.httpTimeoutMs)}</Fact>
          </Facts>
        </Card>
        <Card title="Egress" testid="egress">
          {q.egress?.length ? (
            <ul class="plain mono">
              {q.egress.map((r) => (
                <li key={egressText(r)}>{egressText(r)}</li>
              ))}
            </ul>
          ) : (
            <p class="muted">No outbound HTTP allowed.</p>
          )}
          <h3>Config</h3>
          {q.config && Object.keys(q.config).length ? (
            <TableBox>
              <tbody>
                {Object.entries(q.config).map(([k, v]) => (
                  <tr key={k}>
                    <th class="mono">{k}</th>
                    <td class="mono wrap">{compact(v, 200)}</td>
                  </tr>
                ))}
              </tbody>
            </TableBox>
          ) : (
            <p class="muted">None.</p>
          )}
        </Card>
        {can.readSecrets(me) && <Secrets secrets={props.secrets} />}
      </div>
      {q.keyConcurrency && can.readFigures(me) && <Keys keys={props.keys} />}
    </>
  );
}

function Secrets(props: { secrets: Loaded<SecretList | null> }) {
  const secrets = props.secrets;
  const list = secrets.data?.secrets ?? [];
  return (
    <Card title="Secrets (names only)" testid="secrets">
      <ErrorBox error={secrets.error} />
      {!secrets.loaded ? (
        <Loading />
      ) : list.length === 0 ? (
        <p class="muted">No secret.</p>
      ) : (
        <TableBox>
          <thead>
            <tr>
              <th>Name</th>
              <th>Sent only to</th>
              <th>Handler reads it</th>
              <th>Updated</th>
            </tr>
          </thead>
          <tbody>
            {list.map((s) => (
              <tr key={s.name} data-testid="secret-row">
                <td class="mono">
                  {s.name} {!s.readable && <Badge kind="failed">unreadable with this host's key</Badge>}
                </td>
                <td class="mono wrap">
                  {s.allow.join(', ')}
                  {s.inBody ? ' (headers and body)' : ' (headers)'}
                </td>
                <td>{s.reveal ? 'yes (redacted from logs)' : 'no (placeholder)'}</td>
                <td>{clock(s.updatedAtMs)}</td>
              </tr>
            ))}
          </tbody>
        </TableBox>
      )}
    </Card>
  );
}

function Keys(props: { keys: Loaded<QueueKeys | null> }) {
  const keys = props.keys;
  const k = keys.data;
  const missing = keys.error && keys.error.status === 404 && keys.error.message.includes('route');
  return (
    <Card title="Keys (keyConcurrency)" testid="keys">
      {missing ? (
        <p class="muted">This host does not serve per-key counts (GET /v1/queues/{'{queue}'}/keys).</p>
      ) : (
        <ErrorBox error={keys.error} />
      )}
      {!keys.loaded ? (
        <Loading />
      ) : (
        k && (
          <>
            <p class="muted">
              At most {num(k.limit)} running per <code>{k.key}</code>; keys found among {num(k.scanned)} unfinished
              jobs.
            </p>
            {k.keys.length === 0 ? (
              <p class="muted">No key has unfinished jobs.</p>
            ) : (
              <TableBox>
                <thead>
                  <tr>
                    <th>{k.key}</th>
                    <th>Running / limit</th>
                    <th class="num">Queued</th>
                  </tr>
                </thead>
                <tbody>
                  {k.keys.map((row) => (
                    <tr key={json(row.value, 0)} data-testid="key-row" data-key={json(row.value, 0)}>
                      <td class="mono">{compact(row.value, 80)}</td>
                      <td>
                        <Meter used={row.running} total={k.limit} label={`${num(row.running)} / ${num(k.limit)}`} />
                      </td>
                      <td class="num">{num(row.queued)}</td>
                    </tr>
                  ))}
                </tbody>
              </TableBox>
            )}
          </>
        )
      )}
    </Card>
  );
}

