// Local mode (OAuth 2.0 code flow + PKCE) against the in-memory IAM of fakes.mjs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getService } from '../src/roadkit_client/static/modules/service.js';
import { PENDING_PREFIX } from '../src/roadkit_client/static/modules/storage.js';
import { codeChallengeS256 } from '../src/roadkit_client/static/modules/pkce.js';
import { useAuth } from '../src/roadkit_client/static/modules/useAuth.js';
import { SESSION_OVER_CODES } from '../src/roadkit_client/static/modules/errors.js';
import { APP, API, ISSUER, SETTINGS, USER, flush, json, makeWorld } from './fakes.mjs';

const TOKEN_URL = `POST ${ISSUER}/protocol/openid-connect/token`;

function start(world, callbacks = {}) {
  const service = getService({ mode: 'local', settings: SETTINGS, env: world.env });
  const log = [];
  service.emitter.on('*', (e) => log.push({ name: e.type, isAuthenticated: service.authenticated }));
  const auth = useAuth({
    service,
    onLogin: () => log.push({ name: 'onLogin', isAuthenticated: service.authenticated }),
    onLogout: () => log.push({ name: 'onLogout', isAuthenticated: service.authenticated }),
    onError: (e) => log.push({ name: 'onError', error: e }),
    ...callbacks,
  });
  return { service, auth, log };
}

function stored(world) {
  return JSON.parse(world.env.localStorage.getItem('service') ?? 'null');
}

/** Run a full login in `world`: redirect to the IAM, come back with the code. */
async function login(world) {
  const first = start(world);
  assert.equal(await first.auth.checkAuthentication(), 'redirect');
  const authorizeUrl = world.navigations.at(-1);
  first.service.dispose();
  world.location.href = world.iam.authorize(authorizeUrl);
  const second = start(world);
  const status = await second.auth.checkAuthentication();
  return { ...second, status, authorizeUrl, callbackUrl: world.iam.lastCallback };
}

test('without a token, checkAuthentication stores a verifier and goes to /auth with S256 and state', async () => {
  const world = await makeWorld();
  const { auth } = start(world);
  assert.equal(await auth.checkAuthentication(), 'redirect');
  assert.equal(auth.isAuthenticated, false);
  const url = new URL(world.navigations[0]);
  assert.equal(`${url.origin}${url.pathname}`, `${ISSUER}/protocol/openid-connect/auth`);
  const q = url.searchParams;
  assert.equal(q.get('client_id'), 'roadkit-app');
  assert.equal(q.get('response_type'), 'code');
  assert.equal(q.get('redirect_uri'), `${APP}/`);
  assert.equal(q.get('scope'), 'openid');
  assert.equal(q.get('code_challenge_method'), 'S256');
  assert.ok(q.get('state'));
  assert.ok(q.get('nonce'));
  const entry = JSON.parse(world.env.sessionStorage.getItem(PENDING_PREFIX + q.get('state')));
  assert.equal(await codeChallengeS256(entry.verifier), q.get('code_challenge'));
  assert.equal(entry.nonce, q.get('nonce'));
  assert.equal(stored(world), null, 'nothing in localStorage before the exchange');
});

test('the endpoints come from discovery', async () => {
  const world = await makeWorld();
  const d = world.iam.discovery();
  d.authorization_endpoint = 'http://elsewhere.test/authorize';
  world.fetch.routes[`GET ${ISSUER}/.well-known/openid-configuration`] = () => Response.json(d);
  const { auth } = start(world);
  await auth.checkAuthentication();
  assert.ok(world.navigations[0].startsWith('http://elsewhere.test/authorize?'));
});

