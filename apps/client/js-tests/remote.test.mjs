// Remote mode: the portal keeps the tokens; the app reads /me and /documents with its cookie.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getService } from '../src/roadkit_client/static/modules/service.js';
import { MemoryStorage } from '../src/roadkit_client/static/modules/storage.js';
import { useAuth } from '../src/roadkit_client/static/modules/useAuth.js';
import { APP, API, CSRF_TOKEN, DOCS, SETTINGS, USER, FakeWindow, backendRoutes, json, makeFetch, makeLocation } from './fakes.mjs';

const PORTAL = `${API}/portal`;

function world(href, routes = backendRoutes({ base: PORTAL, cookieAuth: true })) {
  const { location, history } = makeLocation(href);
  const navigations = [];
  const fetchFn = makeFetch(routes);
  const env = {
    fetch: fetchFn,
    localStorage: new MemoryStorage(),
    sessionStorage: new MemoryStorage(),
    location,
    history,
    navigate: (u) => navigations.push(u),
    crypto: globalThis.crypto,
    now: () => 0,
    setTimeout,
    clearTimeout,
    window: new FakeWindow(),
    openChannel: () => null,
  };
  const service = getService({ mode: 'remote', settings: SETTINGS, env });
  const log = [];
  service.emitter.on('*', (e) => {
    if (e.type !== 'service:changed') log.push({ name: e.type, isAuthenticated: auth.isAuthenticated, detail: e.detail });
  });
  const auth = useAuth({
    service,
    onLogin: () => log.push({ name: 'onLogin', isAuthenticated: auth.isAuthenticated }),
    onLogout: () => log.push({ name: 'onLogout' }),
    onError: (e) => log.push({ name: 'onError', error: e }),
  });
  return { service, auth, log, env, fetch: fetchFn, navigations, location };
}

test('/login without success goes to the portal with app=roadkit', async () => {
  const w = world(`${APP}/login`);
  assert.equal(await w.auth.checkAuthentication(), 'redirect');
  assert.deepEqual(w.navigations, [`${PORTAL}/login?app=roadkit`]);
  assert.equal(w.fetch.calls.length, 0);
});

test('success=1: GET /me then GET /documents, events in order before isAuthenticated, then onLogin', async () => {
  const w = world(`${APP}/login?success=1`);
  assert.equal(await w.auth.checkAuthentication(), 'login');
  assert.deepEqual(
    w.fetch.calls.map((c) => c.key),
    [`GET ${PORTAL}/me`, `GET ${PORTAL}/documents`],
  );
  assert.ok(w.fetch.calls.every((c) => c.init.credentials === 'include'));
  assert.ok(w.fetch.calls.every((c) => !c.headers.Authorization), 'no bearer token in remote mode');
  assert.deepEqual(
    w.log.map((e) => [e.name, e.isAuthenticated]),
    [
      ['service:user:loaded', false],
      ['service:documents:loaded', false],
      ['onLogin', true],
    ],
  );
  assert.deepEqual(w.log[0].detail, USER);
  assert.deepEqual(w.log[1].detail, DOCS);
  assert.equal(w.auth.isAuthenticated, true);
  assert.deepEqual(w.auth.user, USER);
  assert.equal(w.location.href, `${APP}/login`, 'success removed from the URL');
  assert.equal(w.env.localStorage.length, 0, 'no token stored in the browser');
  assert.equal(w.env.sessionStorage.length, 0);
});

test('success=0: not authenticated, an error for onError, no redirect loop', async () => {
  const w = world(`${APP}/login?success=0`);
  assert.equal(await w.auth.checkAuthentication(), 'no-auth');
  assert.equal(w.auth.isAuthenticated, false);
  const errors = w.log.filter((e) => e.name === 'onError');
  assert.equal(errors.length, 1);
  assert.equal(errors[0].error.code, 'remote_login_failed');
  assert.equal(w.auth.error, errors[0].error);
  assert.equal(w.navigations.length, 0);
  assert.equal(w.fetch.calls.length, 0);
});

test('success=1 but the profile is refused: error, not authenticated', async () => {
  const w = world(`${APP}/login?success=1`, {
    [`GET ${PORTAL}/me`]: () => json({ code: 401, status: 'Unauthorized' }, 401),
  });
  await w.auth.checkAuthentication();
  assert.equal(w.auth.isAuthenticated, false);
  assert.equal(w.auth.error.code, 'unauthorized');
  assert.equal(w.log.filter((e) => e.name === 'service:user:loaded').length, 0);
});

