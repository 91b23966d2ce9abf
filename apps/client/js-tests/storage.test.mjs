import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  MemoryStorage,
  PENDING_PREFIX,
  PENDING_TTL_MS,
  PendingStore,
  TokenStore,
} from '../src/roadkit_client/static/modules/storage.js';
import { makeTokenRecord } from '../src/roadkit_client/static/modules/token.js';

const RECORD = makeTokenRecord({ access_token: 'AT', refresh_token: 'RT', expires_in: 300, scope: 'openid' }, 1_000);

test('the token is stored under service > connexion > token', () => {
  const storage = new MemoryStorage();
  storage.setItem('service', JSON.stringify({ other: 1, connexion: { keep: true } }));
  const store = new TokenStore(storage);
  store.write(RECORD, 'ID');
  const saved = JSON.parse(storage.getItem('service'));
  assert.deepEqual(saved.connexion.token, RECORD);
  assert.equal(saved.connexion.id_token, 'ID');
  assert.equal(saved.connexion.keep, true);
  assert.equal(saved.other, 1);
  assert.deepEqual(store.read(), RECORD);
  assert.equal(store.readIdToken(), 'ID');
});

test('clear drops the token and id token only', () => {
  const storage = new MemoryStorage();
  const store = new TokenStore(storage);
  store.write(RECORD, 'ID');
  store.clear();
  assert.equal(store.read(), null);
  assert.equal(store.readIdToken(), null);
  assert.deepEqual(JSON.parse(storage.getItem('service')), { connexion: {} });
});

test('malformed storage reads as no token', () => {
  const storage = new MemoryStorage();
  const store = new TokenStore(storage);
  storage.setItem('service', '{not json');
  assert.equal(store.read(), null);
  storage.setItem('service', JSON.stringify({ connexion: { token: { accessToken: 'camelCase' } } }));
  assert.equal(store.read(), null);
});

test('a pending state is single-use and bound to its verifier', () => {
  const store = new PendingStore(new MemoryStorage(), () => 5_000);
  store.put('s1', { verifier: 'v1', nonce: 'n1', redirectUri: 'r', purpose: 'login' });
  store.put('s2', { verifier: 'v2', nonce: 'n2', redirectUri: 'r', purpose: 'login' });
  assert.equal(store.consume('s2').verifier, 'v2');
  assert.equal(store.consume('s2'), null, 'replayed state');
  assert.equal(store.consume('s1').verifier, 'v1');
});

test('missing, forged and expired states are refused', () => {
  let now = 0;
  const storage = new MemoryStorage();
  const store = new PendingStore(storage, () => now);
  store.put('s', { verifier: 'v', purpose: 'login' });
  assert.equal(store.consume(null), null);
  assert.equal(store.consume(''), null);
  assert.equal(store.consume('forged'), null);
  now = PENDING_TTL_MS;
  assert.equal(store.consume('s'), null, 'too old');
  assert.equal(storage.getItem(`${PENDING_PREFIX}s`), null, 'deleted anyway');
});

test('starting a flow purges stale entries; clear removes all', () => {
  let now = 0;
  const storage = new MemoryStorage();
  const store = new PendingStore(storage, () => now);
  store.put('old', { verifier: 'v', purpose: 'login' });
  now = PENDING_TTL_MS + 1;
  store.put('new', { verifier: 'v', purpose: 'login' });
  assert.equal(storage.getItem(`${PENDING_PREFIX}old`), null);
  assert.notEqual(storage.getItem(`${PENDING_PREFIX}new`), null);
  store.clear();
  assert.equal(storage.length, 0);
});
