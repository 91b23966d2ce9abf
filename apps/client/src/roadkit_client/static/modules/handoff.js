/**
 * The cross-tab refresh hand-off (local mode).
 *
 * The refresh runs under a Web Lock, and the tab that waited for the lock must learn
 * whether the previous holder already refreshed the token it saw. localStorage cannot
 * tell it: in Chromium each renderer process reads its own copy of localStorage, and
 * another tab's write reaches that copy asynchronously, on another channel than the
 * lock grant. The tab granted the lock can still read the OLD token (measured: one
 * grant in two when the writer releases the lock right after writing) and would refresh
 * it again, reusing a rotated refresh token: the IAM then ends the session.
 *
 * IndexedDB is consistent across tabs: a transaction that completed before the lock
 * was released is seen by every transaction started after the grant. So, before
 * releasing the lock, the refreshing tab records `{from, to, at}`: fingerprints
 * (truncated SHA-256) of the old and new access tokens, never the tokens themselves
 * (tokens stay in web storage, as the specification says). A tab granted the lock that
 * still sees its old token looks its fingerprint up; when found, the new token is
 * already on its way to this tab's localStorage: it waits for it (storage event, or
 * polling) and adopts it instead of refreshing.
 *
 * Without IndexedDB (or when it fails) every method answers "nothing known" and the
 * refresh behaves as without a hand-off.
 */

export const HANDOFF_DB = 'roadkit-auth';
export const HANDOFF_STORE = 'token-refreshes';
/** How long a record is kept (it only matters for the next few seconds). */
export const HANDOFF_KEEP_MS = 10 * 60 * 1000;
/** Longest wait for another tab's token to reach this tab's localStorage. */
export const HANDOFF_WAIT_MS = 3000;
/** Longest wait for IndexedDB itself: the refresh lock is held meanwhile. */
const IDB_TIMEOUT_MS = 2000;

/** Hex SHA-256 of `token`, first 32 digits (128 bits): names a token without holding it. */
export async function fingerprint(token, crypto) {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(token));
  return [...new Uint8Array(digest).slice(0, 16)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error ?? new Error('IndexedDB request failed'));
  });
}

function completion(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error ?? new Error('IndexedDB transaction failed'));
    tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'));
  });
}

/** Which token was refreshed into which, shared by the tabs of the origin through IndexedDB. */
export class RefreshHandoff {
  #db = null;

  /**
   * @param {{indexedDB: IDBFactory|null, crypto: Crypto, now: () => number,
   *          setTimeout: Function, clearTimeout: Function}} env
   */
  constructor(env) {
    this.env = env;
  }

  /** True when IndexedDB exists (else every lookup answers null). */
  get available() {
    return !!this.env.indexedDB && !!this.env.crypto?.subtle;
  }

  /** `promise`, or `fallback` after `ms` (IndexedDB is never allowed to hold the lock for long). */
  #bounded(promise, fallback, ms = IDB_TIMEOUT_MS) {
    let timer = null;
    const timeout = new Promise((resolve) => {
      timer = this.env.setTimeout(() => resolve(fallback), ms);
    });
    return Promise.race([promise.catch(() => fallback), timeout]).finally(() => this.env.clearTimeout(timer));
  }

  #open() {
    if (!this.#db) {
      this.#db = new Promise((resolve, reject) => {
        const req = this.env.indexedDB.open(HANDOFF_DB, 1);
        req.onupgradeneeded = () => {
          req.result.createObjectStore(HANDOFF_STORE, { keyPath: 'from' });
        };
        req.onsuccess = () => {
          const db = req.result;
          // A later version opened by another tab (a newer app): let it upgrade.
          db.onversionchange = () => {
            db.close();
            this.#db = null;
          };
          resolve(db);
        };
        req.onerror = () => reject(req.error ?? new Error('IndexedDB open failed'));
        req.onblocked = () => reject(new Error('IndexedDB open blocked'));
      }).catch((error) => {
        this.#db = null;
        throw error;
      });
    }
    return this.#db;
  }

  /**
   * Record that the token `fromToken` was refreshed into `toToken`; resolves once the
   * transaction is committed (call it BEFORE releasing the refresh lock). Never throws.
   */
  record(fromToken, toToken) {
    if (!this.available || !fromToken || !toToken) return Promise.resolve(false);
    const work = (async () => {
      const [from, to, db] = await Promise.all([
        fingerprint(fromToken, this.env.crypto),
        fingerprint(toToken, this.env.crypto),
        this.#open(),
      ]);
      const at = this.env.now();
      const tx = db.transaction(HANDOFF_STORE, 'readwrite');
      const done = completion(tx);
      const store = tx.objectStore(HANDOFF_STORE);
      store.put({ from, to, at });
      const all = store.getAll();
      all.onsuccess = () => {
        for (const entry of all.result ?? []) {
          if (!(at - entry.at < HANDOFF_KEEP_MS)) store.delete(entry.from);
        }
      };
      await done;
      return true;
    })();
    return this.#bounded(work, false);
  }

  /** The record `{from, to, at}` of a refresh of `token` by any tab, or null. Never throws. */
  find(token) {
    if (!this.available || !token) return Promise.resolve(null);
    const work = (async () => {
      const [from, db] = await Promise.all([fingerprint(token, this.env.crypto), this.#open()]);
      const tx = db.transaction(HANDOFF_STORE, 'readonly');
      const entry = await request(tx.objectStore(HANDOFF_STORE).get(from));
      return entry && typeof entry.to === 'string' ? entry : null;
    })();
    return this.#bounded(work, null);
  }

  /** Close the database (the service is disposed). */
  close() {
    const db = this.#db;
    this.#db = null;
    db?.then((d) => d.close()).catch(() => {});
  }
}
