// A job's run transcripts (a binding with `recordTranscripts`): what each
// run received, call by call, and — for an admin — a replay of the job
// against another uploaded version of its handler, with what differed. A
// run in a batch shows the batch's one transcript: its calls, and each job
// it ran with that job's end; the run's badge is this job's own end.
import { useState } from 'preact/hooks';
import { api } from '../api';
import { usePoll, useAction } from '../hooks';
import { shortDigest, clock, plural } from '../format';
import type { ReplayReport, TranscriptCall } from '../types';
import { Badge, Card, ErrorBox, Prose, TableBox, can, useMe } from '../ui';

/** What a call names: its step, sleep, wait, key, secret or URL. */
function target(c: TranscriptCall): string {
  switch (c.call) {
    case 'http':
      return `${c.method} ${c.url}`;
    case 'config':
    case 'kvGet':
    case 'kvSet':
    case 'kvDelete':
      return c.key;
    case 'secret':
      return c.name;
    case 'childrenResults':
    case 'progress':
    case 'retryAfterCount':
      return '';
    default:
      return c.id;
  }
}

const clip = (text: string, n = 160) => (text.length > n ? `${text.slice(0, n)}…` : text);
const show = (value: unknown) => clip(typeof value === 'string' ? value : JSON.stringify(value));

/** What the call got back, in a line. */
function answer(c: TranscriptCall): string {
  switch (c.call) {
    case 'http': {
      const sent = c.body.text ? `sent ${clip(c.body.text)} → ` : '';
      return sent + (c.response ? `${c.response.status}: ${clip(c.response.body.text)}` : `no response: ${c.error ?? ''}`);
    }
    case 'config':
      return c.value == null ? 'not set' : show(c.value);
    case 'progress':
      return show(c.value);
    case 'stepRecord':
      return c.error ? `error: ${c.error.message}` : show(c.output);
    case 'sleepRecord':
      return c.error ? `error: ${c.error.message}` : `until ${clock(c.wakeAt)}`;
    case 'invokeExpire':
      return c.error ? `error: ${c.error.message}` : `timed out: children ${c.pending.join(', ')}`;
    case 'kvSet':
      return `${show(c.value)} → ${'ok' in c.answer ? (c.answer.ok ? 'written' : 'not written') : 'error'}`;
    default: {
      const a = (c as { answer: { ok?: unknown; error?: { message: string } } }).answer;
      if (a.error) return `error: ${a.error.message}`;
      return a.ok === null || a.ok === undefined ? 'nothing' : show(a.ok);
    }
  }
}

export function Transcript(props: { jobRef: string; handler?: string; runs?: number }) {
  const me = useMe();
  const transcripts = usePoll(() => api.transcript(props.jobRef), [props.jobRef, props.runs], 0);
  const runs = transcripts.data?.runs ?? [];
  if (!transcripts.data || runs.length === 0) return null;
  return (
    <Card title={`Transcript (${plural(runs.length, 'run')})`} testid="job-transcript">
      <p class="muted">
        What each run received from outside its sandbox, in order. Secrets and wait tokens are never kept: they show as{' '}
        <code>[secret:NAME]</code> and <code>[wait-token:ID]</code>.
      </p>
      {runs.map((r) => {
        const batch = r.transcript.batch ?? null;
        const own = batch?.find((b) => `${b.job.queue}:${b.job.id}` === props.jobRef);
        const end = (own ?? r.transcript).outcome.end;
        return (
        <details key={r.run} data-testid="transcript-run" data-run={r.run} open={r.run === runs[runs.length - 1].run}>
          <summary>
            Run {r.run}: <Badge kind={end === 'completed' ? 'ok' : 'parked'}>{end}</Badge>{' '}
            <span class="muted">
              {batch ? `in a batch of ${plural(batch.length, 'job')}, ` : ''}
              {plural(r.transcript.calls.length, 'call')}
              {r.transcript.truncated ? ', cut at its size cap' : ''}
            </span>
          </summary>
          {batch && (
            <TableBox testid="transcript-batch">
              <thead>
                <tr>
                  <th>Job of the batch</th>
                  <th>End</th>
                </tr>
              </thead>
              <tbody>
                {batch.map((b) => (
                  <tr key={b.job.id} data-testid="transcript-batch-job" data-end={b.outcome.end}>
                    <td class="mono">
                      {b.job.queue}:{b.job.id}
                      {own === b ? ' (this job)' : ''}
                    </td>
                    <td class="mono wrap">
                      {b.outcome.end === 'completed'
                        ? `completed: ${clip(b.outcome.output)}`
                        : b.outcome.end === 'failed'
                          ? `failed (${b.outcome.kind}): ${clip(b.outcome.reason)}`
                          : b.outcome.end}
                    </td>
                  </tr>
                ))}
              </tbody>
            </TableBox>
          )}
          <TableBox testid="transcript-calls">
            <thead>
              <tr>
                <th class="num">#</th>
                <th>Call</th>
                <th>What</th>
                <th>Answer</th>
              </tr>
            </thead>
            <tbody>
              {r.transcript.calls.map((c, i) => (
                <tr key={i} data-testid="transcript-call" data-call={c.call}>
                  <td class="num">{i + 1}</td>
                  <td>{c.call}</td>
                  <td class="mono wrap">{target(c)}</td>
                  <td class="mono wrap">{answer(c)}</td>
                </tr>
              ))}
            </tbody>
          </TableBox>
        </details>
        );
      })}
      {props.handler && can.deploy(me) && <Replay jobRef={props.jobRef} handler={props.handler} />}
    </Card>
  );
}

