// Test doubles for the browser facilities the auth modules use, and a small
// in-memory IAM (discovery, authorize, token, revoke, JWKS) that checks PKCE the
// way Keycloak does. Node built-ins only.
import { MemoryStorage } from '../src/roadkit_client/static/modules/storage.js';
import { base64url } from '../src/roadkit_client/static/modules/pkce.js';

export const APP = 'http://app.test';
export const IAM = 'http://iam.test';
export const API = 'http://api.test';
export const REALM = 'roadkit';
export const ISSUER = `${IAM}/realms/${REALM}`;

export const SETTINGS = Object.freeze({
  mode: 'local',
  IamUrl: IAM,
  IamRealm: REALM,
  IamClientId: 'roadkit-app',
  IamEntrepotApiUrl: API,
  IamEntrepotApiUrlRemote: `${API}/portal`,
  IamScope: 'openid',
  IamCheckSsoTimeout: 2000,
});

/** A manual clock: `tick(ms)` moves time and runs the timers that fall due. */
export class FakeClock {
  constructor(start = 1_700_000_000_000) {
    this.t = start;
    this.timers = new Map();
    this.nextId = 1;
  }
  now = () => this.t;
  setTimeout = (fn, ms) => {
    const id = this.nextId++;
    this.timers.set(id, { at: this.t + Math.max(0, ms), fn });
    return id;
  };
  clearTimeout = (id) => {
    this.timers.delete(id);
  };
  /** The delay of the earliest pending timer, or null. */
  nextDelay() {
    const ats = [...this.timers.values()].map((t) => t.at);
    return ats.length ? Math.min(...ats) - this.t : null;
  }
  async tick(ms) {
    const end = this.t + ms;
    for (;;) {
      const due = [...this.timers.entries()].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.timers.delete(due[0]);
      this.t = Math.max(this.t, due[1].at);
      due[1].fn();
      await flush();
    }
    this.t = end;
    await flush();
  }
}

/** Let pending promise callbacks (and fetch fakes) run. */
export async function flush(rounds = 6) {
  // Web Crypto work (id token checks) completes off the event loop: give it real time too.
  for (let i = 0; i < rounds; i += 1) {
    for (let j = 0; j < 20; j += 1) await new Promise((r) => setImmediate(r));
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** A tiny EventTarget-like window with 'message' and 'storage' listeners. */
export class FakeWindow {
  constructor() {
    this.listeners = new Map();
  }
  addEventListener(type, fn) {
    if (!this.listeners.has(type)) this.listeners.set(type, new Set());
    this.listeners.get(type).add(fn);
  }
  removeEventListener(type, fn) {
    this.listeners.get(type)?.delete(fn);
  }
  count(type) {
    return this.listeners.get(type)?.size ?? 0;
  }
  dispatch(type, event) {
    for (const fn of [...(this.listeners.get(type) ?? [])]) fn(event);
  }
}

/** A document whose iframes report to `onFrame(frame)` when appended. */
export class FakeDocument {
  constructor() {
    this.frames = [];
    this.onFrame = null;
    const doc = this;
    this.body = {
      appendChild(frame) {
        frame.attached = true;
        doc.frames.push(frame);
        if (doc.onFrame) queueMicrotask(() => doc.onFrame(frame));
      },
    };
  }
  createElement(tag) {
    const doc = this;
    const frame = {
      tag,
      attrs: {},
      style: {},
      src: '',
      attached: false,
      removed: false,
      contentWindow: { name: 'frame-window' },
      setAttribute(k, v) {
        this.attrs[k] = v;
      },
      remove() {
        this.removed = true;
        this.attached = false;
        doc.frames = doc.frames.filter((f) => f !== this);
      },
    };
    return frame;
  }
  /** Frames still in the page. */
  get attached() {
    return this.frames.filter((f) => f.attached);
  }
}

export function makeLocation(href) {
  const loc = {
    href,
    get origin() {
      return new URL(this.href).origin;
    },
    get pathname() {
      return new URL(this.href).pathname;
    },
    get search() {
      return new URL(this.href).search;
    },
  };
  const history = {
    state: null,
    replaced: [],
    replaceState(state, _title, url) {
      this.state = state;
      loc.href = new URL(url, loc.href).toString();
      this.replaced.push(loc.href);
    },
  };
  return { location: loc, history };
}

export function json(body, status = 200, headers = {}) {
  return new Response(status === 204 ? null : JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json', ...headers },
  });
}

/** A fetch fake: routes by "METHOD url-without-query" to handlers; records calls. */
export function makeFetch(routes) {
  const calls = [];
  async function fetchFn(url, init = {}) {
    const method = (init.method ?? 'GET').toUpperCase();
    const u = new URL(url);
    const key = `${method} ${u.origin}${u.pathname}`;
    const call = { method, url: String(url), key, init, body: init.body ?? null, headers: init.headers ?? {} };
    calls.push(call);
    const handler = routes[key];
    if (!handler) return json({ error: 'not_found', key }, 404);
    return handler(call, u);
  }
  fetchFn.calls = calls;
  fetchFn.routes = routes;
  fetchFn.count = (key) => calls.filter((c) => c.key === key).length;
  return fetchFn;
}

async function sha256b64url(text) {
  return base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))));
}

