/**
 * PKCE (RFC 7636, method S256) and the other random values of the flow.
 * `crypto` is injectable so that the functions run in node tests and browsers alike.
 */

/** base64url without padding (RFC 4648 section 5). */
export function base64url(bytes) {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let binary = '';
  for (const b of view) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** `n` random bytes from a Web Crypto object, base64url encoded. */
export function randomToken(n = 32, crypto = globalThis.crypto) {
  const bytes = new Uint8Array(n);
  crypto.getRandomValues(bytes);
  return base64url(bytes);
}

/** A code verifier: 32 random bytes give 43 characters of `[A-Za-z0-9-_]`. */
export function generateCodeVerifier(crypto = globalThis.crypto) {
  return randomToken(32, crypto);
}

const VERIFIER_RE = /^[A-Za-z0-9\-._~]{43,128}$/;

/** S256 challenge: base64url(SHA-256(ASCII verifier)). */
export async function codeChallengeS256(verifier, crypto = globalThis.crypto) {
  if (!VERIFIER_RE.test(verifier)) {
    throw new TypeError('code verifier must be 43-128 characters of [A-Za-z0-9-._~]');
  }
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}

/** An opaque `state` (or `nonce`) value: 128 random bits. */
export function generateState(crypto = globalThis.crypto) {
  return randomToken(16, crypto);
}
