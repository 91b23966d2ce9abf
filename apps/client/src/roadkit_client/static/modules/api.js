/**
 * The backend API (`/me`, `/documents`).
 *
 * Local mode sends `Authorization: Bearer <access token>`; on a 401 it asks for a
 * fresh token once and retries once. Remote mode sends no token, only the
 * portal's session cookie (`credentials: 'include'`).
 */
import { AuthError } from './errors.js';

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
    const response = await this.request(path, init);
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

  /** GET /documents: `[{id, title, type, date, geojson}]`. */
  async listDocuments() {
    const docs = await this.#json('/documents', {}, 'GET /documents');
    if (!Array.isArray(docs)) throw new ApiError('GET /documents: the answer is not a list', 200);
    return docs;
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
