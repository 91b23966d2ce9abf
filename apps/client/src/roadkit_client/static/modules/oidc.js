/**
 * The OpenID Connect requests of the browser client (a PUBLIC client: PKCE,
 * `client_id` in the body, never a secret). Endpoints come from discovery,
 * `{IamUrl}/realms/{IamRealm}/.well-known/openid-configuration`, so the same code
 * talks to Keycloak and to the development IAM.
 */
import { AuthError, errorFromResponse } from './errors.js';

const FORM_HEADERS = {
  'Content-Type': 'application/x-www-form-urlencoded',
  Accept: 'application/json',
};

/** `{IamUrl}/realms/{realm}`: the issuer of a Keycloak realm. */
export function realmUrl(settings) {
  const base = String(settings.IamUrl).replace(/\/+$/, '');
  return `${base}/realms/${encodeURIComponent(settings.IamRealm)}`;
}

/** Fetch and check the discovery document. */
export async function discover(settings, fetchFn) {
  const url = `${realmUrl(settings)}/.well-known/openid-configuration`;
  let response;
  try {
    response = await fetchFn(url, { headers: { Accept: 'application/json' } });
  } catch (cause) {
    throw new AuthError('iam_unreachable', `IAM discovery failed: ${cause?.message ?? cause}`, { cause });
  }
  if (!response.ok) throw new AuthError('iam_unreachable', `IAM discovery failed: HTTP ${response.status}`);
  const doc = await response.json();
  for (const field of ['issuer', 'authorization_endpoint', 'token_endpoint']) {
    if (typeof doc[field] !== 'string') throw new AuthError('iam_unreachable', `IAM discovery lacks ${field}`);
  }
  return doc;
}

/**
 * The authorization URL (code flow, S256).
 * @param {object} discovery discovery document
 * @param {{clientId: string, redirectUri: string, scope: string, state: string,
 *   challenge: string, nonce?: string, prompt?: string}} p
 */
export function authorizeUrl(discovery, p) {
  const url = new URL(discovery.authorization_endpoint);
  url.searchParams.set('client_id', p.clientId);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('redirect_uri', p.redirectUri);
  url.searchParams.set('scope', p.scope);
  url.searchParams.set('state', p.state);
  url.searchParams.set('code_challenge', p.challenge);
  url.searchParams.set('code_challenge_method', 'S256');
  if (p.nonce) url.searchParams.set('nonce', p.nonce);
  if (p.prompt) url.searchParams.set('prompt', p.prompt);
  return url.toString();
}

async function postForm(fetchFn, url, params, what) {
  let response;
  try {
    response = await fetchFn(url, { method: 'POST', headers: FORM_HEADERS, body: new URLSearchParams(params).toString() });
  } catch (cause) {
    throw new AuthError('network_error', `${what}: ${cause?.message ?? cause}`, { cause });
  }
  if (!response.ok) throw await errorFromResponse(response, what);
  return response;
}

async function tokenJson(response, what) {
  const body = await response.json().catch(() => null);
  if (!body || typeof body.access_token !== 'string') {
    throw new AuthError('invalid_token_response', `${what}: the IAM answer has no access_token`);
  }
  return body;
}

/** Exchange an authorization code (`grant_type=authorization_code`) with its verifier. */
export async function exchangeCode(fetchFn, discovery, { clientId, code, redirectUri, verifier }) {
  const what = 'Token exchange failed';
  const response = await postForm(
    fetchFn,
    discovery.token_endpoint,
    { grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier, client_id: clientId },
    what,
  );
  return tokenJson(response, what);
}

/** Refresh (`grant_type=refresh_token`). */
export async function refreshToken(fetchFn, discovery, { clientId, refreshToken: rt }) {
  const what = 'Token refresh failed';
  const response = await postForm(
    fetchFn,
    discovery.token_endpoint,
    { grant_type: 'refresh_token', refresh_token: rt, client_id: clientId },
    what,
  );
  return tokenJson(response, what);
}

/** Revoke a refresh token (RFC 7009). Failures are reported, never thrown. */
export async function revokeToken(fetchFn, discovery, { clientId, token }) {
  const endpoint = discovery.revocation_endpoint;
  if (!endpoint || !token) return false;
  try {
    const response = await fetchFn(endpoint, {
      method: 'POST',
      headers: FORM_HEADERS,
      body: new URLSearchParams({ token, token_type_hint: 'refresh_token', client_id: clientId }).toString(),
    });
    return response.ok;
  } catch {
    return false;
  }
}

/** The end-session URL (no confirmation page when `idToken` is given). */
export function endSessionUrl(discovery, { clientId, idToken, postLogoutRedirectUri, state }) {
  const endpoint = discovery.end_session_endpoint ?? `${discovery.issuer}/protocol/openid-connect/logout`;
  const url = new URL(endpoint);
  url.searchParams.set('client_id', clientId);
  if (idToken) url.searchParams.set('id_token_hint', idToken);
  if (postLogoutRedirectUri) url.searchParams.set('post_logout_redirect_uri', postLogoutRedirectUri);
  if (state) url.searchParams.set('state', state);
  return url.toString();
}

/** Query parameters the IAM adds to a redirect; stripped once read. */
export const CALLBACK_PARAMS = ['code', 'state', 'session_state', 'iss', 'error', 'error_description', 'error_uri'];