test('a valid callback exchanges the code with its verifier, stores the record, loads /me', async () => {
  const world = await makeWorld();
  const { auth, status, log } = await login(world);
  assert.equal(status, 'login');
  assert.equal(auth.isAuthenticated, true);
  assert.deepEqual(auth.user, USER);
  const exchange = world.fetch.calls.find((c) => c.key === TOKEN_URL);
  const form = new URLSearchParams(exchange.body);
  assert.equal(form.get('grant_type'), 'authorization_code');
  assert.equal(form.get('client_id'), 'roadkit-app');
  assert.equal(form.get('redirect_uri'), `${APP}/`);
  assert.match(form.get('code_verifier'), /^[A-Za-z0-9_-]{43}$/);
  assert.equal(form.has('client_secret'), false);
  assert.equal(exchange.headers.Authorization, undefined);
  const token = stored(world).connexion.token;
  assert.deepEqual(Object.keys(token).sort(), [
    'access_token', 'authenticator', 'expires_at', 'expires_in', 'refresh_token', 'scope', 'token_type',
  ]);
  assert.equal(token.authenticator, 'authenticator:oauth2');
  assert.equal(token.token_type, 'Bearer');
  assert.equal(token.scope, 'openid');
  assert.equal(token.expires_at, world.clock.now() + 300_000);
  const me = world.fetch.calls.find((c) => c.key === `GET ${API}/me`);
  assert.equal(me.headers.Authorization, `Bearer ${token.access_token}`);
  // URL cleaned of every callback parameter, without navigation.
  assert.equal(world.location.href, `${APP}/`);
  assert.equal(world.history.replaced.length, 1);
  // Events then state change then onLogin.
  const names = log.map((e) => e.name).filter((n) => n !== 'service:changed');
  assert.deepEqual(names.slice(names.indexOf('service:user:loaded')), [
    'service:user:loaded',
    'service:documents:loaded',
    'onLogin',
  ]);
  assert.equal(log.find((e) => e.name === 'service:user:loaded').isAuthenticated, false);
  assert.equal(world.env.sessionStorage.length, 0, 'state consumed');
});

test('a reload reuses the stored token without going to the IAM', async () => {
  const world = await makeWorld();
  (await login(world)).service.dispose();
  const before = world.fetch.count(TOKEN_URL);
  const navigations = world.navigations.length;
  const { auth } = start(world);
  assert.equal(await auth.checkAuthentication(), 'restored');
  assert.equal(auth.isAuthenticated, true);
  assert.equal(world.fetch.count(TOKEN_URL), before);
  assert.equal(world.navigations.length, navigations);
});

test('a forged state is rejected and the code is never exchanged', async () => {
  const world = await makeWorld({ href: `${APP}/?code=stolen&state=forged&session_state=x&iss=${encodeURIComponent(ISSUER)}` });
  const { auth, log } = start(world);
  assert.equal(await auth.checkAuthentication(), 'no-auth');
  assert.equal(auth.isAuthenticated, false);
  assert.equal(auth.error.code, 'invalid_state');
  assert.equal(log.filter((e) => e.name === 'onError').length, 1);
  assert.equal(world.fetch.count(TOKEN_URL), 0);
  assert.equal(world.location.href, `${APP}/`, 'URL cleaned even on error');
  assert.equal(world.navigations.length, 0, 'no redirect loop after an error');
});

test('a missing state is rejected', async () => {
  const world = await makeWorld({ href: `${APP}/?code=abc&session_state=x` });
  const { auth } = start(world);
  await auth.checkAuthentication();
  assert.equal(auth.error.code, 'invalid_state');
  assert.equal(world.fetch.count(TOKEN_URL), 0);
});

test('a replayed state is rejected (single use), the session in place is kept', async () => {
  const world = await makeWorld();
  const first = start(world);
  await first.auth.checkAuthentication();
  const callback = world.iam.authorize(world.navigations[0]);
  first.service.dispose();
  world.location.href = callback;
  const second = start(world);
  assert.equal(await second.auth.checkAuthentication(), 'login');
  second.service.dispose();
  const exchanges = world.fetch.count(TOKEN_URL);
  world.location.href = callback; // replay: same code and state
  const third = start(world);
  assert.equal(await third.auth.checkAuthentication(), 'restored');
  assert.equal(third.auth.error.code, 'invalid_state');
  assert.equal(world.fetch.count(TOKEN_URL), exchanges, 'replayed code not sent');
  assert.equal(third.auth.isAuthenticated, true);
});

test('a state started in another tab (other sessionStorage) is rejected', async () => {
  const world = await makeWorld();
  const first = start(world);
  await first.auth.checkAuthentication();
  const callback = world.iam.authorize(world.navigations[0]);
  const other = await makeWorld({ href: callback, iam: world.iam, clock: world.clock, local: world.env.localStorage });
  const { auth } = start(other);
  await auth.checkAuthentication();
  assert.equal(auth.error.code, 'invalid_state');
});

