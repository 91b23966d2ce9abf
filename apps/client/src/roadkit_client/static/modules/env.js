/**
 * The browser facilities the services use, gathered in one object so that node
 * tests can inject fakes (fetch, storages, location, history, crypto, clock,
 * timers, DOM, cross-tab channels, Web Locks, IndexedDB). Nothing here runs at import time.
 */

function storageOrNull(name) {
  try {
    const s = globalThis[name];
    return s ?? null;
  } catch {
    // Access to web storage throws when it is disabled.
    return null;
  }
}

function indexedDBOrNull() {
  try {
    return globalThis.indexedDB ?? null;
  } catch {
    // Refused in some sandboxed frames and private modes: the refresh hand-off then does without.
    return null;
  }
}

/** The real browser environment. */
export function browserEnv() {
  const g = globalThis;
  return {
    fetch: (...args) => g.fetch(...args),
    localStorage: storageOrNull('localStorage'),
    sessionStorage: storageOrNull('sessionStorage'),
    location: g.location,
    history: g.history,
    navigate: (url) => g.location.assign(url),
    crypto: g.crypto,
    now: () => Date.now(),
    setTimeout: (fn, ms) => g.setTimeout(fn, ms),
    clearTimeout: (id) => g.clearTimeout(id),
    document: g.document,
    window: g.window,
    openChannel: (name) => (typeof g.BroadcastChannel === 'function' ? new g.BroadcastChannel(name) : null),
    locks: g.navigator?.locks ?? null,
    indexedDB: indexedDBOrNull(),
  };
}

/** The browser environment with `overrides` applied (tests pass a full set). */
export function makeEnv(overrides = {}) {
  const base = typeof globalThis.window === 'object' ? browserEnv() : {};
  return { ...base, ...overrides };
}
