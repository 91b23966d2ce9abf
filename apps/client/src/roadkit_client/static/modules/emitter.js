/**
 * A minimal event emitter.
 *
 * It also answers `dispatchEvent(name, payload)` / `addEventListener(name, fn)`
 * so that an app written for the IGNF library's emitter convention can pass its own.
 */
export function createEmitter() {
  /** @type {Map<string, Set<Function>>} */
  const listeners = new Map();

  function on(name, fn) {
    if (!listeners.has(name)) listeners.set(name, new Set());
    listeners.get(name).add(fn);
    return () => off(name, fn);
  }

  function off(name, fn) {
    listeners.get(name)?.delete(fn);
  }

  function emit(name, detail) {
    const event = { type: name, detail };
    for (const fn of [...(listeners.get(name) ?? []), ...(listeners.get('*') ?? [])]) {
      try {
        fn(event);
      } catch (err) {
        // A faulty listener must not break the authentication flow.
        console.error(`listener for ${name} failed`, err);
      }
    }
  }

  return {
    on,
    off,
    emit,
    addEventListener: on,
    removeEventListener: off,
    dispatchEvent: (name, payload) => emit(name, payload?.detail ?? payload),
  };
}

/** Event names emitted by the services. */
export const EVENTS = Object.freeze({
  USER_LOADED: 'service:user:loaded',
  DOCUMENTS_LOADED: 'service:documents:loaded',
  TOKEN_STORED: 'service:token:stored',
  TOKEN_REFRESHED: 'service:token:refreshed',
  SESSION_ENDED: 'service:session:ended',
  CHANGED: 'service:changed',
});