/** Replays the job on the host against a version the admin picks. */
function Replay(props: { jobRef: string; handler: string }) {
  const handler = usePoll(() => api.handler(props.handler), [props.handler], 0);
  const action = useAction();
  const [digest, setDigest] = useState('');
  const [report, setReport] = useState<ReplayReport | null>(null);
  const seen = new Set<string>();
  const versions = (handler.data?.versions ?? []).filter((v) => !seen.has(v.digest) && seen.add(v.digest));
  const chosen = digest || versions[0]?.digest || '';
  return (
    <div class="replay" data-testid="replay">
      <h3>Replay against a version</h3>
      <p class="muted">
        Runs this job again on the host with every call answered from its transcripts: nothing is sent anywhere.
      </p>
      <label>
        Version{' '}
        <select data-testid="replay-version" value={chosen} onChange={(e) => setDigest((e.target as HTMLSelectElement).value)}>
          {versions.map((v) => (
            <option key={v.digest} value={v.digest}>
              {shortDigest(v.digest)}
              {v.version ? ` (${v.version})` : ''}
              {v.digest === handler.data?.current.digest ? ', current' : ''}
            </option>
          ))}
        </select>
      </label>{' '}
      <button
        data-testid="replay-run"
        disabled={action.busy || !chosen}
        onClick={() => action.run(() => api.replay(props.jobRef, chosen), (r) => setReport(r as ReplayReport))}
      >
        {action.busy ? 'Replaying…' : 'Replay'}
      </button>
      <ErrorBox error={action.error} />
      {report && <ReplayResult report={report} />}
    </div>
  );
}

function ReplayResult(props: { report: ReplayReport }) {
  const r = props.report;
  const kind = r.verdict === 'same' ? 'ok' : r.verdict === 'different' ? 'warn' : 'bad';
  return (
    <div data-testid="replay-report" data-verdict={r.verdict}>
      <p>
        <Badge kind={kind} testid="replay-verdict">
          {r.verdict}
        </Badge>{' '}
        {r.divergedAt ? (
          <span data-testid="replay-diverged">
            at step {r.divergedAt.step} (run {r.divergedAt.run}): recorded {r.divergedAt.recorded ?? 'nothing more'}; the
            new version: {r.divergedAt.replayed ?? 'nothing more'}
          </span>
        ) : null}
        {r.incomplete ? <span class="muted"> (a transcript was cut at its size cap)</span> : null}
      </p>
      {r.differences.length > 0 && (
        <ul>
          {r.differences.map((d, i) => (
            <li key={i} data-testid="replay-difference" class="mono wrap">
              <Prose text={d} />
            </li>
          ))}
        </ul>
      )}
      {r.requests.changed.map((c, i) => (
        <div key={i} data-testid="replay-changed" class="mono wrap">
          changed request {c.method} {c.url}: <del>{c.recorded}</del> → <ins>{c.replayed}</ins>
        </div>
      ))}
      {r.requests.added.map((c, i) => (
        <div key={i} data-testid="replay-added" class="mono wrap">
          new request {c.method} {c.url} {c.body}
        </div>
      ))}
      {r.requests.missing.map((c, i) => (
        <div key={i} data-testid="replay-missing" class="mono wrap">
          no longer sent: {c.method} {c.url} {c.body}
        </div>
      ))}
    </div>
  );
}
