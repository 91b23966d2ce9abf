/**
 * Local mode: OAuth 2.0 authorization code flow with PKCE (S256) against a
 * Keycloak-compatible IAM, tokens kept in the browser.
 *
 * State rules (the reference library's bugs 1, 2, 5, 6, 11 fixed):
 * - every authorization request gets a fresh random `state`, stored in
 *   sessionStorage together with ITS verifier and nonce;
 * - a callback is accepted only when its `state` is one we stored: a missing,
 *   unknown (forged), already used (replayed) or stale state is rejected and the
 *   code is never exchanged; the entry is deleted on first read;
 * - the callback parameters are stripped from the URL before anything else.
 */
import { BackendApi } from './api.js';
import { BaseService } from './base.js';
import { EVENTS } from './emitter.js';
import { AuthError, isSessionOver } from './errors.js';
import { HANDOFF_WAIT_MS, RefreshHandoff } from './handoff.js';
import { verifyIdToken } from './jwt.js';
import {
  CALLBACK_PARAMS,
  authorizeUrl,
  discover,
  endSessionUrl,
  exchangeCode,
  refreshToken,
  revokeToken,
} from './oidc.js';
import { codeChallengeS256, generateCodeVerifier, generateState } from './pkce.js';
import { runSilentFrame } from './silent.js';
import { LOGOUT_STATE_KEY, PendingStore, SERVICE_KEY, TokenStore } from './storage.js';
import { isExpired, makeTokenRecord, refreshDelay, refreshExpiresAt } from './token.js';

const REFRESH_LOCK = 'roadkit:token-refresh';
const MAX_TIMER_MS = 2 ** 31 - 1;
/** How often a tab waiting for another tab's token reads localStorage again (storage events come too). */
const HANDOFF_POLL_MS = 25;
/** At most this many successive hand-offs are followed before refreshing anyway. */
const MAX_HANDOFF_HOPS = 3;

export class LocalService extends BaseService {
  #discovery = null;
  #jwks = null;
  #refreshing = null;
  #silent = null;
  #timer = null;
  #retryMs = 0;
  /** Bumped whenever the session ends, so that late results of older work are dropped. */
  #generation = 0;

  constructor({ settings, env, emitter }) {
    super({ mode: 'local', settings, env, emitter });
    this.tokens = new TokenStore(env.localStorage);
    this.handoff = new RefreshHandoff(env);
    this.pending = new PendingStore(env.sessionStorage, env.now);
    this.api = new BackendApi({
      baseUrl: settings.IamEntrepotApiUrl,
      fetch: env.fetch,
      getToken: (opts) => this.getAccessToken(opts),
      credentials: 'omit',
    });
    this.onStorage = (event) => this.#onStorage(event);
    env.window?.addEventListener?.('storage', this.onStorage);
  }

  get redirectUri() {
    return this.appUrl;
  }

  get silentRedirectUri() {
    return new URL('silent-check.html', this.appUrl).toString();
  }

