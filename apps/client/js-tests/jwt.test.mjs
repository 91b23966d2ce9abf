import assert from 'node:assert/strict';
import { test } from 'node:test';
import { verifyIdToken } from '../src/roadkit_client/static/modules/jwt.js';
import { FakeClock, FakeIam, ISSUER } from './fakes.mjs';

const clock = new FakeClock();
const iam = await new FakeIam(clock).init();
const now = Math.floor(clock.now() / 1000);
const claims = { iss: ISSUER, aud: 'roadkit-app', sub: 'u', exp: now + 300, iat: now, nonce: 'n1' };
const check = (token, extra = {}) =>
  verifyIdToken(token, { jwks: { keys: [iam.jwk] }, issuer: ISSUER, clientId: 'roadkit-app', nonce: 'n1', nowMs: clock.now(), ...extra });

test('a well-formed id token is accepted', async () => {
  const payload = await check(await iam.sign(claims));
  assert.equal(payload.sub, 'u');
});

test('a token signed by another key is refused', async () => {
  const other = await new FakeIam(clock).init();
  await assert.rejects(check(await other.sign(claims)), { code: 'invalid_id_token', message: /signature/ });
});

test('a tampered payload is refused', async () => {
  const [h, , s] = (await iam.sign(claims)).split('.');
  const forged = Buffer.from(JSON.stringify({ ...claims, sub: 'admin' })).toString('base64url');
  await assert.rejects(check(`${h}.${forged}.${s}`), /signature/);
});

test('"alg": "none" is refused', async () => {
  const enc = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  await assert.rejects(check(`${enc({ alg: 'none' })}.${enc(claims)}.`), /algorithm/);
});

for (const [label, change, pattern] of [
  ['issuer', { iss: 'http://evil.test' }, /issuer/],
  ['audience', { aud: 'other-client' }, /audience/],
  ['expiry', { exp: now - 3600 }, /expired/],
  ['nonce', { nonce: 'n2' }, /nonce/],
]) {
  test(`a wrong ${label} is refused`, async () => {
    await assert.rejects(check(await iam.sign({ ...claims, ...change })), pattern);
  });
}

test('an audience list containing the client is accepted', async () => {
  await check(await iam.sign({ ...claims, aud: ['account', 'roadkit-app'] }));
});
