import { useState } from 'preact/hooks';
import { api } from '../api';
import { usePoll, useAction, useNow } from '../hooks';
import { ago, clock, duration, num, compact } from '../format';
import type { JobSnapshot, ScheduleView, Triggered } from '../types';
import { Badge, ErrorBox, Loading, TableBox, View, can, useMe, Card } from '../ui';
import { jobHref, queueHref } from '../router';

interface QueueSchedules {
  queue: string;
  schedules: ScheduleView[];
  /** The queue's newest jobs, where the schedules' last runs are found. */
  recent: JobSnapshot[];
}

/** A schedule's jobs: `repeat:<id>:<tick>` (its ticks) and `trigger-<id>-<ms>` (triggers). */
function runsOf(s: ScheduleView, jobs: JobSnapshot[]): JobSnapshot[] {
  return jobs
    .filter((j) => j.id.startsWith(`repeat:${s.id}:`) || j.id.startsWith(`trigger-${s.id}-`))
    .sort((a, b) => b.timestamp - a.timestamp)
    .slice(0, 3);
}

async function loadAll(): Promise<QueueSchedules[]> {
  const { queues } = await api.queues();
  return Promise.all(
    queues.map(async (q) => {
      const { schedules } = await api.schedules(q.queue);
      let recent: JobSnapshot[] = [];
      if (schedules.length) {
        const pages = await Promise.all(
          (['active', 'completed', 'failed'] as const).map((state) => api.jobs(q.queue, state, 0, 100)),
        );
        recent = pages.flatMap((p) => p.jobs);
      }
      return { queue: q.queue, schedules, recent };
    }),
  );
}

export function Schedules() {
  const me = useMe();
  if (!can.readSchedules(me)) return <TriggerOnly />;
  return <ScheduleList />;
}

function ScheduleList() {
  const me = useMe();
  const all = usePoll(loadAll, [], 10_000);
  const action = useAction();
  const now = useNow(5000);
  const [triggered, setTriggered] = useState<Triggered | null>(null);
  const rows = (all.data ?? []).flatMap((q) => q.schedules.map((s) => ({ q, s })));
  rows.sort((a, b) => (a.s.nextRunAt ?? Infinity) - (b.s.nextRunAt ?? Infinity));
  return (
    <View name="schedules" title="Schedules" ready={all.loaded}>
      <ErrorBox error={all.error ?? action.error} />
      {triggered && (
        <p class="callout ok" data-testid="triggered">
          {triggered.coalesced ? 'Joined the run still waiting: ' : 'Triggered: '}
          <a href={jobHref(triggered.ref)}>{triggered.ref}</a>
        </p>
      )}
      {!all.loaded ? (
        <Loading />
      ) : rows.length === 0 ? (
        <p class="muted" data-testid="no-schedules">
          No schedule on any queue.
        </p>
      ) : (
        <TableBox testid="schedules-table">
          <thead>
            <tr>
              <th>Schedule</th>
              <th>Queue</th>
              <th>When</th>
              <th>Next run</th>
              <th class="num">Runs</th>
              <th>Last runs</th>
              <th>Data</th>
              {can.trigger(me) && <th />}
            </tr>
          </thead>
          <tbody>
            {rows.map(({ q, s }) => (
              <tr key={`${q.queue}/${s.id}`} data-testid="schedule-row" data-schedule={s.id} data-queue={q.queue}>
                <td>
                  <strong class="mono">{s.id}</strong>
                  {s.name !== s.id && <div class="muted small">jobs named {s.name}</div>}
                </td>
                <td>
                  <a href={queueHref(q.queue)}>{q.queue}</a>
                </td>
                <td>
                  {s.pattern ? (
                    <>
                      <code>{s.pattern}</code> <span class="muted">{s.tz ?? 'UTC'}</span>
                    </>
                  ) : s.every ? (
                    `every ${duration(s.every)}`
                  ) : (
                    '—'
                  )}
                </td>
                <td data-testid="schedule-next">
                  {s.nextRunAt ? (
                    <>
                      {clock(s.nextRunAt)} <span class="muted">({ago(s.nextRunAt, now)})</span>
                    </>
                  ) : (
                    <span class="muted">none</span>
                  )}
                </td>
                <td class="num">
                  {num(s.iterations)}
                  {s.limit ? ` / ${num(s.limit)}` : ''}
                </td>
                <td>
                  {(() => {
                    const runs = runsOf(s, q.recent);
                    if (!runs.length) return <span class="muted">none among the queue's newest jobs</span>;
                    return (
                      <ul class="plain small">
                        {runs.map((j) => (
                          <li key={j.id}>
                            <a href={jobHref(`${j.queue}:${j.id}`)}>
                              <Badge kind={j.state} />
                            </a>{' '}
                            {ago(j.finishedOn ?? j.processedOn ?? j.timestamp, now)}
                          </li>
                        ))}
                      </ul>
                    );
                  })()}
                </td>
                <td>
                  <code class="wrap small">{compact(s.data, 80)}</code>
                </td>
                {can.trigger(me) && (
                  <td class="row-actions">
                    <button
                      disabled={action.busy}
                      data-testid="trigger-schedule"
                      onClick={() =>
                        action.run(
                          () => api.trigger(q.queue, s.id),
                          (r) => {
                            setTriggered(r as Triggered);
                            all.reload();
                          },
                        )
                      }
                    >
                      Trigger now
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </TableBox>
      )}
    </View>
  );
}

/** A `cron` token may trigger schedules and read nothing: it names the one to run. */
function TriggerOnly() {
  const action = useAction();
  const [queue, setQueue] = useState('');
  const [id, setId] = useState('');
  const [triggered, setTriggered] = useState<Triggered | null>(null);
  return (
    <View name="schedules" title="Trigger a schedule" ready={true}>
      <Card>
        <p class="muted">This token may run schedules now, and read nothing: name the schedule.</p>
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            action.run(() => api.trigger(queue.trim(), id.trim()), (r) => setTriggered(r as Triggered));
          }}
        >
          <label class="field">
            <span>Queue</span>
            <input value={queue} onInput={(e) => setQueue(e.currentTarget.value)} required />
          </label>
          <label class="field">
            <span>Schedule id</span>
            <input value={id} onInput={(e) => setId(e.currentTarget.value)} required />
          </label>
          <button class="primary" type="submit" disabled={action.busy}>
            Trigger now
          </button>
        </form>
        <ErrorBox error={action.error} />
        {triggered && (
          <p class="callout ok" data-testid="triggered">
            {triggered.coalesced ? 'Joined the run still waiting: ' : 'Triggered: '}
            <span class="mono">{triggered.ref}</span>
          </p>
        )}
      </Card>
    </View>
  );
}
