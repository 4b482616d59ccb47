import { api } from '../api';
import { usePoll } from '../hooks';
import { bytes, num, shortDigest } from '../format';
import type { QueueView } from '../types';
import { Badge, Card, ErrorBox, Fact, Facts, Loading, TableBox, View, Time } from '../ui';
import { handlerHref, queueHref } from '../router';
import { LatencyCard } from './Latency';

function boundQueues(queues: QueueView[] | undefined, handler: string): string[] {
  return (queues ?? []).filter((q) => q.handler === handler).map((q) => q.queue);
}

function QueueLinks(props: { names: string[] }) {
  if (!props.names.length) return <span class="muted">no queue</span>;
  return (
    <div class="chips">
      {props.names.map((q) => (
        <a class="chip" href={queueHref(q)} key={q}>
          {q}
        </a>
      ))}
    </div>
  );
}

export function Handlers() {
  const handlers = usePoll(() => api.handlers(), [], 10_000);
  const queues = usePoll(() => api.queues(), [], 10_000);
  const list = handlers.data?.handlers ?? [];
  return (
    <View name="handlers" title="Handlers" ready={handlers.loaded && queues.loaded}>
      <ErrorBox error={handlers.error ?? queues.error} />
      {!handlers.loaded ? (
        <Loading />
      ) : list.length === 0 ? (
        <p class="muted">No handler uploaded yet.</p>
      ) : (
        <TableBox testid="handlers-table">
          <thead>
            <tr>
              <th>Handler</th>
              <th>Current version</th>
              <th class="num">Size</th>
              <th>Uploaded</th>
              <th class="num">Versions</th>
              <th>Bound to</th>
            </tr>
          </thead>
          <tbody>
            {list.map((h) => (
              <tr key={h.name} data-testid="handler-row" data-handler={h.name}>
                <td>
                  <a href={handlerHref(h.name)}>
                    <strong>{h.name}</strong>
                  </a>
                </td>
                <td class="mono" title={h.digest}>
                  {shortDigest(h.digest)}
                  {h.version ? ` (${h.version})` : ''}
                </td>
                <td class="num">{bytes(h.size)}</td>
                <td>
                  <Time ms={h.uploadedAt} />
                </td>
                <td class="num">{num(h.versions)}</td>
                <td>
                  <QueueLinks names={boundQueues(queues.data?.queues, h.name)} />
                </td>
              </tr>
            ))}
          </tbody>
        </TableBox>
      )}
    </View>
  );
}

/** What the imports say, and nothing more: the contract version and the capabilities asked for. */
function contractOf(imports: string[]): string | null {
  const v = imports.map((i) => /^airlock:job\/[a-z-]+@([0-9.]+)$/.exec(i)?.[1]).find(Boolean);
  return v ? `airlock:job@${v}` : null;
}

const CAPABILITIES: [RegExp, string][] = [
  [/^wasi:http\//, 'outbound HTTP (wasi:http; only where the binding allows)'],
  [/^airlock:job\/config@/, 'config and secrets (airlock:job/config)'],
  [/^wasi:filesystem\//, 'wasi:filesystem (linked, but no directory is granted)'],
  [/^wasi:sockets\//, 'wasi:sockets (linked, but every call is refused)'],
];

export function Handler(props: { name: string; digest?: string | null }) {
  const handler = usePoll(() => api.handler(props.name), [props.name], 10_000);
  const queues = usePoll(() => api.queues(), [], 10_000);
  const h = handler.data;
  const highlighted = props.digest;
  const known = h && highlighted ? h.versions.some((v) => v.digest === highlighted) : true;
  return (
    <View name="handler" title={<>Handler <span class="mono">{props.name}</span></>} ready={handler.loaded && queues.loaded}>
      <ErrorBox error={handler.error} testid={handler.error?.notFound ? 'not-found' : 'error'} />
      {!handler.loaded ? (
        <Loading />
      ) : (
        h && (
          <>
            {highlighted && !known && (
              <div class="callout warn">
                Version <span class="mono">{shortDigest(highlighted)}</span> is no longer among this handler's uploads.
              </div>
            )}
            <LatencyCard handler={props.name} />
            <div class="grid2">
              <Card title="Current version" testid="handler-current">
                <Facts>
                  <Fact label="Digest">
                    <span class="mono wrap">{h.current.digest}</span>
                  </Fact>
                  {h.current.version && <Fact label="Label">{h.current.version}</Fact>}
                  <Fact label="Size">{bytes(h.current.size)}</Fact>
                  <Fact label="Uploaded">
                    <Time ms={h.current.uploadedAt} />
                  </Fact>
                  <Fact label="Contract">{contractOf(h.component.imports) ?? <span class="muted">unknown</span>}</Fact>
                  <Fact label="Built with" testid="handler-built-with">
                    {h.component.builtWith && h.component.builtWith.length ? (
                      <span class="small">
                        {h.component.builtWith.join(' · ')}{' '}
                        <span class="muted">(as the component's own producers sections say)</span>
                      </span>
                    ) : (
                      <span class="muted">not stated by the component</span>
                    )}
                  </Fact>
                  <Fact label="Bound to">
                    <QueueLinks names={boundQueues(queues.data?.queues, h.name)} />
                  </Fact>
                </Facts>
                {(() => {
                  const caps = CAPABILITIES.filter(([re]) => h.component.imports.some((i) => re.test(i))).map(([, t]) => t);
                  return caps.length ? (
                    <>
                      <h3>Asks for</h3>
                      <ul class="plain">
                        {caps.map((c) => (
                          <li key={c}>{c}</li>
                        ))}
                      </ul>
                    </>
                  ) : null;
                })()}
              </Card>
              <Card title={`Imports and exports of the current version`} testid="handler-component">
                <h3>Exports</h3>
                <ul class="plain mono">
                  {h.component.exports.map((e) => (
                    <li key={e}>{e}</li>
                  ))}
                </ul>
                <h3>Imports ({h.component.imports.length})</h3>
                <ul class="plain mono small" data-testid="handler-imports">
                  {h.component.imports.map((i) => (
                    <li key={i}>{i}</li>
                  ))}
                </ul>
              </Card>
            </div>
            <Card title={`Versions (${h.versions.length}), newest first`} testid="handler-versions">
              <TableBox>
                <thead>
                  <tr>
                    <th>Digest</th>
                    <th>Label</th>
                    <th class="num">Size</th>
                    <th>Uploaded</th>
                    <th />
                  </tr>
                </thead>
                <tbody>
                  {h.versions.map((v, i) => (
                    <tr
                      key={`${v.digest}-${i}`}
                      data-testid="version-row"
                      data-digest={v.digest}
                      class={v.digest === highlighted ? 'highlight' : ''}
                    >
                      <td class="mono wrap">{v.digest}</td>
                      <td>{v.version ?? <span class="muted">—</span>}</td>
                      <td class="num">{bytes(v.size)}</td>
                      <td>
                        <Time ms={v.uploadedAt} />
                      </td>
                      <td>
                        {v.digest === h.current.digest && i === 0 && <Badge kind="ok">current</Badge>}
                        {v.candidate && <Badge kind="parked">candidate</Badge>}
                        {v.digest === highlighted && <Badge kind="parked">the job's version</Badge>}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </TableBox>
            </Card>
          </>
        )
      )}
    </View>
  );
}
