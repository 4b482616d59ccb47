import { api } from '../api';
import { usePoll, useAction, useNow } from '../hooks';
import { ago, bytes, fullTime, num } from '../format';
import type { HostInfo, Stats } from '../types';
import { MinuteChart, Legend, kindColor, type ChartSeries } from '../charts';
import { Badge, Card, ErrorBox, Fact, Facts, Loading, Meter, View, can, confirmAction, useMe, Time } from '../ui';
import { queueHref } from '../router';

/** Run ends that are not failures (`GET /v1/stats`): everything else is a failure kind. */
const NOT_FAILURES = new Set(['completed', 'slept', 'waited']);

export function Fleet() {
  const me = useMe();
  const hosts = usePoll(() => api.hosts(), [], 3000);
  const stats = usePoll(() => api.stats(60), [], 10_000);
  const action = useAction();
  const now = useNow(1000);
  const admin = can.administer(me);

  async function drain(h: HostInfo) {
    const ok = await confirmAction({
      title: `Drain host ${h.id}?`,
      message: (
        <p>
          It stops taking jobs from its {h.queues.length} queues and finishes the {num(h.running)} it runs now.
          Resume it to take jobs again.
        </p>
      ),
      confirmLabel: 'Drain host',
      danger: true,
    });
    if (ok !== false) await action.run(() => api.drainHost(h.id), hosts.reload);
  }

  const list = hosts.data?.hosts ?? [];
  const totalRunning = list.reduce((a, h) => a + h.running, 0);
  const totalCapacity = list.reduce((a, h) => a + h.capacity, 0);
  return (
    <View name="fleet" title="Fleet" ready={hosts.loaded && stats.loaded}>
      <ErrorBox error={hosts.error ?? action.error} />
      <Card title={`Hosts (${list.length})`} testid="hosts">
        {!hosts.loaded ? (
          <Loading />
        ) : list.length === 0 ? (
          <p class="muted" data-testid="no-hosts">
            No live host: nothing runs jobs now.
          </p>
        ) : (
          <>
            <p class="muted">
              {num(totalRunning)} of {num(totalCapacity)} instance slots in use across the fleet.
            </p>
            <div class="hosts">
              {list.map((h) => (
                <article class="host" key={h.id} data-testid="host-row" data-host={h.id}>
                  <header class="host-head">
                    <strong class="mono wrap">{h.id}</strong>
                    <Badge kind={h.state} testid="host-state" />
                    {admin && (
                      <span class="host-actions">
                        {h.state === 'running' ? (
                          <button class="danger" disabled={action.busy} data-testid="drain-host" onClick={() => drain(h)}>
                            Drain
                          </button>
                        ) : (
                          <button
                            disabled={action.busy}
                            data-testid="resume-host"
                            onClick={() => action.run(() => api.resumeHost(h.id), hosts.reload)}
                          >
                            Resume
                          </button>
                        )}
                      </span>
                    )}
                  </header>
                  <Facts>
                    <Fact label="Running" testid="host-slots">
                      <Meter used={h.running} total={h.capacity} label={`${num(h.running)} of ${num(h.capacity)} slots`} />
                    </Fact>
                    <Fact label="Memory" testid="host-memory">
                      {h.memoryBudgetBytes != null ? (
                        <span title="The memory limits its running guests hold, against its budget">
                          <Meter
                            used={h.memoryHeldBytes ?? 0}
                            total={h.memoryBudgetBytes}
                            label={`${bytes(h.memoryHeldBytes ?? 0)} of ${bytes(h.memoryBudgetBytes)} held`}
                          />
                        </span>
                      ) : (
                        <span class="muted">not reported by this host</span>
                      )}
                    </Fact>
                    <Fact label="Queues">
                      <div class="chips">
                        {h.queues.length ? (
                          h.queues.map((q) => (
                            <a class="chip" href={queueHref(q)} key={q}>
                              {q}
                            </a>
                          ))
                        ) : (
                          <span class="muted">none</span>
                        )}
                      </div>
                    </Fact>
                    <Fact label="Heartbeat" testid="host-heartbeat">
                      <span class={now - h.heartbeatAt > 10_000 ? 'warn' : ''} title={fullTime(h.heartbeatAt)}>
                        {ago(h.heartbeatAt, now)}
                      </span>
                    </Fact>
                    <Fact label="Started">
                      <Time ms={h.startedAt} /> <span class="muted">({ago(h.startedAt, now)})</span>
                    </Fact>
                    <Fact label="Version">
                      {h.version}
                      {h.generation != null ? <span class="muted"> · registry generation {h.generation}</span> : null}
                    </Fact>
                    {h.address ? (
                      <Fact label="API">
                        <span class="mono wrap">{h.address}</span>
                      </Fact>
                    ) : null}
                  </Facts>
                </article>
              ))}
            </div>
          </>
        )}
      </Card>
      <StatsCharts stats={stats.data} error={stats.error} loaded={stats.loaded} />
    </View>
  );
}

function StatsCharts(props: { stats?: Stats; error?: import('../api').ApiError; loaded: boolean }) {
  if (!props.loaded) return <Loading />;
  if (!props.stats) return <ErrorBox error={props.error} />;
  const minutes = props.stats.minutes;
  const x = minutes.map((m) => m.at);
  const completed: ChartSeries = {
    label: 'completed',
    color: '#2e7d32',
    values: minutes.map((m) => m.runs.completed ?? 0),
  };
  const kinds = Array.from(
    new Set(minutes.flatMap((m) => Object.keys(m.runs).filter((k) => !NOT_FAILURES.has(k)))),
  ).sort();
  const failures: ChartSeries[] = kinds.map((k, i) => ({
    label: k,
    color: kindColor(k, i),
    values: minutes.map((m) => m.runs[k] ?? 0),
  }));
  const parked: ChartSeries[] = ['slept', 'waited'].map((k, i) => ({
    label: k,
    color: i ? '#1565c0' : '#78909c',
    values: minutes.map((m) => m.runs[k] ?? 0),
  }));
  return (
    <div class="grid2">
      <Card title="Throughput: runs completed per minute (last hour)" testid="chart-throughput">
        <MinuteChart x={x} series={[completed]} testid="throughput-chart" />
        <Legend series={[completed, ...parked]} testid="throughput-legend" />
      </Card>
      <Card title="Failed runs per minute, by kind (last hour)" testid="chart-failures">
        {failures.length === 0 ? (
          <p class="muted" data-testid="no-failures">
            No run failed in the last hour.
          </p>
        ) : (
          <>
            <MinuteChart x={x} series={failures} testid="failures-chart" style="lines" />
            <Legend series={failures} testid="failures-legend" />
          </>
        )}
      </Card>
    </div>
  );
}
