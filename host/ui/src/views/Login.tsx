import { useState } from 'preact/hooks';
import type { TargetedSubmitEvent } from 'preact';
import { api, ApiError } from '../api';
import type { Me } from '../types';
import { ErrorBox } from '../ui';

/** Asks for a token and checks it with GET /v1/me; nothing else is fetched before. */
export function Login(props: { onLogin: (token: string, me: Me) => void; notice?: string | null }) {
  const [token, setToken] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  async function submit(e: TargetedSubmitEvent<HTMLFormElement>) {
    e.preventDefault();
    const t = token.trim();
    if (!t) {
      setError(new ApiError(0, 'empty', 'Enter an API token.'));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const me = await api.meWith(t);
      props.onLogin(t, me);
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  }
  return (
    <main class="login" data-testid="login">
      <form class="card login-card" onSubmit={submit} autoComplete="off">
        <h1>
          <span class="brand-mark" aria-hidden="true" /> Airlock
        </h1>
        <p class="muted">Log in with an API token. It stays in this tab only and is sent as a bearer header.</p>
        {props.notice && <p class="notice" data-testid="login-notice">{props.notice}</p>}
        <label class="field">
          <span>API token</span>
          <input
            type="password"
            name="token"
            autoComplete="off"
            spellcheck={false}
            data-testid="login-token"
            value={token}
            onInput={(e) => setToken(e.currentTarget.value)}
            autoFocus
          />
        </label>
        <ErrorBox error={error} testid="login-error" />
        <button type="submit" class="primary" disabled={busy} data-testid="login-submit">
          {busy ? 'Checking…' : 'Log in'}
        </button>
      </form>
    </main>
  );
}