test('the verifier sent is the one bound to the returned state', async () => {
  const world = await makeWorld();
  const a = start(world);
  await a.auth.checkAuthentication();
  await a.service.login(); // a second login in the same tab
  const [urlA, urlB] = world.navigations;
  const callbackA = world.iam.authorize(urlA);
  world.location.href = callbackA;
  const b = start(world);
  assert.equal(await b.auth.checkAuthentication(), 'login', 'the first flow still completes');
  assert.ok(urlB);
});

test('an IAM error callback is reported with its code and description', async () => {
  const world = await makeWorld({ href: `${APP}/?error=access_denied&error_description=User%20cancelled&state=s` });
  const { auth } = start(world);
  await auth.checkAuthentication();
  assert.equal(auth.error.code, 'access_denied');
  assert.match(auth.error.message, /User cancelled/);
  assert.equal(world.location.href, `${APP}/`);
});

test('an issuer mismatch (mix-up) is rejected before the exchange', async () => {
  const world = await makeWorld();
  const first = start(world);
  await first.auth.checkAuthentication();
  const callback = new URL(world.iam.authorize(world.navigations[0]));
  callback.searchParams.set('iss', 'http://evil.test/realms/x');
  world.location.href = callback.toString();
  const { auth } = start(world);
  await auth.checkAuthentication();
  assert.equal(auth.error.code, 'invalid_issuer');
  assert.equal(world.fetch.count(TOKEN_URL), 0);
});

test('a token exchange refused by the IAM is reported with its OAuth error', async () => {
  const world = await makeWorld();
  const first = start(world);
  await first.auth.checkAuthentication();
  const callback = new URL(world.iam.authorize(world.navigations[0]));
  callback.searchParams.set('code', 'not-a-code');
  world.location.href = callback.toString();
  const { auth } = start(world);
  await auth.checkAuthentication();
  assert.equal(auth.error.code, 'invalid_grant');
  assert.match(auth.error.message, /Code not valid/);
  assert.equal(stored(world)?.connexion?.token, undefined);
});

test('an id token with a wrong nonce is refused', async () => {
  const world = await makeWorld();
  const first = start(world);
  await first.auth.checkAuthentication();
  const url = new URL(world.navigations[0]);
  url.searchParams.set('nonce', 'other'); // the IAM will echo a nonce we did not send
  world.location.href = world.iam.authorize(url.toString());
  const { auth } = start(world);
  await auth.checkAuthentication();
  assert.equal(auth.error.code, 'invalid_id_token');
  assert.equal(auth.isAuthenticated, false);
});

test('calling checkAuthentication twice exchanges the code once', async () => {
  const world = await makeWorld();
  const first = start(world);
  await first.auth.checkAuthentication();
  world.location.href = world.iam.authorize(world.navigations[0]);
  const { auth } = start(world);
  const [a, b] = await Promise.all([auth.checkAuthentication(), auth.checkAuthentication()]);
  assert.equal(a, 'login');
  assert.equal(b, 'login');
  assert.equal(world.fetch.count(TOKEN_URL), 1);
});

test('the token is refreshed by a timer before it expires, and stored', async () => {
  const world = await makeWorld();
  const { log } = await login(world);
  const before = stored(world).connexion.token;
  assert.equal(world.clock.nextDelay(), 240_000);
  await world.clock.tick(239_999);
  assert.equal(stored(world).connexion.token.access_token, before.access_token);
  await world.clock.tick(1);
  const after = stored(world).connexion.token;
  assert.notEqual(after.access_token, before.access_token);
  assert.notEqual(after.refresh_token, before.refresh_token, 'rotated refresh token kept');
  assert.equal(after.expires_at, world.clock.now() + 300_000);
  const form = new URLSearchParams(world.fetch.calls.filter((c) => c.key === TOKEN_URL).at(-1).body);
  assert.equal(form.get('grant_type'), 'refresh_token');
  assert.equal(form.get('refresh_token'), before.refresh_token);
  assert.ok(log.some((e) => e.name === 'service:token:refreshed'));
  assert.equal(world.clock.nextDelay(), 240_000, 'next refresh scheduled');
});

test('a reload with an expired token refreshes it first', async () => {
  const world = await makeWorld();
  (await login(world)).service.dispose();
  const before = stored(world).connexion.token;
  world.clock.timers.clear();
  world.clock.t += 600_000;
  const { auth } = start(world);
  assert.equal(await auth.checkAuthentication(), 'restored');
  assert.notEqual(stored(world).connexion.token.access_token, before.access_token);
});

