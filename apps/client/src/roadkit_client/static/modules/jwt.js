/**
 * ID token checks (OpenID Connect Core 3.1.3.7): RS256 signature against the
 * realm's JWKS, `iss`, `aud`, `exp` and the `nonce` sent with the request.
 * The id token is only used as `id_token_hint` at logout, but it is checked
 * before it is kept.
 */
import { AuthError } from './errors.js';

function b64urlDecode(part) {
  const b64 = part.replace(/-/g, '+').replace(/_/g, '/');
  const bin = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

/** Split and parse a compact JWS without checking it. */
export function decodeJwt(token) {
  const parts = String(token).split('.');
  if (parts.length !== 3) throw new AuthError('invalid_id_token', 'ID token is not a compact JWT');
  try {
    const text = (p) => new TextDecoder().decode(b64urlDecode(p));
    return {
      header: JSON.parse(text(parts[0])),
      payload: JSON.parse(text(parts[1])),
      signingInput: new TextEncoder().encode(`${parts[0]}.${parts[1]}`),
      signature: b64urlDecode(parts[2]),
    };
  } catch (cause) {
    throw new AuthError('invalid_id_token', 'ID token cannot be decoded', { cause });
  }
}

const ALGS = {
  RS256: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' },
  ES256: { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' },
};

/**
 * Verify an ID token.
 * @param {string} idToken
 * @param {{jwks: {keys: object[]}, issuer: string, clientId: string, nonce?: string,
 *   nowMs: number, crypto?: Crypto, leewayS?: number}} p
 * @returns {Promise<object>} the claims
 */
export async function verifyIdToken(idToken, p) {
  const crypto = p.crypto ?? globalThis.crypto;
  const { header, payload, signingInput, signature } = decodeJwt(idToken);
  const alg = ALGS[header.alg];
  if (!alg) throw new AuthError('invalid_id_token', `ID token algorithm ${header.alg} is not accepted`);
  const candidates = (p.jwks?.keys ?? []).filter(
    (k) => (!header.kid || k.kid === header.kid) && (!k.use || k.use === 'sig') && (!k.alg || k.alg === header.alg),
  );
  let valid = false;
  for (const jwk of candidates) {
    try {
      const key = await crypto.subtle.importKey('jwk', { ...jwk, alg: header.alg, ext: true }, alg, false, ['verify']);
      if (await crypto.subtle.verify(alg, key, signature, signingInput)) {
        valid = true;
        break;
      }
    } catch {
      // A key of another type or a malformed key: try the next one.
    }
  }
  if (!valid) throw new AuthError('invalid_id_token', 'ID token signature is not valid');
  const leeway = p.leewayS ?? 60;
  const now = p.nowMs / 1000;
  if (payload.iss !== p.issuer) throw new AuthError('invalid_id_token', `ID token issuer ${payload.iss} is not ${p.issuer}`);
  const aud = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  if (!aud.includes(p.clientId)) throw new AuthError('invalid_id_token', 'ID token audience does not include this client');
  if (!(Number(payload.exp) + leeway > now)) throw new AuthError('invalid_id_token', 'ID token has expired');
  if (p.nonce !== undefined && payload.nonce !== p.nonce) {
    throw new AuthError('invalid_id_token', 'ID token nonce does not match the request');
  }
  return payload;
}