test('"login" elsewhere in the URL is not the login route', async () => {
  const w = world(`${APP}/catalog/login-help?success=1`);
  assert.equal(await w.auth.checkAuthentication(), 'restored');
  assert.equal(w.fetch.count(`GET ${PORTAL}/documents`), 1, 'not a login: the portal session was asked');
});

test('?success outside the login route is not a logout unless this tab started one', async () => {
  const w = world(`${APP}/?success=1`);
  assert.equal(await w.auth.checkAuthentication(), 'restored');
  assert.equal(w.auth.isAuthenticated, true);
  assert.equal(w.location.href, `${APP}/`, 'URL cleaned');
  assert.equal(w.log.filter((e) => e.name === 'onLogout').length, 0);
  // Now a real logout: the portal comes back to /?success=1 in the same tab.
  assert.equal(await w.auth.logout(), 'redirect');
  const back = world(`${APP}/?success=1`);
  back.env.sessionStorage = w.env.sessionStorage;
  back.service.env.sessionStorage = w.env.sessionStorage;
  assert.equal(await back.auth.checkAuthentication(), 'logout');
  assert.equal(back.auth.isAuthenticated, false);
  assert.equal(w.env.sessionStorage.length, 0, 'the mark is used once');
});

test('on another page the portal session is checked with GET /me', async () => {
  const w = world(`${APP}/`);
  assert.equal(await w.auth.checkAuthentication(), 'restored');
  assert.equal(w.auth.isAuthenticated, true);
});

test('logout forgets the user, tells other tabs and POSTs the portal logout with its CSRF token', async () => {
  const w = world(`${APP}/login?success=1`);
  await w.auth.checkAuthentication();
  const posted = [];
  w.service.channel = { postMessage: (m) => posted.push(m) };
  assert.equal(await w.auth.logout(), 'redirect');
  assert.equal(w.auth.isAuthenticated, false);
  assert.equal(w.auth.user, null);
  assert.deepEqual(posted, [{ type: 'logout' }]);
  const out = w.fetch.calls.filter((c) => c.key === `POST ${PORTAL}/logout`);
  assert.equal(out.length, 1);
  assert.equal(out[0].url, `${PORTAL}/logout?app=roadkit`);
  assert.equal(out[0].headers['X-CSRF-Token'], CSRF_TOKEN);
  assert.equal(out[0].init.credentials, 'include');
  assert.deepEqual(w.navigations, [`${APP}/?success=1`], 'the app goes where the portal said');
  assert.equal(w.log.filter((e) => e.name === 'onLogout').length, 1);
});

test('a logout the portal refuses still signs out here and returns to the app', async () => {
  const routes = backendRoutes({ base: PORTAL, cookieAuth: true });
  routes[`GET ${PORTAL}/csrf-token`] = () => json({ error: 'unauthorized' }, 401);
  const w = world(`${APP}/login?success=1`, routes);
  await w.auth.checkAuthentication();
  assert.equal(await w.auth.logout(), 'redirect');
  assert.equal(w.auth.isAuthenticated, false);
  assert.equal(w.fetch.count(`POST ${PORTAL}/logout`), 0);
  assert.deepEqual(w.navigations, [`${APP}/?success=1`]);
});

test('the document list follows the Link rel="next" pages, each document once', async () => {
  const all = Array.from({ length: 5 }, (_, i) => ({ ...DOCS[0], id: `d${5 - i}`, title: `doc ${5 - i}` }));
  const routes = backendRoutes({ base: PORTAL, cookieAuth: true });
  routes[`GET ${PORTAL}/documents`] = (call, url) => {
    const start = Number(url.searchParams.get('cursor') ?? 0);
    const next = start + 2 < all.length ? { Link: `<http://elsewhere.test/documents?limit=2&cursor=${start + 2}>; rel="next"` } : {};
    return json(all.slice(start, start + 2), 200, next);
  };
  const w = world(`${APP}/`, routes);
  assert.equal(await w.auth.checkAuthentication(), 'restored');
  assert.deepEqual(
    w.service.documents.map((d) => d.id),
    ['d5', 'd4', 'd3', 'd2', 'd1'],
  );
  const urls = w.fetch.calls.filter((c) => c.key === `GET ${PORTAL}/documents`).map((c) => c.url);
  assert.deepEqual(urls, [`${PORTAL}/documents`, `${PORTAL}/documents?limit=2&cursor=2`, `${PORTAL}/documents?limit=2&cursor=4`]);
});
