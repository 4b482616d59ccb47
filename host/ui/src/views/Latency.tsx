import { useState } from 'preact/hooks';
import { api } from '../api';
import { usePoll } from '../hooks';
import { num } from '../format';
import type { Percentiles, Stats } from '../types';
import { Card, ErrorBox, Loading, can, useMe } from '../ui';

/** The windows a latency card offers, in minutes. */
const WINDOWS: [number, string][] = [
  [15, '15 min'],
  [60, '1 h'],
  [360, '6 h'],
  [1440, '24 h'],
];

/** A bucket's bound in its own unit: `500 ms`, `2 s`, `5 min`, `1 h`. */
export function boundText(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${ms / 1000} s`;
  if (ms < 3_600_000) return `${ms / 60_000} min`;
  return `${ms / 3_600_000} h`;
}

/** A percentile as the bound of its bucket ("≤ 20 ms"); past the last bound, "> 1 h". */
function bound(ms: number | null | undefined, count: number): string {
  if (!count) return '—';
  return ms == null ? '> 1 h' : `≤ ${boundText(ms)}`;
}

function Row(props: { label: string; p: Percentiles; testid: string }) {
  const { p } = props;
  return (
    <tr data-testid={props.testid} data-count={String(p.count)}>
      <th>{props.label}</th>
      <td class="num" data-p="50">{bound(p.p50, p.count)}</td>
      <td class="num" data-p="90">{bound(p.p90, p.count)}</td>
      <td class="num" data-p="99">{bound(p.p99, p.count)}</td>
      <td class="num">{num(p.count)}</td>
    </tr>
  );
}

/** The runs of the window by how they ended, and the failures by kind. */
function ends(stats: Stats): { total: number; byEnd: [string, number][] } {
  const byEnd = new Map<string, number>();
  for (const m of stats.minutes) {
    for (const [end, n] of Object.entries(m.runs)) byEnd.set(end, (byEnd.get(end) ?? 0) + n);
  }
  const sorted = [...byEnd.entries()].sort((a, b) => b[1] - a[1]);
  return { total: sorted.reduce((sum, [, n]) => sum + n, 0), byEnd: sorted };
}

/**
 * Throughput and latency percentiles of a queue's (or a handler's queues')
 * runs over a chosen window, from `GET /v1/stats`: a first run's
 * enqueue→start, every run's run time, the runs by how they ended.
 */
export function LatencyCard(props: { queue?: string; handler?: string }) {
  const me = useMe();
  const [minutes, setMinutes] = useState(60);
  const scope = { queue: props.queue, handler: props.handler };
  const stats = usePoll(
    () => (can.readFigures(me) ? api.stats(minutes, scope) : Promise.resolve(null)),
    [minutes, props.queue, props.handler, me.role],
    10_000,
  );
  if (!can.readFigures(me)) return null;
  const s = stats.data;
  const counted = s ? ends(s) : null;
  return (
    <Card title="Throughput and latency" testid="latency">
      <div class="toolbar latency-windows" role="group" aria-label="Window">
        {WINDOWS.map(([m, label]) => (
          <button
            key={m}
            type="button"
            class={m === minutes ? 'active' : ''}
            aria-pressed={m === minutes}
            data-testid="latency-window"
            data-minutes={String(m)}
            onClick={() => setMinutes(m)}
          >
            {label}
          </button>
        ))}
      </div>
      <ErrorBox error={stats.error} />
      {!s || !counted ? (
        <Loading />
      ) : (
        <>
          <p class="muted" data-testid="latency-throughput" data-runs={String(counted.total)}>
            {num(counted.total)} runs in the last {WINDOWS.find(([m]) => m === minutes)?.[1]} (
            {num(Math.round((counted.total / minutes) * 10) / 10)} a minute)
            {counted.byEnd.length > 0 && ': '}
            {counted.byEnd.map(([end, n], i) => (
              <span key={end} data-testid="latency-end" data-end={end}>
                {i > 0 && ', '}
                {end} {num(n)}
              </span>
            ))}
          </p>
          <table class="latency-table">
            <thead>
              <tr>
                <th />
                <th class="num">p50</th>
                <th class="num">p90</th>
                <th class="num">p99</th>
                <th class="num">runs</th>
              </tr>
            </thead>
            <tbody>
              <Row label="enqueue → start (first runs)" p={s.latency.wait} testid="latency-wait" />
              <Row label="run time" p={s.latency.run} testid="latency-run" />
            </tbody>
          </table>
          <p class="muted small">
            Each percentile is the bound of the bucket it fell in (1, 2, 5, 10, 20, 50, 100, 200, 500 ms, 1, 2, 5, 10, 30,
            60 s, 5 min, 1 h): the time was at most that.
          </p>
        </>
      )}
    </Card>
  );
}
