import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  base64url,
  codeChallengeS256,
  generateCodeVerifier,
  generateState,
} from '../src/roadkit_client/static/modules/pkce.js';

// RFC 7636, Appendix B.
const RFC_OCTETS = [
  116, 24, 223, 180, 151, 153, 224, 37, 79, 250, 96, 125, 216, 173, 187, 186, 22, 212, 37, 77, 105, 214, 191, 240, 91,
  88, 5, 88, 83, 132, 141, 121,
];
const RFC_VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
const RFC_CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

test('base64url of the RFC 7636 appendix B octets is its code verifier', () => {
  assert.equal(base64url(new Uint8Array(RFC_OCTETS)), RFC_VERIFIER);
});

test('S256 challenge matches RFC 7636 appendix B', async () => {
  assert.equal(await codeChallengeS256(RFC_VERIFIER), RFC_CHALLENGE);
});

test('generated verifiers are 43 unpadded base64url characters and differ', () => {
  const a = generateCodeVerifier();
  const b = generateCodeVerifier();
  assert.match(a, /^[A-Za-z0-9_-]{43}$/);
  assert.notEqual(a, b);
});

test('verifier uses the injected crypto', () => {
  const fake = { getRandomValues: (arr) => arr.set(RFC_OCTETS) };
  assert.equal(generateCodeVerifier(fake), RFC_VERIFIER);
});

test('a malformed verifier is refused (RFC 7636 4.1 charset and length)', async () => {
  await assert.rejects(codeChallengeS256('short'), TypeError);
  await assert.rejects(codeChallengeS256(`${'a'.repeat(42)}!`), TypeError);
  await assert.rejects(codeChallengeS256('a'.repeat(129)), TypeError);
});

test('states are 128-bit random tokens', () => {
  const states = new Set(Array.from({ length: 50 }, () => generateState()));
  assert.equal(states.size, 50);
  for (const s of states) assert.match(s, /^[A-Za-z0-9_-]{22}$/);
});
