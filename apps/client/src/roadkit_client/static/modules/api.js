/**
 * The backend API (`/me`, `/documents`, the portal's `/logout`).
 *
 * Local mode sends `Authorization: Bearer <access token>`; on a 401 it asks for a
 * fresh token once and retries once. Remote mode sends no token, only the
 * portal's session cookie (`credentials: 'include'`).
 */
import { AuthError } from './errors.js';

/** Pages of GET /documents read at most (the user's quota bounds the list long before). */
const MAX_PAGES = 100;

/** The query (`?limit=…&cursor=…`) of a `Link` header's rel="next" URL, or ''. */
export function nextPageQuery(link) {
  const match = /<([^>]*)>\s*;\s*rel="?next"?/.exec(link ?? '');
  if (!match) return '';
  try {
    // Only the query is kept: the next page is asked of this same backend URL.
    return new URL(match[1]).search;
  } catch {
    return '';
  }
}

export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
  }
}

export class BackendApi {
  /**
   * @param {{baseUrl: string, fetch: Function,
   *   getToken?: (opts: {rejected?: string}) => Promise<string>,
   *   credentials?: RequestCredentials}} p
   *   `getToken` is given in local mode; `rejected` is a token the API refused.
   */
  constructor({ baseUrl, fetch, getToken = null, credentials = 'same-origin' }) {
    this.baseUrl = String(baseUrl).replace(/\/+$/, '');
    this.fetch = fetch;
    this.getToken = getToken;
    this.credentials = credentials;
  }

  async #send(path, init, token) {
    const headers = { Accept: 'application/json', ...(init.headers ?? {}) };
    if (token) headers.Authorization = `Bearer ${token}`;
    try {
      return await this.fetch(`${this.baseUrl}${path}`, { ...init, headers, credentials: this.credentials });
    } catch (cause) {
      throw new ApiError(`${init.method ?? 'GET'} ${path}: backend unreachable (${cause?.message ?? cause})`, 0);
    }
  }

  /** One request, with the local-mode 401 → refresh → retry-once rule. */
  async request(path, init = {}) {
    if (!this.getToken) return this.#send(path, init, null);
    const token = await this.getToken({});
    let response = await this.#send(path, init, token);
    if (response.status === 401) {
      const fresh = await this.getToken({ rejected: token });
      response = await this.#send(path, init, fresh);
    }
    return response;
  }

  async #json(path, init, what) {
    return this.#read(await this.request(path, init), what);
  }

  async #read(response, what) {
    if (response.status === 401 || response.status === 403) {
      throw new AuthError('unauthorized', `${what}: the backend refused the session (HTTP ${response.status})`, {
        status: response.status,
      });
    }
    if (!response.ok) throw new ApiError(`${what}: HTTP ${response.status}`, response.status);
    return response.status === 204 ? null : response.json();
  }

  /** GET /me: the user profile `{id, username, email, firstName, lastName, name}`. */
  me() {
    return this.#json('/me', {}, 'GET /me');
  }

  /**
   * GET /documents, every page: `[{id, title, type, date, geojson}]`, newest first. The
   * backend answers one page at a time; `Link: <…?limit=…&cursor=…>; rel="next"` names the next.
   */
  async listDocuments() {
    const docs = [];
    const seen = new Set();
    let query = '';
    for (let pages = 0; pages < MAX_PAGES; pages += 1) {
      const response = await this.request(`/documents${query}`, {});
      const page = await this.#read(response, 'GET /documents');
      if (!Array.isArray(page)) throw new ApiError('GET /documents: the answer is not a list', 200);
      docs.push(...page);
      query = nextPageQuery(response.headers.get('Link'));
      if (!query || seen.has(query)) return docs;
      seen.add(query);
    }
    throw new ApiError(`GET /documents: more than ${MAX_PAGES} pages`, 200);
  }

  /**
   * Remote mode: end the portal session. GET /csrf-token, then POST /logout?app=… with the
   * token in `X-CSRF-Token` (a page of another origin can do neither).
   * @returns {Promise<string>} where the portal sends the browser (`…?success=1`)
   */
  async portalLogout(app) {
    const { csrfToken } = await this.#json('/csrf-token', {}, 'GET /csrf-token');
    const answer = await this.#json(
      `/logout?app=${encodeURIComponent(app)}`,
      { method: 'POST', headers: { 'X-CSRF-Token': String(csrfToken) } },
      'POST /logout',
    );
    return String(answer?.redirect ?? '');
  }

  /** POST /documents `{title, type: "route"|"isochrone", geojson}`. */
  createDocument(doc) {
    return this.#json(
      '/documents',
      { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(doc) },
      'POST /documents',
    );
  }

  /** DELETE /documents/{id}. */
  async deleteDocument(id) {
    await this.#json(`/documents/${encodeURIComponent(id)}`, { method: 'DELETE' }, 'DELETE /documents');
  }
}
