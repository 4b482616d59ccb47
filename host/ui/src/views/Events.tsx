import { api } from '../api';
import { usePoll, useNow } from '../hooks';
import { ago, compact, fullTime } from '../format';
import { ErrorBox, Loading, TableBox, View, Time, useMe } from '../ui';
import { jobHref } from '../router';

export function Events() {
  const me = useMe();
  const events = usePoll(() => api.events(50), [], 5000);
  const now = useNow(5000);
  const list = events.data?.events ?? [];
  return (
    <View name="events" title="Events" ready={events.loaded}>
      <p class="muted">
        The 50 most recent events sent to <code>POST /v1/events</code>, newest first
        {me.role === 'producer' ? ', among those your token sent' : ''}, with the jobs each created on the queues
        subscribed to its name, the waiting jobs it resumed and the jobs it cancelled.
      </p>
      <ErrorBox error={events.error} />
      {!events.loaded ? (
        <Loading />
      ) : list.length === 0 ? (
        <p class="muted" data-testid="no-events">
          No recent event.
        </p>
      ) : (
        <TableBox testid="events-table">
          <thead>
            <tr>
              <th>Received</th>
              <th>Event</th>
              <th>Sent by</th>
              <th>Data</th>
              <th>Jobs</th>
            </tr>
          </thead>
          <tbody>
            {list.map((e) => (
              <tr key={e.id} data-testid="event-row" data-event={e.name} data-id={e.id}>
                <td title={fullTime(e.ts)}>
                  <Time ms={e.ts} /> <div class="muted small">{ago(e.ts, now)}</div>
                </td>
                <td>
                  <strong>{e.name}</strong>
                  <div class="muted small mono">{e.id}</div>
                </td>
                <td>{e.producer ?? <span class="muted">an admin</span>}</td>
                <td>
                  <code class="wrap small">{compact(e.data, 160)}</code>
                </td>
                <td>
                  {e.jobs.length + e.resumed.length + e.cancelled.length ? (
                    <>
                      <EventJobs label="created" refs={e.jobs} testid="event-job" />
                      <EventJobs label="resumed" refs={e.resumed} testid="event-resumed" />
                      <EventJobs label="cancelled" refs={e.cancelled} testid="event-cancelled" />
                    </>
                  ) : (
                    <span class="muted" data-testid="event-no-jobs">
                      none: no queue subscribes to it and it matched no wait or cancel rule (or retention removed
                      the jobs)
                    </span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </TableBox>
      )}
    </View>
  );
}

/** One kind of effect an event had: the jobs, as links under a label. */
function EventJobs(props: { label: string; refs: string[]; testid: string }) {
  if (!props.refs.length) return null;
  return (
    <div class="event-jobs">
      <span class="muted small">{props.label}</span>
      <ul class="plain">
        {props.refs.map((r) => (
          <li key={r}>
            <a class="mono" href={jobHref(r)} data-testid={props.testid}>
              {r}
            </a>
          </li>
        ))}
      </ul>
    </div>
  );
}