/**
 * An in-memory Keycloak-like IAM. `authorize(url)` plays the browser at the
 * authorization endpoint and returns the redirect URL (with code, state,
 * session_state, iss) or an error redirect when `prompt=none` has no session.
 */
export class FakeIam {
  constructor(clock) {
    this.clock = clock;
    this.codes = new Map();
    this.refreshTokens = new Map();
    this.sessionActive = true;
    this.lifetime = 300;
    this.counter = 0;
    this.revoked = [];
    this.refreshRefused = false;
  }

  async init() {
    this.keys = await crypto.subtle.generateKey(
      { name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
      true,
      ['sign', 'verify'],
    );
    this.jwk = { ...(await crypto.subtle.exportKey('jwk', this.keys.publicKey)), kid: 'k1', use: 'sig', alg: 'RS256' };
    return this;
  }

  async sign(claims, header = { alg: 'RS256', typ: 'JWT', kid: 'k1' }, key = this.keys.privateKey) {
    const enc = (o) => base64url(new TextEncoder().encode(JSON.stringify(o)));
    const input = `${enc(header)}.${enc(claims)}`;
    const sig = await crypto.subtle.sign({ name: 'RSASSA-PKCS1-v1_5' }, key, new TextEncoder().encode(input));
    return `${input}.${base64url(new Uint8Array(sig))}`;
  }

  discovery() {
    const p = `${ISSUER}/protocol/openid-connect`;
    return {
      issuer: ISSUER,
      authorization_endpoint: `${p}/auth`,
      token_endpoint: `${p}/token`,
      end_session_endpoint: `${p}/logout`,
      revocation_endpoint: `${p}/revoke`,
      userinfo_endpoint: `${p}/userinfo`,
      jwks_uri: `${p}/certs`,
    };
  }

  authorize(href) {
    this.lastAuthorize = href;
    const u = new URL(href);
    const q = u.searchParams;
    const redirect = new URL(q.get('redirect_uri'));
    if (q.get('prompt') === 'none' && !this.sessionActive) {
      redirect.searchParams.set('error', 'login_required');
      redirect.searchParams.set('state', q.get('state'));
      redirect.searchParams.set('iss', ISSUER);
      return redirect.toString();
    }
    this.sessionActive = true;
    const code = `code-${++this.counter}`;
    this.codes.set(code, {
      challenge: q.get('code_challenge'),
      method: q.get('code_challenge_method'),
      redirectUri: q.get('redirect_uri'),
      clientId: q.get('client_id'),
      nonce: q.get('nonce'),
      scope: q.get('scope'),
    });
    redirect.searchParams.set('state', q.get('state'));
    redirect.searchParams.set('session_state', 'sess-1');
    redirect.searchParams.set('iss', ISSUER);
    redirect.searchParams.set('code', code);
    return redirect.toString();
  }

  async #issue(clientId, nonce) {
    const n = ++this.counter;
    const now = Math.floor(this.clock.now() / 1000);
    const refresh = `rt-${n}`;
    this.refreshTokens.set(refresh, { clientId, nonce });
    const idToken = await this.sign({
      iss: ISSUER,
      aud: clientId,
      sub: 'user-1',
      exp: now + this.lifetime,
      iat: now,
      nonce,
      preferred_username: 'demo',
    });
    return json(
      {
        access_token: `at-${n}`,
        expires_in: this.lifetime,
        refresh_expires_in: 1800,
        refresh_token: refresh,
        token_type: 'Bearer',
        id_token: idToken,
        'not-before-policy': 0,
        session_state: 'sess-1',
        scope: 'openid profile email',
      },
      200,
      { 'Cache-Control': 'no-store' },
    );
  }

