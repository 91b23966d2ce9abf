/**
 * `useAuth({service, onLogin, onLogout, onError, options})`: the app-facing
 * hook. It exposes `isAuthenticated`, `user` (the raw profile object of GET
 * /me), `checkAuthentication()`, `checkSession()` and `logout()`.
 *
 * - `onLogin()` / `onLogout()` are called on every transition of
 *   `isAuthenticated` (sign-in, restore, silent sign-in / logout, refused
 *   refresh, logout in another tab), and `onLogout()` also on the return from
 *   the IAM's end-session page. `onError(error)` always receives an `AuthError`.
 * - `checkAuthentication()` is idempotent: concurrent calls share one run, and
 *   a callback URL is consumed once (its parameters are stripped first).
 * - `options.loginRequired` (default true): with no session and no error, go to
 *   the IAM (local) or portal (remote) login, as the specification's state table says.
 */
import { EVENTS } from './emitter.js';
import { AuthError } from './errors.js';

/** A display name for a profile: "First Last", else name, username or email. */
export function displayName(user) {
  if (!user) return '';
  const full = [user.firstName, user.lastName].filter(Boolean).join(' ');
  return full || user.name || user.username || user.email || '';
}

function asAuthError(err) {
  if (err instanceof AuthError) return err;
  return new AuthError('unexpected_error', err?.message ?? String(err), { cause: err });
}

export function useAuth({ service, onLogin = () => {}, onLogout = () => {}, onError, options = {} }) {
  const loginRequired = options.loginRequired ?? true;
  const report = (err) => {
    const error = asAuthError(err);
    lastError = error;
    notify();
    if (onError) onError(error);
    else console.error(error);
    return error;
  };
  const call = (fn) => {
    try {
      fn();
    } catch (err) {
      console.error('auth callback failed', err);
    }
  };

  let lastError = null;
  let last = service.authenticated;
  let running = null;
  const subscribers = new Set();
  const notify = () => {
    for (const fn of subscribers) call(() => fn(auth));
  };

  const off = service.emitter.on(EVENTS.CHANGED, () => {
    const now = service.authenticated;
    if (now === last) return;
    last = now;
    if (now) lastError = null;
    notify();
    call(now ? onLogin : onLogout);
  });

  async function run() {
    const result = await service.resolveAccessStatus();
    if (result.error) report(result.error);
    if (result.status === 'logout') {
      notify();
      call(onLogout);
      return 'logout';
    }
    if (service.authenticated) return result.status;
    if (result.status === 'no-auth' && !result.error && loginRequired) return service.login();
    notify();
    return result.status;
  }

  const auth = {
    service,
    /** True once the user is signed in (profile loaded). */
    get isAuthenticated() {
      return service.authenticated;
    },
    /** The profile object of GET /me, or null. */
    get user() {
      return service.user;
    },
    get documents() {
      return service.documents;
    },
    /** The last authentication error reported to onError, or null. */
    get error() {
      return lastError;
    },
    /** Resolve the status (callback, stored token, portal return). */
    checkAuthentication() {
      if (!running) {
        running = run()
          .catch((err) => {
            report(err);
            return 'error';
          })
          .finally(() => {
            running = null;
          });
      }
      return running;
    },
    /** Silent session check; see the service's checkSession. Never rejects. */
    async checkSession() {
      try {
        return await service.checkSession();
      } catch (err) {
        report(err);
        return false;
      }
    },
    /** Start a login explicitly (the "Sign in" button). */
    login() {
      return Promise.resolve(service.login()).catch((err) => {
        report(err);
        return 'error';
      });
    },
    /** Log out here, in the other tabs, at the IAM. */
    logout(opts) {
      return Promise.resolve(service.logout(opts)).catch((err) => {
        report(err);
        return 'error';
      });
    },
    /** Be told of every state change; returns the unsubscribe function. */
    subscribe(fn) {
      subscribers.add(fn);
      return () => subscribers.delete(fn);
    },
    dispose() {
      off();
      subscribers.clear();
    },
  };
  return auth;
}