  /** The discovery document, fetched once (retried after a failure). */
  discovery() {
    if (!this.#discovery) {
      this.#discovery = discover(this.settings, this.env.fetch).catch((err) => {
        this.#discovery = null;
        throw err;
      });
    }
    return this.#discovery;
  }

  async #keys() {
    if (!this.#jwks) {
      const d = await this.discovery();
      this.#jwks = this.env
        .fetch(d.jwks_uri, { headers: { Accept: 'application/json' } })
        .then((r) => {
          if (!r.ok) throw new AuthError('iam_unreachable', `JWKS: HTTP ${r.status}`);
          return r.json();
        })
        .catch((err) => {
          this.#jwks = null;
          throw err;
        });
    }
    return this.#jwks;
  }

  /** Verify an ID token; on an unknown key, fetch the JWKS again once (the IAM rotated its keys). */
  async #verifyIdToken(idToken, { issuer, nonce, nowMs }) {
    const check = async () =>
      verifyIdToken(idToken, {
        jwks: await this.#keys(),
        issuer,
        clientId: this.settings.IamClientId,
        nonce,
        nowMs,
        crypto: this.env.crypto,
      });
    try {
      return await check();
    } catch (error) {
      if (error.code !== 'invalid_id_token' || !/signature/.test(error.message)) throw error;
      this.#jwks = null;
      return check();
    }
  }

  /** Start a login: store verifier+nonce under a new state, go to the IAM. */
  async login() {
    const url = await this.#newAuthorization({ purpose: 'login', redirectUri: this.redirectUri });
    this.env.navigate(url.href);
    return 'redirect';
  }

  async #newAuthorization({ purpose, redirectUri, prompt }) {
    const d = await this.discovery();
    const verifier = generateCodeVerifier(this.env.crypto);
    const state = generateState(this.env.crypto);
    const nonce = generateState(this.env.crypto);
    this.pending.put(state, { verifier, nonce, redirectUri, purpose });
    const challenge = await codeChallengeS256(verifier, this.env.crypto);
    const href = authorizeUrl(d, {
      clientId: this.settings.IamClientId,
      redirectUri,
      scope: this.settings.IamScope,
      state,
      challenge,
      nonce,
      prompt,
    });
    return { href, state };
  }

  /**
   * Decide the status from the URL and storage:
   * `login` (callback accepted), `restored` (stored token reused), `logout`
   * (back from the IAM end-session), or `no-auth`. A rejected callback gives
   * `error` and falls back to the stored token, if any.
   * @returns {Promise<{status: string, error?: AuthError}>}
   */
  async resolveAccessStatus() {
    const url = new URL(this.env.location.href);
    const q = url.searchParams;
    if (q.has('code') || q.has('error') || q.has('state')) {
      const p = Object.fromEntries(CALLBACK_PARAMS.map((k) => [k, q.get(k)]));
      // Before anything else: a code must never stay in the address bar or history.
      this.cleanUrl(CALLBACK_PARAMS);
      const logoutState = this.env.sessionStorage.getItem(LOGOUT_STATE_KEY);
      if (!p.code && !p.error && p.state && logoutState && p.state === logoutState) {
        this.env.sessionStorage.removeItem(LOGOUT_STATE_KEY);
        return { status: 'logout' };
      }
      try {
        await this.#completeLogin(p);
        return { status: 'login' };
      } catch (error) {
        this.error = error;
        const restored = await this.restore();
        return { status: restored.ok ? 'restored' : 'no-auth', error };
      }
    }
    const restored = await this.restore();
    if (restored.ok) return { status: 'restored' };
    return restored.error ? { status: 'no-auth', error: restored.error } : { status: 'no-auth' };
  }

  async #completeLogin(p) {
    if (p.error) {
      if (p.state) this.pending.consume(p.state);
      throw new AuthError(p.error, p.error_description || `The IAM refused the sign-in (${p.error})`);
    }
    if (!p.state) throw new AuthError('invalid_state', 'Sign-in rejected: the response carries no state');
    const entry = this.pending.consume(p.state);
    if (!entry || entry.purpose !== 'login') {
      throw new AuthError(
        'invalid_state',
        'Sign-in rejected: the state does not match a sign-in started in this tab (unknown, already used or expired)',
      );
    }
    if (!p.code) throw new AuthError('invalid_request', 'Sign-in rejected: the response carries no code');
    const d = await this.discovery();
    if (p.iss && p.iss !== d.issuer) {
      throw new AuthError('invalid_issuer', `Sign-in rejected: issuer ${p.iss} is not ${d.issuer}`);
    }
    const response = await exchangeCode(this.env.fetch, d, {
      clientId: this.settings.IamClientId,
      code: p.code,
      redirectUri: entry.redirectUri,
      verifier: entry.verifier,
    });
    await this.#acceptTokens(response, entry.nonce);
    await this.#finishSignIn();
  }

  /** Check the id token, store the record, schedule its refresh. */
  async #acceptTokens(response, nonce) {
    const now = this.env.now();
    const d = await this.discovery();
    let idToken = null;
    if (response.id_token) {
      await this.#verifyIdToken(response.id_token, { issuer: d.issuer, nonce, nowMs: now });
      idToken = response.id_token;
    }
    const record = makeTokenRecord(response, now, { requestedScope: this.settings.IamScope });
    this.tokens.write(record, idToken, refreshExpiresAt(response, now));
    this.emit(EVENTS.TOKEN_STORED, { expires_at: record.expires_at });
    this.scheduleRefresh();
    return record;
  }

  /** Profile + documents, then `authenticated = true`; a refused profile ends the session. */
  async #finishSignIn() {
    const generation = this.#generation;
    try {
      await this.loadUserAndDocuments();
    } catch (error) {
      if (error.code === 'unauthorized' || error.code === 'session_ended') this.endSession('profile refused');
      throw error;
    }
    if (generation !== this.#generation) throw new AuthError('session_ended', 'Signed out meanwhile');
    this.error = null;
    this.setAuthenticated(true, 'login');
  }

  /**
   * Reuse the stored token: refresh it first when expired, then load the profile.
   * A refused refresh or a refused profile ends the session quietly (`ok: false`,
   * no error); a network failure keeps the token and reports the error.
   */
  async restore() {
    if (!this.tokens.read()) return { ok: false };
    try {
      await this.getAccessToken({});
      await this.#finishSignIn();
      // A reload: arm the refresh timer for the stored token (a refresh just made armed it too).
      this.scheduleRefresh();
      return { ok: true };
    } catch (error) {
      if (error.code === 'session_ended' || error.code === 'unauthorized') return { ok: false };
      this.error = error;
      return { ok: false, error };
    }
  }

  /**
   * A usable access token: the stored one, refreshed first when expired or
   * when `rejected` (a token the API answered 401 to) is still the stored one.
   */
  async getAccessToken({ rejected } = {}) {
    const record = this.tokens.read();
    if (!record) throw new AuthError('session_ended', 'Not signed in');
    const stale = rejected !== undefined && record.access_token === rejected;
    if (!stale && !isExpired(record, this.env.now())) return record.access_token;
    const fresh = await this.refresh({ seen: record.access_token });
    return fresh.access_token;
  }

  /**
   * Refresh the token. One refresh at a time in this tab, and across tabs when
   * Web Locks exist; a tab that waited for the lock reuses what another stored
   * (told by the IndexedDB hand-off, `handoff.js`, when its localStorage is late).
   * `invalid_grant` ends the session; a network error keeps it and retries later.
   */
  refresh({ seen } = {}) {
    if (!this.#refreshing) {
      const generation = this.#generation;
      // What this tab saw BEFORE waiting for the lock: if another tab stores a new token
      // meanwhile, it is adopted instead of refreshed again (one refresh for all tabs).
      const seenBefore = seen ?? this.tokens.read()?.access_token;
      const run = () => this.#refreshNow(generation, seenBefore);
      const locked = this.env.locks ? this.env.locks.request(REFRESH_LOCK, run) : run();
      this.#refreshing = Promise.resolve(locked).finally(() => {
        this.#refreshing = null;
      });
    }
    return this.#refreshing;
  }

  async #refreshNow(generation, seen) {
    let current = this.tokens.read();
    for (let hops = 0; current && hops < MAX_HANDOFF_HOPS; hops += 1) {
      if (current.access_token !== seen && !isExpired(current, this.env.now())) break; // adopted below
      if (!(await this.handoff.find(current.access_token))) break; // nobody refreshed it: this tab does
      // Another tab already refreshed the token this tab reads (refreshing it again would reuse a
      // rotated refresh token): this tab's localStorage is late. Wait for the successor.
      const waited = await this.#waitForNewToken(current.access_token);
      if (!waited) break; // not here within HANDOFF_WAIT_MS: refresh, as without the hand-off
      current = waited.record; // null: the session was dropped meanwhile
    }
    if (!current) throw new AuthError('session_ended', 'Not signed in');
    if (current.access_token !== seen && !isExpired(current, this.env.now())) {
      this.scheduleRefresh();
      return current; // another tab refreshed while we waited
    }
    if (!current.refresh_token) {
      this.endSession('no refresh token');
      throw new AuthError('session_ended', 'The token expired and cannot be refreshed');
    }
    const refreshEnd = this.tokens.readRefreshExpiresAt();
    if (refreshEnd !== null && this.env.now() >= refreshEnd) {
      // refresh_expires_in has passed: the IAM would answer invalid_grant; do not even ask.
      this.endSession('refresh token expired');
      throw new AuthError('session_ended', 'The session has expired (refresh token lifetime over)');
    }
    let response;
    try {
      const d = await this.discovery();
      response = await refreshToken(this.env.fetch, d, {
        clientId: this.settings.IamClientId,
        refreshToken: current.refresh_token,
      });
    } catch (error) {
      if (generation !== this.#generation) throw new AuthError('session_ended', 'Signed out meanwhile');
      if (isSessionOver(error)) {
        this.endSession(`refresh refused: ${error.message}`);
        throw new AuthError('session_ended', `The session has ended (${error.message})`, { cause: error });
      }
      this.#scheduleRetry();
      throw error;
    }
    if (generation !== this.#generation) {
      // Logged out while the refresh was in flight: never reinstall a token.
      throw new AuthError('session_ended', 'Signed out meanwhile');
    }
    const now = this.env.now();
    let idToken = null;
    if (response.id_token) {
      try {
        const d = await this.discovery();
        await this.#verifyIdToken(response.id_token, { issuer: d.issuer, nowMs: now });
        idToken = response.id_token;
      } catch {
        idToken = null; // keep the previous one
      }
    }
    const record = makeTokenRecord(response, now, { requestedScope: this.settings.IamScope, previous: current });
    this.tokens.write(record, idToken, refreshExpiresAt(response, now, this.tokens.readRefreshExpiresAt()));
    this.#retryMs = 0;
    this.emit(EVENTS.TOKEN_REFRESHED, { expires_at: record.expires_at });
    this.scheduleRefresh();
    // Still holding the lock: the next tab granted it learns that `current` is refreshed even
    // when its localStorage has not received `record` yet (committed before the lock is released).
    await this.handoff.record(current.access_token, record.access_token);
    return record;
  }

  /**
   * Wait until this tab's localStorage no longer holds the access token `seen` (another tab
   * stored its successor): `{record}` (null when the session was dropped meanwhile), or null
   * after HANDOFF_WAIT_MS. Woken by the `storage` event, and reads again every 25 ms.
   */
  #waitForNewToken(seen) {
    return new Promise((resolve) => {
      const win = this.env.window;
      const deadline = this.env.now() + HANDOFF_WAIT_MS;
      let timer = null;
      const finish = (value) => {
        win?.removeEventListener?.('storage', poke);
        resolve(value);
      };
      const check = () => {
        timer = null;
        const record = this.tokens.read();
        if (!record || record.access_token !== seen) finish({ record });
        else if (this.env.now() >= deadline || !this.env.setTimeout) finish(null);
        else timer = this.env.setTimeout(check, HANDOFF_POLL_MS);
      };
      const poke = () => {
        if (timer === null) return;
        this.env.clearTimeout(timer);
        check();
      };
      win?.addEventListener?.('storage', poke);
      check();
    });
  }

  /** Arm the timer that refreshes the stored token before it expires. */
  scheduleRefresh() {
    this.#clearTimer();
    const record = this.tokens.read();
    if (!record || !this.env.setTimeout) return null;
    const delay = Math.min(refreshDelay(record, this.env.now()), MAX_TIMER_MS);
    this.#timer = this.env.setTimeout(() => {
      this.#timer = null;
      const current = this.tokens.read();
      if (current && refreshDelay(current, this.env.now()) > 0) {
        // Another tab refreshed before this timer fired: follow its token, do not refresh again.
        this.scheduleRefresh();
        return;
      }
      this.refresh().catch(() => {});
    }, delay);
    return delay;
  }

  #scheduleRetry() {
    this.#clearTimer();
    this.#retryMs = Math.min(60_000, this.#retryMs ? this.#retryMs * 2 : 5_000);
    this.#timer = this.env.setTimeout(() => {
      this.#timer = null;
      this.refresh().catch(() => {});
    }, this.#retryMs);
  }

  #clearTimer() {
    if (this.#timer !== null) {
      this.env.clearTimeout(this.#timer);
      this.#timer = null;
    }
  }

  /**
   * Silent session check.
   * - A valid stored token: true (the profile is loaded if it was not).
   * - Otherwise a hidden frame loads the authorization endpoint with
   *   `prompt=none`; a returned code is exchanged and stored (true); an IAM
   *   answer such as `login_required` ends the local session (false). The frame
   *   is removed in every case, after `IamCheckSsoTimeout` ms at most.
   */
  checkSession() {
    if (!this.#silent) {
      this.#silent = this.#checkSessionNow().finally(() => {
        this.#silent = null;
      });
    }
    return this.#silent;
  }

  async #checkSessionNow() {
    const record = this.tokens.read();
    if (record && !isExpired(record, this.env.now())) {
      if (!this.authenticated) return (await this.restore()).ok;
      return true;
    }
    if (this.settings.IamCheckSsoDisable) return false;
    const generation = this.#generation;
    const { href, state } = await this.#newAuthorization({
      purpose: 'silent',
      redirectUri: this.silentRedirectUri,
      prompt: 'none',
    });
    const result = await runSilentFrame({ url: href, state, timeoutMs: this.settings.IamCheckSsoTimeout, env: this.env });
    const entry = this.pending.consume(state);
    if (result.timedOut || !entry) {
      this.setAuthenticated(false, 'silent check timed out');
      return false;
    }
    const p = result.params;
    if (p.error || !p.code) {
      this.endSession(`silent check: ${p.error ?? 'no code'}`);
      return false;
    }
    try {
      const d = await this.discovery();
      if (p.iss && p.iss !== d.issuer) throw new AuthError('invalid_issuer', `issuer ${p.iss} is not ${d.issuer}`);
      const response = await exchangeCode(this.env.fetch, d, {
        clientId: this.settings.IamClientId,
        code: p.code,
        redirectUri: entry.redirectUri,
        verifier: entry.verifier,
      });
      if (generation !== this.#generation) return false;
      await this.#acceptTokens(response, entry.nonce);
      await this.#finishSignIn();
      return true;
    } catch (error) {
      this.error = error;
      this.setAuthenticated(false, 'silent check failed');
      return false;
    }
  }

  /**
   * Log out: forget everything locally first, tell the other tabs, revoke the
   * refresh token, then end the IAM session (browser goes to the end-session
   * endpoint and comes back to the app with a `state` we recognise).
   * @param {{endIamSession?: boolean}} [options]
   */
  async logout({ endIamSession = true } = {}) {
    const record = this.tokens.read();
    const idToken = this.tokens.readIdToken();
    this.endSession('logout', { broadcast: true });
    let d = null;
    try {
      d = await this.discovery();
    } catch {
      d = null;
    }
    if (d && record?.refresh_token) {
      await revokeToken(this.env.fetch, d, { clientId: this.settings.IamClientId, token: record.refresh_token });
    }
    if (!endIamSession || !d) return 'logout';
    const state = generateState(this.env.crypto);
    this.env.sessionStorage.setItem(LOGOUT_STATE_KEY, state);
    this.env.navigate(
      endSessionUrl(d, {
        clientId: this.settings.IamClientId,
        idToken,
        postLogoutRedirectUri: this.appUrl,
        state,
      }),
    );
    return 'redirect';
  }

  /**
   * Drop the session in this tab: tokens, pending flows, timer; late results of
   * work started before are ignored. `broadcast` tells the other tabs.
   */
  endSession(reason, { broadcast = false } = {}) {
    this.#generation += 1;
    this.#clearTimer();
    this.tokens.clear();
    this.pending.clear();
    if (broadcast) this.broadcast({ type: 'logout' });
    super.endSession(reason);
  }

  /** Another tab changed `service` in localStorage. */
  #onStorage(event) {
    if (event.key !== SERVICE_KEY && event.key !== null) return;
    const record = this.tokens.read();
    if (!record) {
      if (this.authenticated) this.endSession('logged out in another tab');
      return;
    }
    if (this.authenticated) {
      this.scheduleRefresh(); // another tab refreshed: follow its expiry
    } else {
      this.restore().catch(() => {}); // another tab signed in
    }
  }

  dispose() {
    this.#clearTimer();
    this.handoff.close();
    this.env.window?.removeEventListener?.('storage', this.onStorage);
    super.dispose();
  }
}