  async token(call) {
    const form = new URLSearchParams(call.body);
    const bad = (d, error = 'invalid_grant', status = 400) => json({ error, error_description: d }, status);
    if (form.has('client_secret') || call.headers.Authorization) return bad('secret sent by a public client', 'invalid_client', 401);
    if (form.get('grant_type') === 'authorization_code') {
      const entry = this.codes.get(form.get('code'));
      if (!entry) return bad('Code not valid');
      this.codes.delete(form.get('code'));
      if (entry.redirectUri !== form.get('redirect_uri')) return bad('Incorrect redirect_uri');
      if (entry.clientId !== form.get('client_id')) return bad('Client not allowed to exchange code');
      const verifier = form.get('code_verifier');
      if (!verifier) return bad('PKCE code verifier not specified');
      if (entry.method !== 'S256' || (await sha256b64url(verifier)) !== entry.challenge) {
        return bad('PKCE verification failed: Code mismatch');
      }
      return this.#issue(entry.clientId, entry.nonce);
    }
    if (form.get('grant_type') === 'refresh_token') {
      const rt = this.refreshTokens.get(form.get('refresh_token'));
      if (!rt || !this.sessionActive || this.refreshRefused) return bad('Session not active');
      this.refreshTokens.delete(form.get('refresh_token'));
      return this.#issue(rt.clientId, rt.nonce);
    }
    return bad('unsupported', 'unsupported_grant_type');
  }

  routes() {
    const d = this.discovery();
    return {
      [`GET ${ISSUER}/.well-known/openid-configuration`]: () => json(d),
      [`GET ${d.jwks_uri}`]: () => json({ keys: [this.jwk] }),
      [`POST ${d.token_endpoint}`]: (call) => this.token(call),
      [`POST ${d.revocation_endpoint}`]: (call) => {
        const form = new URLSearchParams(call.body);
        this.revoked.push(form.get('token'));
        this.refreshTokens.delete(form.get('token'));
        return new Response(null, { status: 200 });
      },
    };
  }
}

export const USER = { id: 'user-1', username: 'demo', email: 'demo@example.org', firstName: 'Demo', lastName: 'User', name: 'Demo User' };
export const DOCS = [{ id: 'd1', title: 'Route', type: 'route', date: '2024-01-01T00:00:00Z', geojson: { type: 'LineString', coordinates: [] } }];

/** Backend routes: /me answers 200 when the bearer is one of `valid()` tokens. */
export function backendRoutes({ validToken = () => true, base = API, cookieAuth = false } = {}) {
  const authed = (call) => (cookieAuth ? call.init.credentials === 'include' : validToken(call.headers.Authorization?.replace(/^Bearer /, '')));
  return {
    [`GET ${base}/me`]: (call) => (authed(call) ? json(USER) : json({ error: 'unauthorized' }, 401)),
    [`GET ${base}/documents`]: (call) => (authed(call) ? json(DOCS) : json({ error: 'unauthorized' }, 401)),
    [`GET ${base}/csrf-token`]: (call) => (authed(call) ? json({ csrfToken: CSRF_TOKEN }) : json({ error: 'unauthorized' }, 401)),
    [`POST ${base}/logout`]: (call) =>
      call.headers['X-CSRF-Token'] === CSRF_TOKEN ? json({ redirect: `${APP}/?success=1` }) : json({ error: 'csrf_token_invalid' }, 403),
  };
}

/** The portal session's CSRF token in the fake backend. */
export const CSRF_TOKEN = 'csrf-token-1';

/**
 * A complete local-mode environment: fake IAM + backend + browser facilities.
 * @param {{href?: string, local?: MemoryStorage, session?: MemoryStorage}} [o]
 */
export async function makeWorld(o = {}) {
  const clock = o.clock ?? new FakeClock();
  const iam = o.iam ?? (await new FakeIam(clock).init());
  const live = new Set();
  const fetchFn = makeFetch({
    ...iam.routes(),
    ...backendRoutes({ validToken: (t) => !!t && live.has(t) }),
  });
  const { location, history } = makeLocation(o.href ?? `${APP}/`);
  const navigations = [];
  const win = new FakeWindow();
  const doc = new FakeDocument();
  const channelMessages = [];
  const env = {
    fetch: fetchFn,
    localStorage: o.local ?? new MemoryStorage(),
    sessionStorage: o.session ?? new MemoryStorage(),
    location,
    history,
    navigate: (url) => navigations.push(url),
    crypto: globalThis.crypto,
    now: clock.now,
    setTimeout: clock.setTimeout,
    clearTimeout: clock.clearTimeout,
    document: doc,
    window: win,
    openChannel: () => ({ postMessage: (m) => channelMessages.push(m), close() {}, onmessage: null }),
    locks: null,
  };
  // Every access token the fake IAM issues is accepted by the backend until revoked by the test.
  const origToken = fetchFn.routes[`POST ${iam.discovery().token_endpoint}`];
  fetchFn.routes[`POST ${iam.discovery().token_endpoint}`] = async (call) => {
    const response = await origToken(call);
    if (response.ok) {
      const body = await response.clone().json();
      live.add(body.access_token);
    }
    return response;
  };
  return { clock, iam, fetch: fetchFn, env, location, history, navigations, window: win, document: doc, live, channelMessages };
}

