/**
 * Remote mode: the portal (a backend-for-frontend) runs the OAuth flow on the
 * server and keeps the tokens; the browser only has the portal's session cookie.
 * Nothing token-like is ever written to browser storage in this mode.
 *
 * `/login` without `success` goes to `{IamEntrepotApiUrlRemote}/login?app=<AppName>`;
 * the portal comes back to `/login?success=1` or `?success=0`.
 */
import { BackendApi } from './api.js';
import { BaseService } from './base.js';
import { AuthError } from './errors.js';

const RETURN_PARAMS = ['success', 'authentication_failed'];
/**
 * Set in sessionStorage (this tab) just before going to the portal's logout: only a return
 * this tab asked for is a logout. A crafted link to `/?success=1` logs nobody out. Not a
 * secret, nothing token-like: just the fact that a logout is under way.
 */
export const REMOTE_LOGOUT_KEY = 'roadkit:remote:logout-pending';

export class RemoteService extends BaseService {
  constructor({ settings, env, emitter }) {
    super({ mode: 'remote', settings, env, emitter });
    this.portalUrl = String(settings.IamEntrepotApiUrlRemote).replace(/\/+$/, '');
    this.api = new BackendApi({ baseUrl: this.portalUrl, fetch: env.fetch, credentials: 'include' });
  }

  /** True on the app's login route (`{BaseUrl}login` or `login.html`), nowhere else. */
  isLoginRoute() {
    const path = this.env.location.pathname;
    const base = new URL(this.appUrl).pathname;
    return path === `${base}login` || path === `${base}login.html`;
  }

  /** The portal's login URL for this app. */
  loginUrl() {
    const url = new URL(`${this.portalUrl}/login`);
    url.searchParams.set('app', this.settings.AppName);
    return url.toString();
  }

  /** Go to the portal's login. */
  login() {
    this.env.navigate(this.loginUrl());
    return 'redirect';
  }

  /**
   * - On the login route with `success=1`: GET /me, GET /documents (events
   *   `service:user:loaded` then `service:documents:loaded`), THEN
   *   authenticated → `login`.
   * - With `success=0` (or `authentication_failed`): `no-auth` with an error.
   * - On the login route without `success`: `no-auth` (useAuth then redirects to the portal).
   * - Elsewhere: asks GET /me whether the portal session is alive (`restored` / `no-auth`).
   * @returns {Promise<{status: string, error?: AuthError}>}
   */
  async resolveAccessStatus() {
    const q = new URL(this.env.location.href).searchParams;
    if (q.has('success') || q.has('authentication_failed')) {
      const success = q.get('success');
      const failed = q.has('authentication_failed');
      this.cleanUrl(RETURN_PARAMS);
      if (!this.isLoginRoute()) {
        if (this.#takeLogoutMark()) {
          // The portal's return from the logout this tab started (e.g. /?success=1).
          this.endSession('logout');
          return { status: 'logout' };
        }
        // Any other `?success` outside the login route means nothing: ask the portal as usual.
        return (await this.restore()).ok ? { status: 'restored' } : { status: 'no-auth' };
      }
      if (success === '1' && !failed) {
        try {
          await this.loadUserAndDocuments();
        } catch (cause) {
          const error =
            cause instanceof AuthError
              ? cause
              : new AuthError('profile_unavailable', `Signed in, but the profile could not be loaded: ${cause.message}`, {
                  cause,
                });
          this.error = error;
          this.setAuthenticated(false, 'profile unavailable');
          return { status: 'no-auth', error };
        }
        this.error = null;
        this.setAuthenticated(true, 'login');
        return { status: 'login' };
      }
      const error = new AuthError('remote_login_failed', 'Sign-in failed: the portal could not authenticate you (success=0).');
      this.error = error;
      this.setAuthenticated(false, 'login failed');
      return { status: 'no-auth', error };
    }
    if (this.isLoginRoute()) return { status: 'no-auth' };
    return (await this.restore()).ok ? { status: 'restored' } : { status: 'no-auth' };
  }

  /** Is the portal session alive? (GET /me answered 200.) */
  async restore() {
    try {
      await this.loadUserAndDocuments();
      this.setAuthenticated(true, 'restored');
      return { ok: true };
    } catch (error) {
      this.setAuthenticated(false, 'no portal session');
      return { ok: false, error };
    }
  }

  /** In remote mode the session lives in the portal: ask it. */
  async checkSession() {
    if (this.authenticated) return true;
    return (await this.restore()).ok;
  }

  #takeLogoutMark() {
    const storage = this.env.sessionStorage;
    if (!storage) return false;
    try {
      const marked = storage.getItem(REMOTE_LOGOUT_KEY) !== null;
      storage.removeItem(REMOTE_LOGOUT_KEY);
      return marked;
    } catch {
      return false;
    }
  }

  /** Forget the session here, tell the other tabs, let the portal end it (POST /logout). */
  async logout({ endIamSession = true } = {}) {
    this.endSession('logout');
    this.broadcast({ type: 'logout' });
    if (!endIamSession) return 'logout';
    try {
      this.env.sessionStorage?.setItem(REMOTE_LOGOUT_KEY, String(this.env.now?.() ?? Date.now()));
    } catch {
      // Storage disabled: the return is then handled as a plain visit (GET /me says signed out).
    }
    // Signed out here in any case: when the portal cannot be told, its session is already over
    // (GET /csrf-token answered 401) or the backend is down, and the app shows the return.
    let target = '';
    try {
      target = await this.api.portalLogout(this.settings.AppName);
    } catch {
      target = '';
    }
    if (!/^https?:\/\//.test(target)) target = `${this.appUrl}?success=1`;
    this.env.navigate(target);
    return 'redirect';
  }
}
