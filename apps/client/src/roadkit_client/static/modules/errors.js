/**
 * One error type for every authentication failure.
 *
 * `code` is an OAuth 2.0 error code when the IAM sent one (`invalid_grant`,
 * `login_required`...) or one of our own codes (`invalid_state`,
 * `remote_login_failed`...), so callers branch on `code`, never on message text.
 */
export class AuthError extends Error {
  /**
   * @param {string} code machine-readable error code
   * @param {string} message human-readable description
   * @param {{status?: number, cause?: unknown}} [extra]
   */
  constructor(code, message, extra = {}) {
    super(message || code, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'AuthError';
    this.code = code;
    this.status = extra.status;
  }
}

/**
 * Codes meaning "the IAM session is over": the client must drop its tokens. The one list:
 * the local service ends the session when a refresh (or a silent check) answers one of them.
 * `invalid_client` / `unauthorized_client`: the IAM no longer accepts this client, so no
 * refresh can ever succeed.
 */
export const SESSION_OVER_CODES = new Set([
  'invalid_grant',
  'login_required',
  'interaction_required',
  'consent_required',
  'session_ended',
  'invalid_client',
  'unauthorized_client',
]);

/** True when `error` (an AuthError or a code) says the IAM session is over. */
export function isSessionOver(error) {
  const code = typeof error === 'string' ? error : error?.code;
  return SESSION_OVER_CODES.has(code);
}

/**
 * Build an AuthError from a non-2xx token-endpoint style response
 * (`{"error": ..., "error_description": ...}` JSON, as Keycloak answers).
 * @param {Response} response
 * @param {string} what what was being attempted, for the message
 */
export async function errorFromResponse(response, what) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (body && typeof body.error === 'string') {
    const description = body.error_description || body.error;
    return new AuthError(body.error, `${what}: ${description}`, { status: response.status });
  }
  return new AuthError('http_error', `${what}: HTTP ${response.status}`, { status: response.status });
}