/**
 * The subset of IndexedDB the refresh hand-off uses (open + upgrade, object stores keyed by a
 * keyPath, put/get/getAll/delete, transaction completion), shared by the tabs that hold the same
 * instance and consistent across them, as in browsers. Requests complete asynchronously, in order.
 */
export class FakeIndexedDB {
  constructor() {
    this.databases = new Map(); // name -> {version, stores: Map<storeName, {keyPath, rows: Map}>}
    this.opened = 0;
  }

  /** Every row of every store, for assertions. */
  rows() {
    return [...this.databases.values()].flatMap((db) => [...db.stores.values()].flatMap((s) => [...s.rows.values()]));
  }

  open(name, version = 1) {
    const req = { result: null, error: null, onsuccess: null, onerror: null, onupgradeneeded: null, onblocked: null };
    setImmediate(() => {
      this.opened += 1;
      let db = this.databases.get(name);
      const upgrade = !db || db.version < version;
      if (!db) {
        db = { version: 0, stores: new Map() };
        this.databases.set(name, db);
      }
      req.result = this.#connection(db);
      if (upgrade) {
        db.version = version;
        req.onupgradeneeded?.({ target: req });
      }
      req.onsuccess?.({ target: req });
    });
    return req;
  }

  #connection(db) {
    return {
      onversionchange: null,
      close() {},
      createObjectStore(storeName, { keyPath }) {
        db.stores.set(storeName, { keyPath, rows: new Map() });
      },
      transaction(storeName) {
        const tx = { oncomplete: null, onerror: null, onabort: null, error: null };
        const queue = [];
        const run = () => {
          const next = queue.shift();
          if (next) {
            next();
            setImmediate(run);
          } else {
            tx.oncomplete?.();
          }
        };
        setImmediate(run);
        const request = (fn) => {
          const req = { result: undefined, onsuccess: null, onerror: null };
          queue.push(() => {
            req.result = fn();
            req.onsuccess?.({ target: req });
          });
          return req;
        };
        tx.objectStore = () => {
          const store = db.stores.get(storeName);
          return {
            put: (value) => request(() => store.rows.set(value[store.keyPath], structuredClone(value)) && value[store.keyPath]),
            get: (key) => request(() => structuredClone(store.rows.get(key))),
            getAll: () => request(() => [...store.rows.values()].map((v) => structuredClone(v))),
            delete: (key) => request(() => void store.rows.delete(key)),
          };
        };
        return tx;
      },
    };
  }
}

/**
 * localStorage as Chromium gives it to tabs in different renderer processes: each tab reads and
 * writes its own copy, and a write reaches the other tabs' copies later (then their `storage`
 * event fires). `hold()` keeps writes from propagating until `deliver()`; otherwise they arrive
 * on the next macrotask.
 */
export class TabStorages {
  #views = [];
  #pending = [];
  #held = false;

  /** A new tab's copy (initialised from the first tab's), whose `storage` events go to `win`. */
  view(win) {
    const data = new MemoryStorage();
    const source = this.#views[0]?.data;
    for (let i = 0; source && i < source.length; i += 1) data.setItem(source.key(i), source.getItem(source.key(i)));
    const entry = { data, win };
    this.#views.push(entry);
    const send = (key, oldValue, newValue) => {
      this.#pending.push({ from: entry, key, oldValue, newValue });
      setImmediate(() => {
        if (!this.#held) this.deliver();
      });
    };
    return {
      get length() {
        return data.length;
      },
      key: (i) => data.key(i),
      getItem: (k) => data.getItem(k),
      setItem: (k, v) => {
        const old = data.getItem(k);
        data.setItem(k, v);
        send(String(k), old, String(v));
      },
      removeItem: (k) => {
        const old = data.getItem(k);
        data.removeItem(k);
        send(String(k), old, null);
      },
      clear: () => {
        data.clear();
        send(null, null, null);
      },
    };
  }

  /** Keep writes in flight until `deliver()`. */
  hold() {
    this.#held = true;
  }

  /**
   * Propagate the writes in flight (the first `count` ones, else all) to the other tabs' copies
   * and fire their `storage` events; without `count`, stop holding.
   */
  deliver(count = Infinity) {
    if (count === Infinity) this.#held = false;
    const pending = this.#pending.splice(0, count);
    for (const change of pending) {
      for (const view of this.#views) {
        if (view === change.from) continue;
        if (change.key === null) view.data.clear();
        else if (change.newValue === null) view.data.removeItem(change.key);
        else view.data.setItem(change.key, change.newValue);
        view.win?.dispatch('storage', { key: change.key, oldValue: change.oldValue, newValue: change.newValue });
      }
    }
  }
}