test('a refused refresh ends the session cleanly', async () => {
  const world = await makeWorld();
  const { auth, log } = await login(world);
  world.iam.sessionActive = false;
  await world.clock.tick(240_000);
  assert.equal(auth.isAuthenticated, false);
  assert.equal(auth.user, null);
  assert.equal(stored(world).connexion.token, undefined);
  assert.equal(log.filter((e) => e.name === 'onLogout').length, 1);
  assert.ok(log.some((e) => e.name === 'service:session:ended'));
  assert.equal(world.clock.nextDelay(), null, 'no timer left');
});

test('a network failure of the refresh keeps the session and retries', async () => {
  const world = await makeWorld();
  const { auth } = await login(world);
  const route = world.fetch.routes[TOKEN_URL];
  world.fetch.routes[TOKEN_URL] = () => {
    throw new TypeError('Failed to fetch');
  };
  await world.clock.tick(240_000);
  assert.equal(auth.isAuthenticated, true);
  assert.equal(world.clock.nextDelay(), 5_000);
  world.fetch.routes[TOKEN_URL] = route;
  const before = stored(world).connexion.token.access_token;
  await world.clock.tick(5_000);
  assert.notEqual(stored(world).connexion.token.access_token, before);
});

test('an API 401 triggers one refresh and one retry', async () => {
  const world = await makeWorld();
  const { service } = await login(world);
  const old = stored(world).connexion.token.access_token;
  world.live.delete(old); // the backend now refuses the current token
  const docs = await service.api.listDocuments();
  assert.equal(docs.length, 1);
  const calls = world.fetch.calls.filter((c) => c.key === `GET ${API}/documents`).slice(-2);
  assert.equal(calls[0].headers.Authorization, `Bearer ${old}`);
  assert.notEqual(calls[1].headers.Authorization, `Bearer ${old}`);
});

test('concurrent refreshes in one tab make one request', async () => {
  const world = await makeWorld();
  const { service } = await login(world);
  const n = world.fetch.count(TOKEN_URL);
  world.clock.t += 400_000;
  await Promise.all([service.getAccessToken(), service.getAccessToken(), service.refresh()]);
  assert.equal(world.fetch.count(TOKEN_URL), n + 1);
});

test('a refresh answered after logout does not reinstall a token', async () => {
  const world = await makeWorld();
  const { service } = await login(world);
  const route = world.fetch.routes[TOKEN_URL];
  let release;
  world.fetch.routes[TOKEN_URL] = (call) => new Promise((r) => { release = () => r(route(call)); });
  const pending = service.refresh().catch((e) => e);
  await flush();
  await service.logout({ endIamSession: false });
  release();
  const error = await pending;
  assert.equal(error.code, 'session_ended');
  assert.equal(stored(world).connexion.token, undefined);
});

test('logout clears storage first, revokes the refresh token, tells other tabs, ends the IAM session', async () => {
  const world = await makeWorld();
  const { auth, log } = await login(world);
  const token = stored(world).connexion.token;
  const idToken = stored(world).connexion.id_token;
  assert.equal(await auth.logout(), 'redirect');
  assert.equal(auth.isAuthenticated, false);
  assert.equal(stored(world).connexion.token, undefined);
  assert.deepEqual(world.iam.revoked, [token.refresh_token]);
  assert.deepEqual(world.channelMessages, [{ type: 'logout' }]);
  assert.equal(log.filter((e) => e.name === 'onLogout').length, 1);
  const end = new URL(world.navigations.at(-1));
  assert.equal(`${end.origin}${end.pathname}`, `${ISSUER}/protocol/openid-connect/logout`);
  assert.equal(end.searchParams.get('id_token_hint'), idToken);
  assert.equal(end.searchParams.get('client_id'), 'roadkit-app');
  assert.equal(end.searchParams.get('post_logout_redirect_uri'), `${APP}/`);
  assert.equal(world.clock.nextDelay(), null);
  // Back from the IAM with our state: a logout, no automatic login.
  world.location.href = `${APP}/?state=${end.searchParams.get('state')}`;
  const navigations = world.navigations.length;
  const after = start(world);
  assert.equal(await after.auth.checkAuthentication(), 'logout');
  assert.equal(world.navigations.length, navigations, 'no automatic login after a logout');
  assert.equal(after.log.at(-1).name, 'onLogout');
  assert.equal(world.location.href, `${APP}/`);
});

