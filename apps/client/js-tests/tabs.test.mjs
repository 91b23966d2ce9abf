// Two tabs of one origin: shared localStorage, separate sessionStorage, Web Locks.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getService } from '../src/roadkit_client/static/modules/service.js';
import { MemoryStorage } from '../src/roadkit_client/static/modules/storage.js';
import { fingerprint, HANDOFF_DB } from '../src/roadkit_client/static/modules/handoff.js';
import { FakeIndexedDB, ISSUER, SETTINGS, TabStorages, flush, makeWorld } from './fakes.mjs';

const TOKEN_URL = `POST ${ISSUER}/protocol/openid-connect/token`;

/** navigator.locks: one holder per name at a time, in request order. */
function fakeLocks() {
  const tails = new Map();
  let requests = 0;
  return {
    get requests() {
      return requests;
    },
    request(name, fn) {
      requests += 1;
      const previous = tails.get(name) ?? Promise.resolve();
      const run = previous.then(() => fn());
      tails.set(name, run.catch(() => {}));
      return run;
    },
  };
}

async function twoTabs() {
  const a = await makeWorld();
  a.env.locks = fakeLocks();
  const first = getService({ mode: 'local', settings: SETTINGS, env: a.env });
  await first.login();
  a.location.href = a.iam.authorize(a.navigations[0]);
  assert.equal((await first.resolveAccessStatus()).status, 'login');
  const b = await makeWorld({ iam: a.iam, clock: a.clock, local: a.env.localStorage, session: new MemoryStorage() });
  b.env.fetch = a.fetch;
  b.env.locks = a.env.locks;
  const second = getService({ mode: 'local', settings: SETTINGS, env: b.env });
  assert.equal((await second.resolveAccessStatus()).status, 'restored');
  return { a, first, second };
}

test('two tabs refreshing at once make one refresh request (the second adopts the result)', async () => {
  const { a, first, second } = await twoTabs();
  const before = a.fetch.count(TOKEN_URL);
  a.clock.timers.clear();
  a.clock.t += 400_000;
  const [t1, t2] = await Promise.all([first.getAccessToken(), second.getAccessToken()]);
  assert.equal(t1, t2);
  assert.equal(a.fetch.count(TOKEN_URL), before + 1, 'no refresh token reuse across tabs');
  assert.equal(a.env.locks.requests, 2);
  assert.equal(first.authenticated && second.authenticated, true);
});

test('a logout in one tab makes the other tab refuse to use the old token', async () => {
  const { first, second } = await twoTabs();
  await first.logout({ endIamSession: false });
  await assert.rejects(second.getAccessToken(), { code: 'session_ended' });
});

test('two tabs whose refresh timers fire together make one refresh call', async () => {
  const { a, first, second } = await twoTabs();
  const before = a.fetch.count(TOKEN_URL);
  assert.equal(a.clock.timers.size, 2, 'each tab armed its timer');
  await a.clock.tick(240_000);
  assert.equal(a.fetch.count(TOKEN_URL), before + 1, 'the second tab adopts the token the first stored');
  assert.equal(first.authenticated && second.authenticated, true);
  const token = await first.getAccessToken();
  assert.equal(await second.getAccessToken(), token);
});

test('two tabs whose timers fire in the same instant (both waiting on the lock) make one refresh call', async () => {
  const { a, first, second } = await twoTabs();
  const before = a.fetch.count(TOKEN_URL);
  a.clock.timers.clear();
  a.clock.t += 240_000; // both due, neither expired: what the two timers call
  const [r1, r2] = await Promise.all([first.refresh(), second.refresh()]);
  assert.equal(r1.access_token, r2.access_token);
  assert.equal(a.fetch.count(TOKEN_URL), before + 1);
});

/**
 * Two tabs in two renderer processes, as Chromium runs them: each reads its own copy of
 * localStorage, which another tab's write reaches later (`storages.hold()` / `deliver()`);
 * Web Locks and IndexedDB are shared and consistent.
 */
async function twoTabsApart({ indexedDB = new FakeIndexedDB() } = {}) {
  const storages = new TabStorages();
  const locks = fakeLocks();
  const a = await makeWorld();
  Object.assign(a.env, { localStorage: storages.view(a.window), locks, indexedDB });
  const first = getService({ mode: 'local', settings: SETTINGS, env: a.env });
  await first.login();
  a.location.href = a.iam.authorize(a.navigations[0]);
  assert.equal((await first.resolveAccessStatus()).status, 'login');
  const b = await makeWorld({ iam: a.iam, clock: a.clock, session: new MemoryStorage() });
  Object.assign(b.env, { localStorage: storages.view(b.window), locks, indexedDB, fetch: a.fetch });
  const second = getService({ mode: 'local', settings: SETTINGS, env: b.env });
  assert.equal((await second.resolveAccessStatus()).status, 'restored');
  a.clock.timers.clear();
  a.clock.t += 240_000; // both tabs' refreshes are due, neither token expired
  return { a, b, storages, indexedDB, first, second };
}

