import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  AUTHENTICATOR,
  isExpired,
  makeTokenRecord,
  refreshDelay,
  refreshMargin,
  singleScope,
} from '../src/roadkit_client/static/modules/token.js';

const NOW = 1_730_393_104_613 - 3_600_000;
const RESPONSE = {
  access_token: 'AT',
  refresh_token: 'RT',
  expires_in: 3600,
  refresh_expires_in: 1800,
  token_type: 'bearer',
  id_token: 'ID',
  session_state: 's',
  scope: 'openid profile email',
  'not-before-policy': 0,
};

test('the record has exactly the specification fields', () => {
  const record = makeTokenRecord(RESPONSE, NOW, { requestedScope: 'openid' });
  assert.deepEqual(Object.keys(record).sort(), [
    'access_token',
    'authenticator',
    'expires_at',
    'expires_in',
    'refresh_token',
    'scope',
    'token_type',
  ]);
  assert.deepEqual(record, {
    authenticator: 'authenticator:oauth2',
    access_token: 'AT',
    refresh_token: 'RT',
    expires_in: 3600,
    token_type: 'Bearer',
    scope: 'openid',
    expires_at: 1_730_393_104_613,
  });
  assert.equal(record.authenticator, AUTHENTICATOR);
});

test('expires_at is milliseconds since the epoch: receipt + expires_in * 1000', () => {
  const record = makeTokenRecord({ ...RESPONSE, expires_in: 300 }, NOW);
  assert.equal(record.expires_at - NOW, 300_000);
  assert.equal(String(record.expires_at).length, 13);
});

test('expires_in given as a string is parsed as an integer', () => {
  assert.equal(makeTokenRecord({ ...RESPONSE, expires_in: '300' }, NOW).expires_in, 300);
});

test('a missing expires_in never means "never expires"', () => {
  const claims = Buffer.from(JSON.stringify({ exp: Math.floor(NOW / 1000) + 120 })).toString('base64url');
  const jwt = `e30.${claims}.sig`;
  // The JWT's exp is used, rounded down to whole seconds from now.
  assert.equal(makeTokenRecord({ access_token: jwt }, NOW).expires_in, 119);
  const opaque = makeTokenRecord({ access_token: 'opaque' }, NOW);
  assert.equal(opaque.expires_in, 60);
  assert.equal(opaque.expires_at, NOW + 60_000);
});

test('scope is stored as a single word', () => {
  assert.equal(singleScope('openid profile email', 'openid'), 'openid');
  assert.equal(singleScope('profile openid', 'openid'), 'openid');
  assert.equal(singleScope('profile email', 'openid'), 'profile');
  assert.equal(singleScope(undefined, 'openid'), 'openid');
  assert.equal(makeTokenRecord({ ...RESPONSE, scope: 'email openid' }, NOW, { requestedScope: 'openid' }).scope, 'openid');
});

test('a refresh without a new refresh token keeps the previous one', () => {
  const previous = makeTokenRecord(RESPONSE, NOW);
  const { refresh_token: _rt, ...noRt } = RESPONSE;
  assert.equal(makeTokenRecord({ ...noRt, access_token: 'AT2' }, NOW, { previous }).refresh_token, 'RT');
});

test('a response without access_token is refused', () => {
  assert.throws(() => makeTokenRecord({ refresh_token: 'x' }, NOW), TypeError);
});

test('isExpired applies a skew of at most 5 s (a tenth of short lifetimes)', () => {
  const record = makeTokenRecord({ ...RESPONSE, expires_in: 300 }, NOW);
  assert.equal(isExpired(record, NOW), false);
  assert.equal(isExpired(record, NOW + 294_999), false);
  assert.equal(isExpired(record, NOW + 295_000), true);
  assert.equal(isExpired(record, NOW + 400_000), true);
  const short = makeTokenRecord({ ...RESPONSE, expires_in: 10 }, NOW);
  assert.equal(isExpired(short, NOW + 8_999), false);
  assert.equal(isExpired(short, NOW + 9_000), true);
  assert.equal(isExpired(null, NOW), true);
});

test('refresh is scheduled a fifth of the lifetime before expiry, at most 60 s before', () => {
  const r300 = makeTokenRecord({ ...RESPONSE, expires_in: 300 }, NOW);
  assert.equal(refreshMargin(r300), 60_000);
  assert.equal(refreshDelay(r300, NOW), 240_000);
  const r12h = makeTokenRecord({ ...RESPONSE, expires_in: 43_200 }, NOW);
  assert.equal(refreshDelay(r12h, NOW), 43_140_000);
  const r20 = makeTokenRecord({ ...RESPONSE, expires_in: 20 }, NOW);
  assert.equal(refreshDelay(r20, NOW), 16_000);
  assert.equal(refreshDelay(r300, NOW + 1_000_000), 0);
});
