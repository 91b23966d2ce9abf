/**
 * Browser storage of the authentication state.
 *
 * - localStorage key `service` holds `{"connexion": {"token": <token record>,
 *   "id_token": <string|undefined>}}` (the specification's nested path
 *   service > connexion > token). Shared by the tabs of the origin.
 * - sessionStorage holds one entry per login or silent check in progress,
 *   keyed by its `state`: `roadkit:oauth2:pending:<state>` =
 *   `{verifier, nonce, redirectUri, purpose, createdAt}`. Per tab, so two tabs
 *   logging in at once never overwrite each other's verifier.
 */
import { isTokenRecord } from './token.js';

export const SERVICE_KEY = 'service';
export const PENDING_PREFIX = 'roadkit:oauth2:pending:';
export const LOGOUT_STATE_KEY = 'roadkit:oauth2:logout-state';

/** How long a started login may take before its state is refused. */
export const PENDING_TTL_MS = 10 * 60 * 1000;

function readJson(storage, key) {
  try {
    const raw = storage.getItem(key);
    return raw ? JSON.parse(raw) : null;
  } catch {
    return null;
  }
}

/** The token record and id token kept in localStorage under `service > connexion`. */
export class TokenStore {
  /** @param {Storage} storage localStorage (or a fake) */
  constructor(storage) {
    this.storage = storage;
  }

  #readService() {
    const value = readJson(this.storage, SERVICE_KEY);
    return value && typeof value === 'object' ? value : {};
  }

  /** The stored token record, or null when absent or malformed. */
  read() {
    const token = this.#readService().connexion?.token;
    return isTokenRecord(token) ? token : null;
  }

  /** The stored id token (used as `id_token_hint` at logout), or null. */
  readIdToken() {
    const idToken = this.#readService().connexion?.id_token;
    return typeof idToken === 'string' ? idToken : null;
  }

  /** When the refresh token expires (ms since the epoch), or null when unknown or unlimited. */
  readRefreshExpiresAt() {
    const value = this.#readService().connexion?.refresh_expires_at;
    return Number.isFinite(value) ? value : null;
  }

  /**
   * Store a record; `idToken` replaces the stored id token when given. `refreshExpiresAt`
   * is kept next to the record (the record itself has exactly the specification's fields).
   * @param {object} record token record
   * @param {string|null} [idToken]
   * @param {number|null} [refreshExpiresAt]
   */
  write(record, idToken, refreshExpiresAt = null) {
    const service = this.#readService();
    const connexion = { ...(service.connexion ?? {}), token: record };
    if (idToken) connexion.id_token = idToken;
    if (Number.isFinite(refreshExpiresAt)) connexion.refresh_expires_at = refreshExpiresAt;
    else delete connexion.refresh_expires_at;
    this.storage.setItem(SERVICE_KEY, JSON.stringify({ ...service, connexion }));
  }

  /** Forget the token, id token and refresh expiry. */
  clear() {
    const service = this.#readService();
    if (!service.connexion) return;
    const { token: _t, id_token: _i, refresh_expires_at: _r, ...rest } = service.connexion;
    this.storage.setItem(SERVICE_KEY, JSON.stringify({ ...service, connexion: rest }));
  }
}

/**
 * Logins and silent checks in progress, keyed by their `state`.
 * A state is single-use: `consume` removes it whatever the outcome.
 */
export class PendingStore {
  /**
   * @param {Storage} storage sessionStorage (or a fake)
   * @param {() => number} now clock in ms
   */
  constructor(storage, now = Date.now) {
    this.storage = storage;
    this.now = now;
  }

  /** Remember a started flow. */
  put(state, { verifier, nonce, redirectUri, purpose }) {
    this.purgeExpired();
    const entry = { verifier, nonce, redirectUri, purpose, createdAt: this.now() };
    this.storage.setItem(PENDING_PREFIX + state, JSON.stringify(entry));
  }

  /**
   * Take the entry of `state` out of storage. Returns null when the state is
   * missing, unknown (forged), already used (replayed) or too old.
   */
  consume(state) {
    if (typeof state !== 'string' || state === '') return null;
    const key = PENDING_PREFIX + state;
    const entry = readJson(this.storage, key);
    this.storage.removeItem(key);
    if (!entry || typeof entry.verifier !== 'string') return null;
    if (!(this.now() - entry.createdAt < PENDING_TTL_MS) || entry.createdAt > this.now() + 60_000) return null;
    return entry;
  }

  /** Drop entries older than the time limit. */
  purgeExpired() {
    for (const key of this.#keys()) {
      const entry = readJson(this.storage, key);
      if (!entry || !(this.now() - entry.createdAt < PENDING_TTL_MS)) this.storage.removeItem(key);
    }
  }

  /** Drop every entry (logout). */
  clear() {
    for (const key of this.#keys()) this.storage.removeItem(key);
    this.storage.removeItem(LOGOUT_STATE_KEY);
  }

  #keys() {
    const keys = [];
    for (let i = 0; i < this.storage.length; i += 1) {
      const key = this.storage.key(i);
      if (key && key.startsWith(PENDING_PREFIX)) keys.push(key);
    }
    return keys;
  }
}

/** An in-memory Storage, for tests and for browsers that refuse web storage. */
export class MemoryStorage {
  #data = new Map();
  get length() {
    return this.#data.size;
  }
  key(i) {
    return [...this.#data.keys()][i] ?? null;
  }
  getItem(k) {
    return this.#data.has(k) ? this.#data.get(k) : null;
  }
  setItem(k, v) {
    this.#data.set(String(k), String(v));
  }
  removeItem(k) {
    this.#data.delete(k);
  }
  clear() {
    this.#data.clear();
  }
}