test('a tab granted the lock while its localStorage still shows the old token adopts the new one (one refresh call)', async () => {
  const { a, storages, first, second } = await twoTabsApart();
  const before = a.fetch.count(TOKEN_URL);
  storages.hold(); // the first tab's new token has not reached the second tab's copy yet
  const pending = [first.refresh(), second.refresh()];
  const r1 = await pending[0];
  await flush(); // the second tab is granted the lock and reads its copy: still the old token
  assert.equal(a.fetch.count(TOKEN_URL), before + 1, 'the second tab did not refresh the token the first one refreshed');
  storages.deliver();
  const r2 = await pending[1];
  assert.equal(r2.access_token, r1.access_token);
  assert.equal(a.fetch.count(TOKEN_URL), before + 1);
  assert.equal(first.authenticated && second.authenticated, true);
});

test('a tab whose refresh starts after another tab refreshed, before its localStorage shows it, adopts the new token', async () => {
  const { a, storages, first, second } = await twoTabsApart();
  const before = a.fetch.count(TOKEN_URL);
  storages.hold();
  const r1 = await first.refresh(); // done and the lock released; the second tab's copy is still old
  const pending = second.refresh(); // e.g. its timer fires now: it sees the old token, not yet due
  await flush();
  assert.equal(a.fetch.count(TOKEN_URL), before + 1);
  storages.deliver();
  assert.equal((await pending).access_token, r1.access_token);
  assert.equal(a.fetch.count(TOKEN_URL), before + 1);
  assert.equal(await second.getAccessToken(), r1.access_token);
});

test('a tab never refreshes a token the hand-off says was refreshed, even one it has just adopted', async () => {
  const { a, storages, first, second } = await twoTabsApart();
  const before = a.fetch.count(TOKEN_URL);
  storages.hold();
  await first.refresh(); // t0 -> t1
  a.clock.t += 400_000; // t1 expires
  const t2 = await first.refresh(); // t1 -> t2; the second tab's copy still holds t0
  const pending = second.getAccessToken(); // t0 expired: refresh
  await flush();
  storages.deliver(1); // t1 arrives: expired, and already refreshed into t2
  await flush();
  assert.equal(a.fetch.count(TOKEN_URL), before + 2, 'the second tab did not refresh t1');
  storages.deliver();
  assert.equal(await pending, t2.access_token);
  assert.equal(a.fetch.count(TOKEN_URL), before + 2);
});

test('the hand-off in IndexedDB names tokens by fingerprint and never holds a token', async () => {
  const { a, indexedDB, first, storages } = await twoTabsApart();
  const old = first.tokens.read();
  const fresh = await first.refresh();
  storages.deliver();
  const rows = indexedDB.rows();
  assert.deepEqual(rows, [{ from: await fingerprint(old.access_token, crypto), to: await fingerprint(fresh.access_token, crypto), at: a.clock.now() }]);
  assert.match(rows[0].from, /^[0-9a-f]{32}$/);
  const stored = JSON.stringify(rows);
  for (const secret of [old.access_token, old.refresh_token, fresh.access_token, fresh.refresh_token]) {
    assert.equal(stored.includes(secret), false);
  }
  assert.deepEqual([...indexedDB.databases.keys()], [HANDOFF_DB]);
});

test('the wait for the other tab\'s token is bounded: after 3 s the tab refreshes as it would without the hand-off', async () => {
  const { a, storages, first, second } = await twoTabsApart();
  const before = a.fetch.count(TOKEN_URL);
  storages.hold(); // and never delivered
  await first.refresh();
  const pending = second.refresh().catch((error) => error);
  await flush();
  assert.equal(a.fetch.count(TOKEN_URL), before + 1, 'waiting');
  await a.clock.tick(3_000);
  await pending; // its copy kept the old (already used) refresh token: the IAM refuses it
  assert.equal(a.fetch.count(TOKEN_URL), before + 2);
});

test('without IndexedDB, a tab with a late localStorage refreshes again (no hand-off: what the hand-off prevents)', async () => {
  const { a, storages, first, second } = await twoTabsApart({ indexedDB: null });
  const before = a.fetch.count(TOKEN_URL);
  storages.hold();
  await first.refresh();
  const error = await second.refresh().catch((e) => e);
  assert.equal(a.fetch.count(TOKEN_URL), before + 2);
  assert.equal(error.code, 'session_ended', 'the reused refresh token was refused');
});