test('a logout in another tab (storage event) ends the session here', async () => {
  const world = await makeWorld();
  const { auth, log } = await login(world);
  world.env.localStorage.setItem('service', JSON.stringify({ connexion: {} }));
  world.window.dispatch('storage', { key: 'service' });
  assert.equal(auth.isAuthenticated, false);
  assert.equal(log.filter((e) => e.name === 'onLogout').length, 1);
});

test('a logout broadcast from another tab ends the session here', async () => {
  const world = await makeWorld();
  const { auth, service } = await login(world);
  service.channel.onmessage({ data: { type: 'logout' } });
  assert.equal(auth.isAuthenticated, false);
  assert.equal(stored(world).connexion.token, undefined);
});

test('a token refreshed by another tab is adopted and rescheduled', async () => {
  const world = await makeWorld();
  const { service } = await login(world);
  await world.clock.tick(100_000);
  const token = { ...stored(world).connexion.token, access_token: 'from-other-tab', expires_at: world.clock.now() + 300_000 };
  service.tokens.write(token);
  world.window.dispatch('storage', { key: 'service' });
  assert.equal(world.clock.nextDelay(), 240_000);
  assert.equal(await service.getAccessToken(), 'from-other-tab');
});

test('after an IAM key rotation the JWKS is fetched again', async () => {
  const world = await makeWorld();
  const { service } = await login(world);
  const jwksCalls = () => world.fetch.calls.filter((c) => c.url.endsWith('/certs')).length;
  assert.equal(jwksCalls(), 1);
  const before = stored(world).connexion.id_token;
  await world.iam.init(); // new signing key, old one gone
  world.clock.t += 400_000;
  await service.getAccessToken(); // the refresh returns an id token signed with the new key
  assert.equal(jwksCalls(), 2);
  assert.notEqual(stored(world).connexion.id_token, before, 'the new, verified id token is kept');
});

test('a reload arms the refresh timer (CLIENT.md: a timer, not only a lazy refresh)', async () => {
  const world = await makeWorld();
  (await login(world)).service.dispose();
  assert.equal(world.clock.nextDelay(), null, 'the old page left no timer');
  await world.clock.tick(100_000);
  const before = stored(world).connexion.token;
  const { auth } = start(world);
  assert.equal(await auth.checkAuthentication(), 'restored');
  assert.equal(world.clock.nextDelay(), 140_000, '240 s into the 300 s token, 100 s already gone');
  await world.clock.tick(140_000);
  assert.notEqual(stored(world).connexion.token.access_token, before.access_token, 'refreshed by the timer');
  assert.equal(auth.isAuthenticated, true);
});

test('refresh_expires_in is kept; past it the session ends without asking the IAM', async () => {
  const world = await makeWorld();
  (await login(world)).service.dispose();
  const connexion = stored(world).connexion;
  assert.equal(connexion.refresh_expires_at, world.clock.now() + 1_800_000);
  assert.deepEqual(Object.keys(connexion.token).sort(),
    ['access_token', 'authenticator', 'expires_at', 'expires_in', 'refresh_token', 'scope', 'token_type'], 'record unchanged');
  world.clock.t += 1_900_000;
  const before = world.fetch.count(TOKEN_URL);
  const { auth } = start(world, { options: { loginRequired: false } });
  assert.equal(await auth.checkAuthentication(), 'no-auth');
  assert.equal(world.fetch.count(TOKEN_URL), before, 'no refresh with a refresh token known to be expired');
  assert.equal(stored(world).connexion.token, undefined);
  assert.equal(stored(world).connexion.refresh_expires_at, undefined);
});

for (const code of SESSION_OVER_CODES) {
  test(`a refresh answered "${code}" ends the session (one list of session-ending errors)`, async () => {
    const world = await makeWorld();
    const { auth } = await login(world);
    world.fetch.routes[TOKEN_URL] = () => json({ error: code, error_description: 'over' }, 400);
    await world.clock.tick(240_000);
    assert.equal(auth.isAuthenticated, false);
    assert.equal(stored(world).connexion.token, undefined);
    assert.equal(world.clock.nextDelay(), null, 'no retry timer: the session is over');
  });
}
