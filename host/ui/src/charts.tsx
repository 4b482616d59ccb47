// Per-minute charts with uPlot (bundled; it draws on a canvas).
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { useEffect, useRef } from 'preact/hooks';
import { axisTimes, clock, num, zone } from './format';

export interface ChartSeries {
  label: string;
  values: number[];
  color: string;
}

/** A failure kind keeps its colour from chart to chart. */
const KIND_COLORS: Record<string, string> = {
  fuel_exhausted: '#c62828',
  memory_limit: '#6a1b9a',
  timeout: '#ef6c00',
  timed_out: '#e65100',
  guest_retry: '#f9a825',
  guest_fatal: '#ad1457',
  cancelled: '#6d4c41',
  trap: '#37474f',
  stack_overflow: '#00838f',
  memory_fault: '#4527a0',
  rate_limited: '#9e9d24',
  skipped: '#78909c',
};

export function kindColor(kind: string, i: number): string {
  return KIND_COLORS[kind] ?? FAILURE_COLORS[i % FAILURE_COLORS.length];
}

export const FAILURE_COLORS = ['#c62828', '#ef6c00', '#6a1b9a', '#ad1457', '#00838f', '#4e342e', '#9e9d24', '#37474f'];

/** Counts per minute as bars (one series) or lines (several); `x` is in ms since the epoch. */
export function MinuteChart(props: {
  x: number[];
  series: ChartSeries[];
  testid: string;
  height?: number;
  style?: 'bars' | 'lines';
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = props.series.map((s) => s.label).join('|');
  const data: uPlot.AlignedData = [
    props.x.map((t) => t / 1000),
    ...props.series.map((s) => (props.style === 'lines' ? s.values : s.values.map((v) => (v === 0 ? null : v)))),
  ];

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const lines = props.style === 'lines';
    const bars = !lines && uPlot.paths.bars ? uPlot.paths.bars({ size: [0.7, 28], gap: 1 }) : undefined;
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: props.height ?? 170,
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      axes: [
        {
          stroke: '#555',
          grid: { stroke: '#eee' },
          ticks: { stroke: '#ddd' },
          // the dashboard's one time format (uPlot's own is 12-hour)
          values: (_u, ticks) => axisTimes(ticks.map((t) => t * 1000)),
        },
        {
          stroke: '#555',
          grid: { stroke: '#eee' },
          ticks: { stroke: '#ddd' },
          size: 48,
          values: (_u, ticks) => ticks.map((t) => (Number.isInteger(t) ? num(t) : '')),
        },
      ],
      series: [
        {},
        ...props.series.map(
          (s): uPlot.Series => ({
            label: s.label,
            stroke: s.color,
            fill: lines ? undefined : s.color + 'bb',
            width: lines ? 2 : 1,
            paths: bars,
            points: { show: lines, size: 5, fill: s.color },
          }),
        ),
      ],
    };
    const u = new uPlot(opts, data, el);
    plot.current = u;
    const ro = new ResizeObserver(() => {
      const w = Math.max(200, el.clientWidth);
      if (w !== u.width) u.setSize({ width: w, height: u.height });
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
    // rebuilt when the set of series changes; data updates below
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape]);

  useEffect(() => {
    plot.current?.setData(data);
  });

  // The canvas has no text: its span, in the dashboard's time format, for
  // screen readers (and tests).
  const first = props.x[0];
  const last = props.x[props.x.length - 1];
  const span = first ? `per minute, ${clock(first)} to ${clock(last)} (${zone(first)})` : 'no data';
  return <div class="chart" ref={box} data-testid={props.testid} role="img" aria-label={span} />;
}

/** Colour swatches and totals, in text (readable without the chart). */
export function Legend(props: { series: ChartSeries[]; testid?: string }) {
  return (
    <ul class="legend" data-testid={props.testid}>
      {props.series.map((s) => (
        <li key={s.label} data-kind={s.label}>
          <span class="swatch" style={{ background: s.color }} />
          <span class="legend-label">{s.label}</span>{' '}
          <strong>{num(s.values.reduce((a, b) => a + b, 0))}</strong>
        </li>
      ))}
    </ul>
  );
}
