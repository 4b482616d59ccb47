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
        {me.role === 'producer' ? ', among those your token sent' : ''}, with the job each created on the queues
        subscribed to its name.
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
              <th>Jobs created</th>
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
                  {e.jobs.length ? (
                    <ul class="plain">
                      {e.jobs.map((r) => (
                        <li key={r}>
                          <a class="mono" href={jobHref(r)} data-testid="event-job">
                            {r}
                          </a>
                        </li>
                      ))}
                    </ul>
                  ) : (
                    <span class="muted">none (no queue subscribes, or retention removed it)</span>
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
