/**
 * The token record kept under `service > connexion > token` (local mode only).
 *
 * Shape, exactly the specification's fields:
 *   { authenticator: "authenticator:oauth2", access_token, refresh_token,
 *     expires_in, token_type: "Bearer", scope, expires_at }
 * `expires_in` is the lifetime in seconds as sent by the IAM; `expires_at` is an
 * absolute time in MILLISECONDS since the Unix epoch, computed on receipt:
 * `expires_at = received_at_ms + expires_in * 1000`.
 */

export const AUTHENTICATOR = 'authenticator:oauth2';

/** Fallback lifetime when the IAM sends no `expires_in` and the token is opaque. */
const DEFAULT_LIFETIME_S = 60;

/** Largest margin kept before `expires_at` when scheduling a refresh. */
export const MAX_REFRESH_MARGIN_MS = 60_000;

/** A token this close to `expires_at` is already treated as expired. */
export const EXPIRY_SKEW_MS = 5_000;

/** The `exp` claim of a JWT access token, in seconds, or null. */
function jwtExp(token) {
  try {
    const part = token.split('.')[1];
    const json = atob(part.replace(/-/g, '+').replace(/_/g, '/'));
    const exp = JSON.parse(json).exp;
    return Number.isFinite(exp) ? exp : null;
  } catch {
    return null;
  }
}

/**
 * Pick the single scope word to store: the requested scope when it was granted,
 * else the first granted one. The IAM answers a space-separated list
 * (e.g. "openid profile email"); the record keeps one word.
 */
export function singleScope(granted, requested) {
  const grantedWords = String(granted ?? '').split(/\s+/).filter(Boolean);
  const requestedWords = String(requested ?? '').split(/\s+/).filter(Boolean);
  const wanted = requestedWords.find((w) => grantedWords.includes(w));
  return wanted ?? grantedWords[0] ?? requestedWords[0] ?? 'openid';
}

/**
 * Build the token record from a token-endpoint response.
 * @param {object} response parsed JSON of a successful token response
 * @param {number} nowMs time of receipt, ms since the epoch
 * @param {{requestedScope?: string, previous?: object}} [options] `previous`: the record
 *   being refreshed; its refresh token is kept when the IAM does not rotate it.
 */
export function makeTokenRecord(response, nowMs, { requestedScope, previous } = {}) {
  if (!response || typeof response.access_token !== 'string' || !response.access_token) {
    throw new TypeError('token response has no access_token');
  }
  let expiresIn = Number.parseInt(response.expires_in, 10);
  if (!Number.isFinite(expiresIn) || expiresIn <= 0) {
    // Never treat a missing lifetime as "never expires" (the reference library's bug).
    const exp = jwtExp(response.access_token);
    expiresIn = exp ? Math.max(0, Math.floor(exp - nowMs / 1000)) : DEFAULT_LIFETIME_S;
  }
  return {
    authenticator: AUTHENTICATOR,
    access_token: response.access_token,
    refresh_token: response.refresh_token ?? previous?.refresh_token ?? '',
    expires_in: expiresIn,
    token_type: 'Bearer',
    scope: singleScope(response.scope, requestedScope),
    expires_at: nowMs + expiresIn * 1000,
  };
}

/** True when the record is usable as a token record (shape check, not expiry). */
export function isTokenRecord(value) {
  return (
    !!value &&
    typeof value === 'object' &&
    value.authenticator === AUTHENTICATOR &&
    typeof value.access_token === 'string' &&
    value.access_token.length > 0 &&
    Number.isFinite(value.expires_at)
  );
}

/** True when the access token must not be used any more at `nowMs`. */
export function isExpired(record, nowMs, skewMs = EXPIRY_SKEW_MS) {
  if (!isTokenRecord(record)) return true;
  const skew = Math.min(skewMs, (record.expires_in * 1000) / 10);
  return nowMs + skew >= record.expires_at;
}

/**
 * Margin before `expires_at` at which a refresh is scheduled:
 * a fifth of the lifetime, at most one minute (240 s into a 300 s token).
 */
export function refreshMargin(record) {
  return Math.min(MAX_REFRESH_MARGIN_MS, (record.expires_in * 1000) / 5);
}

/** Milliseconds from `nowMs` until the refresh should run (0 = now). */
export function refreshDelay(record, nowMs) {
  return Math.max(0, record.expires_at - refreshMargin(record) - nowMs);
}

/**
 * When the refresh token stops working, in ms since the epoch, from the IAM's
 * `refresh_expires_in` (Keycloak's SSO idle/max limit): `null` when the IAM gives
 * none or `0` (no limit, offline tokens). A refresh answer without it keeps `previous`.
 */
export function refreshExpiresAt(response, nowMs, previous = null) {
  const seconds = Number(response?.refresh_expires_in);
  if (response?.refresh_expires_in === undefined || response?.refresh_expires_in === null) return previous;
  return Number.isFinite(seconds) && seconds > 0 ? nowMs + seconds * 1000 : null;
}
