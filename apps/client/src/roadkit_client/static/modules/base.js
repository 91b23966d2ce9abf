/**
 * What the local and remote services share: observable state
 * (`authenticated`, `user`, `documents`, `error`), events, profile and document
 * loading, URL cleaning and the cross-tab channel.
 */
import { EVENTS, createEmitter } from './emitter.js';

export const CHANNEL_NAME = 'roadkit-auth';

export class BaseService {
  /**
   * @param {{mode: string, settings: object, env: object, emitter?: object}} p
   */
  constructor({ mode, settings, env, emitter }) {
    this.mode = mode;
    this.settings = settings;
    this.env = env;
    this.emitter = emitter ?? createEmitter();
    this.authenticated = false;
    /** The raw profile of GET /me, or null. */
    this.user = null;
    this.documents = [];
    this.error = null;
    this.api = null;
    this.channel = env.openChannel ? env.openChannel(CHANNEL_NAME) : null;
    if (this.channel) {
      this.channel.onmessage = (event) => this.onBroadcast(event.data);
    }
  }

  /** The application URL (origin + BaseUrl), with a trailing slash. */
  get appUrl() {
    return new URL(this.settings.BaseUrl ?? '/', this.env.location.origin).toString();
  }

  emit(name, detail) {
    this.emitter.emit(name, detail);
  }

  /** Set `authenticated`, emitting `service:changed` when it changes. */
  setAuthenticated(value, reason) {
    const changed = this.authenticated !== value;
    this.authenticated = value;
    if (!value) {
      this.user = null;
      this.documents = [];
    }
    if (changed) this.emit(EVENTS.CHANGED, { authenticated: value, reason });
  }

  /**
   * GET /me then GET /documents, emitting `service:user:loaded` then
   * `service:documents:loaded`. A failed profile fails the whole step; failed
   * documents do not (the user is still signed in, with an empty list).
   */
  async loadUserAndDocuments() {
    const user = await this.api.me();
    this.user = user;
    this.emit(EVENTS.USER_LOADED, user);
    try {
      this.documents = await this.api.listDocuments();
      this.emit(EVENTS.DOCUMENTS_LOADED, this.documents);
    } catch (err) {
      this.documents = [];
      this.emit('service:documents:failed', err);
    }
  }

  /** Reload the document list (after a save or a delete). */
  async refreshDocuments() {
    this.documents = await this.api.listDocuments();
    this.emit(EVENTS.DOCUMENTS_LOADED, this.documents);
    return this.documents;
  }

  /** Remove `names` from the query string with history.replaceState (no navigation). */
  cleanUrl(names) {
    const url = new URL(this.env.location.href);
    let touched = false;
    for (const name of names) {
      if (url.searchParams.has(name)) {
        url.searchParams.delete(name);
        touched = true;
      }
    }
    if (touched && this.env.history) {
      this.env.history.replaceState(this.env.history.state ?? null, '', url.pathname + url.search + url.hash);
    }
  }

  /** Tell the other tabs of this origin. */
  broadcast(message) {
    try {
      this.channel?.postMessage(message);
    } catch {
      // A closed channel: the storage event still reaches the other tabs.
    }
  }

  /** A message from another tab. */
  onBroadcast(message) {
    if (message?.type === 'logout') this.endSession('logged out in another tab', { broadcast: false });
  }

  /** Forget the session locally (overridden by the local service to drop tokens). */
  endSession(reason, _options = {}) {
    this.error = null;
    const was = this.authenticated;
    this.setAuthenticated(false, reason);
    if (was) this.emit('service:session:ended', { reason });
  }

  /** Stop timers and listeners (tests, page unload). */
  dispose() {
    try {
      this.channel?.close();
    } catch {
      // already closed
    }
  }
}
