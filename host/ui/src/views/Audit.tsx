// The audit log (admin): every change made through the API, newest first —
// who, what, to what, when, from where — filtered by token, action prefix
// or target. An entry whose seal does not verify, and entry numbers missing
// among those read, are called out: both mean someone wrote to Redis by hand.
import { api } from '../api';
import { usePoll } from '../hooks';
import { href, navigate, type Route } from '../router';
import { Badge, Card, ErrorBox, Loading, TableBox, Time, View } from '../ui';

const FILTERS = ['who', 'action', 'target'] as const;

export function Audit(props: { route: Route }) {
  const q = props.route.query;
  const filter = { who: q.get('who') ?? undefined, action: q.get('action') ?? undefined, target: q.get('target') ?? undefined };
  const listing = usePoll(() => api.audit(filter), [filter.who, filter.action, filter.target], 5000);
  const entries = listing.data?.entries ?? [];
  const gaps = listing.data?.gaps ?? [];

  function apply(e: Event) {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const next: Record<string, string> = {};
    for (const f of FILTERS) next[f] = String(form.get(f) ?? '').trim();
    navigate(href(['audit'], next));
  }

  return (
    <View name="audit" title="Audit log" ready={listing.loaded}>
      <ErrorBox error={listing.error} />
      <form class="filters" onSubmit={apply} data-testid="audit-filters">
        {FILTERS.map((f) => (
          <label key={f}>
            {f}{' '}
            <input name={f} data-testid={`audit-${f}`} value={filter[f] ?? ''} placeholder={f === 'action' ? 'e.g. secret.' : ''} />
          </label>
        ))}
        <button type="submit" data-testid="audit-apply">
          Filter
        </button>
      </form>
      {gaps.length > 0 && (
        <p class="error" data-testid="audit-gaps">
          Entries missing (removed from Redis by hand):{' '}
          {gaps.map((g) => (g.fromSeq === g.toSeq ? `#${g.fromSeq}` : `#${g.fromSeq}–#${g.toSeq}`)).join(', ')}
        </p>
      )}
      <Card title={`Changes (${entries.length})`} testid="audit">
        {!listing.loaded ? (
          <Loading />
        ) : entries.length === 0 ? (
          <p class="muted">No change matches.</p>
        ) : (
          <TableBox testid="audit-entries">
            <thead>
              <tr>
                <th class="num">#</th>
                <th>When</th>
                <th>Who</th>
                <th>Action</th>
                <th>Target</th>
                <th>From</th>
                <th>Details</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((e) => (
                <tr key={e.seq} data-testid="audit-entry" data-action={e.action} data-sealed={String(e.sealed)}>
                  <td class="num">{e.seq}</td>
                  <td>
                    <Time ms={e.at} />
                  </td>
                  <td>
                    {e.who} <span class="muted">({e.role})</span>
                  </td>
                  <td class="mono">
                    {e.action} {!e.sealed && <Badge kind="bad">not sealed</Badge>}
                  </td>
                  <td class="mono wrap">{e.target}</td>
                  <td class="mono">{e.from ?? '—'}</td>
                  <td class="mono wrap">{JSON.stringify(e.details)}</td>
                </tr>
              ))}
            </tbody>
          </TableBox>
        )}
      </Card>
    </View>
  );
}
