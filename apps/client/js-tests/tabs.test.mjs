// Two tabs of one origin: shared localStorage, separate sessionStorage, Web Locks.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getService } from '../src/roadkit_client/static/modules/service.js';
import { MemoryStorage } from '../src/roadkit_client/static/modules/storage.js';
import { ISSUER, SETTINGS, makeWorld } from './fakes.mjs';

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
