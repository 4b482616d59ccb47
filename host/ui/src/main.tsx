import './app.css';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, setToken, storedToken, whenUnauthorized } from './api';
import type { Me } from './types';
import { zone } from './format';
import { DialogHost, MeContext, can } from './ui';
import { href, navigate, parseHash, useRoute, type Route } from './router';
import { Login } from './views/Login';
import { Fleet } from './views/Fleet';
import { Queues, Queue } from './views/Queues';
import { Jobs } from './views/Jobs';
import { Job } from './views/Job';
import { Handlers, Handler } from './views/Handlers';
import { Schedules } from './views/Schedules';
import { Events } from './views/Events';
import { Search } from './views/Search';
import { Audit } from './views/Audit';

interface NavItem {
  key: string;
  label: string;
  allowed: (me: Me) => boolean;
}

const NAV: NavItem[] = [
  { key: 'fleet', label: 'Fleet', allowed: can.readFleet },
  { key: 'queues', label: 'Queues', allowed: (me) => me.role !== 'cron' },
  { key: 'jobs', label: 'Jobs', allowed: (me) => me.role !== 'cron' },
  { key: 'handlers', label: 'Handlers', allowed: (me) => me.role !== 'cron' },
  { key: 'schedules', label: 'Schedules', allowed: (me) => me.role !== 'producer' },
  { key: 'events', label: 'Events', allowed: (me) => me.role !== 'cron' },
  { key: 'search', label: 'Search', allowed: (me) => me.role !== 'cron' },
  { key: 'audit', label: 'Audit', allowed: can.administer },
];

/** A scope as "queues a*, b · handlers c*". */
function scopeText(scope: NonNullable<Me['scope']>): string {
  const part = (kind: string, patterns?: string[]) => (patterns?.length ? `${kind} ${patterns.join(', ')}` : '');
  return [part('queues', scope.queues), part('handlers', scope.handlers)].filter(Boolean).join(' · ');
}

function landing(me: Me): string {
  return NAV.find((n) => n.allowed(me))!.key;
}

/** How long a session check the API could not answer waits before the next. */
const SESSION_RETRY_MS = 2000;

function App() {
  const [me, setMe] = useState<Me | null>(null);
  const [checking, setChecking] = useState(() => storedToken() !== null);
  // Why the stored token could not be checked yet (the API or Redis down).
  const [unchecked, setUnchecked] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  useEffect(() => {
    whenUnauthorized((message) => {
      setToken(null);
      setMe(null);
      setNotice(`Logged out: ${message}`);
    });
    if (storedToken() === null) return;
    // Only the API's refusal of the token (401) ends the session. An outage
    // (a 503 while Redis is down, no answer at all) costs no login: the
    // check is tried again until the API can answer it.
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const check = () => {
      api
        .me()
        .then((who) => {
          if (stopped) return;
          setMe(who);
          setUnchecked(null);
          setChecking(false);
        })
        .catch((e) => {
          if (stopped) return;
          if (e instanceof ApiError && e.status === 401) {
            setToken(null);
            setNotice(`Log in again: ${e.message}`);
            setChecking(false);
            return;
          }
          setUnchecked((e as Error).message);
          timer = setTimeout(check, SESSION_RETRY_MS);
        });
    };
    check();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, []);

  function logout() {
    setToken(null);
    setMe(null);
    setNotice(null);
  }

  if (checking) {
    return (
      <p class="muted pad" data-testid="session-check">
        {unchecked === null
          ? 'Checking your session…'
          : `Your session could not be checked yet (${unchecked}); trying again…`}
      </p>
    );
  }
  if (!me) {
    return (
      <Login
        notice={notice}
        onLogin={(token, who) => {
          setToken(token);
          setNotice(null);
          setMe(who);
        }}
      />
    );
  }
  return (
    <MeContext.Provider value={me}>
      <Shell me={me} onLogout={logout} />
      <DialogHost />
    </MeContext.Provider>
  );
}

function Shell(props: { me: Me; onLogout: () => void }) {
  const route = useRoute();
  const { me } = props;
  const section = route.parts[0] ?? '';
  const item = NAV.find((n) => n.key === section);
  useEffect(() => {
    // The hash as it is now, not as it was at render: a link followed
    // right after log-in must not be sent back to the landing view.
    const now = parseHash(location.hash).parts[0] ?? '';
    const at = NAV.find((n) => n.key === now);
    if (!now || (at && !at.allowed(me))) navigate(href([landing(me)]), true);
  }, [section, me]);
  return (
    <>
      <header class="topbar">
        <a class="brand" href={href([landing(me)])}>
          <span class="brand-mark" aria-hidden="true" /> Airlock
        </a>
        <nav class="nav" aria-label="Views">
          {NAV.filter((n) => n.allowed(me)).map((n) => (
            <a key={n.key} href={href([n.key])} class={n.key === section ? 'active' : ''} data-testid={`nav-${n.key}`}>
              {n.label}
            </a>
          ))}
        </nav>
        <div class="who">
          <span class="muted small" data-testid="time-zone" title="every time on these pages is in this zone">
            times in {zone()}
          </span>
          <span data-testid="whoami" title={`role ${me.role}`}>
            {me.name} <span class="muted">({me.role})</span>
            {me.scope && (
              <span class="muted small" data-testid="scope" title="this token sees only these queues and handlers">
                {' '}
                {scopeText(me.scope)}
              </span>
            )}
          </span>
          <button class="link" data-testid="logout" onClick={props.onLogout}>
            Log out
          </button>
        </div>
      </header>
      <main class="main">{item && item.allowed(me) ? <Page route={route} /> : null}</main>
    </>
  );
}

function Page(props: { route: Route }) {
  const [section, arg] = props.route.parts;
  switch (section) {
    case 'fleet':
      return <Fleet />;
    case 'queues':
      return arg ? <Queue name={arg} key={arg} /> : <Queues />;
    case 'jobs':
      return arg && arg.includes(':') ? <Job jobRef={arg} key={arg} /> : <Jobs route={props.route} />;
    case 'handlers':
      return arg ? <Handler name={arg} digest={props.route.query.get('digest')} key={arg} /> : <Handlers />;
    case 'schedules':
      return <Schedules />;
    case 'events':
      return <Events />;
    case 'search':
      return <Search route={props.route} />;
    case 'audit':
      return <Audit route={props.route} />;
    default:
      return null;
  }
}

render(<App />, document.getElementById('app')!);
