// A job's attempts as a waterfall: queued, each run as a bar labelled with
// how it ended, the gaps between runs labelled with what ended the run
// before, step marks at the time each step was recorded, and the finish.
import type { JobSnapshot, Timeline, RunEntry } from './types';
import { clock, duration, fullTime } from './format';

export const PARKED = new Set(['slept', 'waited']);
export const PUT_BACK = new Set(['capacity', 'host_unavailable']);

export function endClass(end: string): string {
  if (end === 'completed') return 'ok';
  if (PARKED.has(end)) return 'parked';
  if (PUT_BACK.has(end)) return 'putback';
  return 'bad';
}

/** What the time after a run was, from how the run ended. */
function gapLabel(prev: RunEntry, hasNext: boolean): string {
  const on = prev.parkedOn ? ` ${prev.parkedOn}` : '';
  if (prev.end === 'slept') return `asleep (durable sleep${on})`;
  if (prev.end === 'waited') return `parked in a durable wait${on ? ` (${on.trim()})` : ''}`;
  if (PUT_BACK.has(prev.end)) return `put back (${prev.end})`;
  if (prev.end === 'completed') return hasNext ? 'completed, then retried' : 'retried, waiting to run';
  return hasNext ? `${prev.end}, then retried` : `${prev.end}, waiting to retry`;
}

interface Segment {
  kind: 'delayed' | 'queued' | 'run' | 'gap' | 'running';
  from: number;
  to: number;
  label: string;
  end?: string;
  title: string;
}

export function Waterfall(props: { job: JobSnapshot; timeline: Timeline; now: number }) {
  const { job, timeline, now } = props;
  const runs = [...timeline.runs].sort((a, b) => a.startedAt - b.startedAt);
  const finished = job.state === 'completed' || job.state === 'failed';
  const t0 = job.timestamp;
  const lastRun = runs[runs.length - 1];
  const runEnd = (r: RunEntry) => r.startedAt + r.wallTimeMs;
  // A run in progress is not in the history yet (it is written when it ends).
  const current =
    job.state === 'active' && job.processedOn && (!lastRun || job.processedOn > runEnd(lastRun)) ? job.processedOn : null;
  const tEnd = Math.max(
    finished && job.finishedOn ? job.finishedOn : now,
    lastRun ? runEnd(lastRun) : t0,
    ...timeline.steps.map((s) => s.at ?? 0),
    t0 + 1,
  );
  const span = tEnd - t0;
  const segs: Segment[] = [];
  const firstStart = runs[0]?.startedAt ?? current ?? (finished ? job.finishedOn ?? tEnd : tEnd);
  // A delay is drawn as such, up to where it ended (or the job did before
  // it). BullMQ's promote (also a cancel's) zeroes `delay`; the options keep
  // the one asked for, and a promoted job's delay is drawn up to its start.
  const asked = (job.opts as { delay?: unknown } | null)?.delay;
  const delay = job.delay > 0 ? job.delay : typeof asked === 'number' && asked > 0 ? asked : 0;
  const delayEnd = delay > 0 ? Math.min(t0 + delay, firstStart) : t0;
  if (delayEnd > t0) {
    segs.push({
      kind: 'delayed',
      from: t0,
      to: delayEnd,
      label: `delayed · ${duration(delayEnd - t0)}${delayEnd < t0 + delay ? ` of ${duration(delay)}` : ''}`,
      title: `enqueued ${fullTime(t0)} with a delay of ${duration(delay)}`,
    });
  }
  if (firstStart > delayEnd || delayEnd === t0) {
    segs.push({
      kind: 'queued',
      from: delayEnd,
      to: firstStart,
      label: `queued · ${duration(firstStart - delayEnd)}`,
      title: delayEnd > t0 ? `ready ${fullTime(delayEnd)}` : `enqueued ${fullTime(t0)}`,
    });
  }
  runs.forEach((r, i) => {
    segs.push({
      kind: 'run',
      from: r.startedAt,
      to: runEnd(r),
      end: r.end,
      label: `run ${r.run} · ${r.end} · ${duration(r.wallTimeMs)}`,
      title: `run ${r.run} on ${r.host}, started ${fullTime(r.startedAt)}, ended ${r.end}`,
    });
    const next = runs[i + 1]?.startedAt ?? (i === runs.length - 1 ? current : null);
    const isLast = next == null;
    const gapTo = next ?? (finished && job.finishedOn ? job.finishedOn : tEnd);
    if (isLast && finished) return; // the run ended the job
    segs.push({
      kind: 'gap',
      from: runEnd(r),
      to: Math.max(runEnd(r), gapTo),
      end: r.end,
      label: `${gapLabel(r, !isLast)} · ${duration(Math.max(0, gapTo - runEnd(r)))}${isLast ? ' so far' : ''}`,
      title: `after run ${r.run} (${r.end})`,
    });
  });
  if (current) {
    segs.push({
      kind: 'running',
      from: current,
      to: now,
      label: `run ${runs.length + 1} · running · ${duration(now - current)}`,
      title: `started ${fullTime(current)}`,
    });
  }
  const pct = (t: number) => `${(((t - t0) / span) * 100).toFixed(3)}%`;
  const width = (a: number, b: number) => `${((Math.max(0, b - a) / span) * 100).toFixed(3)}%`;
  const steps = timeline.steps.filter((s) => s.at);
  return (
    <div class="waterfall" data-testid="waterfall">
      <div class="wf-row wf-axis">
        <div class="wf-label muted small">time since enqueue</div>
        <div class="wf-track wf-scale">
          <span>{clock(t0)}</span>
          <span>{duration(span)}</span>
          <span>{finished ? clock(tEnd) : 'now'}</span>
        </div>
      </div>
      {segs.map((s, i) => (
        <div
          class={`wf-row wf-${s.kind}`}
          key={i}
          data-testid={`wf-${s.kind}`}
          data-end={s.end}
          title={s.title}
        >
          <div class="wf-label">{s.label}</div>
          <div class="wf-track">
            <div
              class={`wf-bar ${s.kind === 'run' ? endClass(s.end!) : s.kind === 'running' ? 'live' : ''}`}
              style={{ left: pct(s.from), width: width(s.from, s.to) }}
            />
          </div>
        </div>
      ))}
      {steps.length > 0 && (
        <div class="wf-row wf-steps" data-testid="wf-steps">
          <div class="wf-label">steps recorded</div>
          <div class="wf-track">
            {steps.map((s, i) => (
              <span
                class="wf-step"
                key={s.id}
                style={{ left: pct(s.at!) }}
                title={`${s.id} at ${fullTime(s.at)}`}
                data-step={s.id}
              >
                {i + 1}
              </span>
            ))}
          </div>
        </div>
      )}
      {finished && job.finishedOn && (
        <div class="wf-row wf-finish" data-testid="wf-finished" data-state={job.state}>
          <div class="wf-label">
            {job.state}
            {runs.length === 0 && !current ? ' without running' : ''} · after {duration(job.finishedOn - t0)}
          </div>
          <div class="wf-track">
            <div class={`wf-mark ${job.state === 'completed' ? 'ok' : 'bad'}`} style={{ left: pct(job.finishedOn) }} />
          </div>
        </div>
      )}
    </div>
  );
}
