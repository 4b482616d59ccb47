import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { usePoll } from '../hooks';
import { num } from '../format';
import { ErrorBox, Loading, TableBox, View, Time, useMe } from '../ui';
import { href, jobHref, navigate, queueHref, type Route } from '../router';
import { JobStateBadge } from './Jobs';

/**
 * Jobs of every queue whose id, name or data hold a text: the newest 100
 * jobs of each state of each queue are looked at (and a job named by its
 * exact id anywhere), as `GET /v1/jobs` says.
 */
export function Search(props: { route: Route }) {
  const me = useMe();
  const q = props.route.query.get('q') ?? '';
  const [text, setText] = useState(q);
  useEffect(() => setText(q), [q]);
  const found = usePoll(() => (q.trim() ? api.search(q.trim()) : Promise.resolve(null)), [q]);
  const result = found.data;
  return (
    <View name="search" title="Search all queues" ready={found.loaded}>
      <form
        class="search-form"
        onSubmit={(e) => {
          e.preventDefault();
          navigate(href(['search'], { q: text.trim() }));
        }}
      >
        <input
          type="search"
          value={text}
          maxLength={200}
          placeholder="a job id, name or text in its data"
          aria-label="Search every queue"
          data-testid="search-input"
          onInput={(e) => setText((e.target as HTMLInputElement).value)}
        />
        <button type="submit" data-testid="search-submit">
          Search
        </button>
      </form>
      <ErrorBox error={found.error} />
      {!found.loaded ? (
        <Loading />
      ) : !result ? (
        <p class="muted">Type a job id, a name or a piece of its data.</p>
      ) : (
        <>
          <p class="muted" data-testid="search-scope">
            {num(result.jobs.length)} {result.jobs.length === 1 ? 'job' : 'jobs'} found among the {num(result.scanned)}{' '}
            looked at: the newest 100 of each state of each queue
            {me.role === 'producer' ? ', among the jobs your token enqueued' : ''}, and a job whose id is the text
            exactly, however old.
            {result.truncated ? ' Older jobs of some states were not looked at: open a queue to page through them.' : ''}
          </p>
          {result.jobs.length > 0 && (
            <TableBox testid="search-results">
              <thead>
                <tr>
                  <th>Job</th>
                  <th>Queue</th>
                  <th>State</th>
                  <th>Added</th>
                </tr>
              </thead>
              <tbody>
                {result.jobs.map((j) => {
                  const ref = `${j.queue}:${j.id}`;
                  return (
                    <tr key={ref} data-testid="search-row" data-ref={ref}>
                      <td>
                        <a href={jobHref(ref)} class="mono" data-testid="search-link">
                          {j.id}
                        </a>
                        <div class="muted small">{j.name}</div>
                      </td>
                      <td>
                        <a href={queueHref(j.queue)}>{j.queue}</a>
                      </td>
                      <td>
                        <JobStateBadge job={j} />
                      </td>
                      <td>
                        <Time ms={j.timestamp} />
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </TableBox>
          )}
        </>
      )}
    </View>
  );
}
