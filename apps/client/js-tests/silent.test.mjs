// checkSession: the hidden-frame silent check (prompt=none).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getService } from '../src/roadkit_client/static/modules/service.js';
import { useAuth } from '../src/roadkit_client/static/modules/useAuth.js';
import { APP, ISSUER, SETTINGS, makeWorld } from './fakes.mjs';

const TOKEN_URL = `POST ${ISSUER}/protocol/openid-connect/token`;

function start(world) {
  const service = getService({ mode: 'local', settings: SETTINGS, env: world.env });
  const events = [];
  const auth = useAuth({
    service,
    onLogin: () => events.push('onLogin'),
    onLogout: () => events.push('onLogout'),
    onError: (e) => events.push(`onError:${e.code}`),
  });
  return { service, auth, events };
}

/** Make the fake frame behave like the browser + silent-check.html. */
function answerFrames(world, { origin = APP, source = 'frame', mutate = (p) => p } = {}) {
  world.document.onFrame = (frame) => {
    const redirect = new URL(world.iam.authorize(frame.src));
    const params = mutate(Object.fromEntries(redirect.searchParams));
    world.window.dispatch('message', {
      origin,
      source: source === 'frame' ? frame.contentWindow : {},
      data: params,
    });
  };
}

async function signedIn(world) {
  const a = start(world);
  await a.auth.checkAuthentication();
  a.service.dispose();
  world.location.href = world.iam.authorize(world.navigations.at(-1));
  const b = start(world);
  assert.equal(await b.auth.checkAuthentication(), 'login');
  return b;
}

function storedToken(world) {
  return JSON.parse(world.env.localStorage.getItem('service'))?.connexion?.token;
}

test('a valid token: checkSession is true without any frame', async () => {
  const world = await makeWorld();
  const { auth } = await signedIn(world);
  assert.equal(await auth.checkSession(), true);
  assert.equal(world.document.frames.length, 0);
});

test('expired token + IAM session: the frame code is exchanged, the token stored, true', async () => {
  const world = await makeWorld();
  const { auth } = await signedIn(world);
  const old = storedToken(world);
  world.clock.timers.clear();
  world.clock.t += 600_000;
  answerFrames(world);
  assert.equal(await auth.checkSession(), true);
  const frameUrl = new URL(world.iam.lastAuthorize);
  assert.equal(frameUrl.searchParams.get('prompt'), 'none');
  assert.equal(frameUrl.searchParams.get('redirect_uri'), `${APP}/silent-check.html`);
  assert.equal(frameUrl.searchParams.get('code_challenge_method'), 'S256');
  const exchange = new URLSearchParams(world.fetch.calls.filter((c) => c.key === TOKEN_URL).at(-1).body);
  assert.equal(exchange.get('grant_type'), 'authorization_code');
  assert.equal(exchange.get('redirect_uri'), `${APP}/silent-check.html`);
  const fresh = storedToken(world);
  assert.notEqual(fresh.access_token, old.access_token);
  assert.equal(fresh.expires_at, world.clock.now() + 300_000);
  assert.equal(auth.isAuthenticated, true);
  assert.equal(world.document.attached.length, 0, 'frame removed');
  assert.equal(world.window.count('message'), 0, 'listener removed');
  assert.equal(world.env.sessionStorage.length, 0, 'silent state consumed');
});

test('no token at all + IAM session: silent sign-in', async () => {
  const world = await makeWorld();
  const { auth, events } = start(world);
  answerFrames(world);
  assert.equal(await auth.checkSession(), true);
  assert.equal(auth.isAuthenticated, true);
  assert.deepEqual(events, ['onLogin']);
});

test('expired token + no IAM session: login_required, frame closed, false, session dropped', async () => {
  const world = await makeWorld();
  const { auth, events } = await signedIn(world);
  world.iam.sessionActive = false;
  world.clock.timers.clear();
  world.clock.t += 600_000;
  answerFrames(world);
  assert.equal(await auth.checkSession(), false);
  assert.equal(auth.isAuthenticated, false);
  assert.equal(storedToken(world), undefined);
  assert.equal(world.document.attached.length, 0);
  assert.equal(world.window.count('message'), 0);
  assert.deepEqual(events.slice(-1), ['onLogout']);
});

test('no answer: the frame is removed after the timeout and false is returned', async () => {
  const world = await makeWorld();
  const { auth } = start(world);
  world.document.onFrame = () => {};
  const result = auth.checkSession();
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(world.document.attached.length, 1);
  await world.clock.tick(SETTINGS.IamCheckSsoTimeout);
  assert.equal(await result, false);
  assert.equal(world.document.attached.length, 0);
  assert.equal(world.window.count('message'), 0);
  assert.equal(world.env.sessionStorage.length, 0);
});

for (const [label, opts] of [
  ['another origin', { origin: 'http://evil.test' }],
  ['another window of this origin', { source: 'other' }],
  ['another state', { mutate: (p) => ({ ...p, state: 'forged' }) }],
]) {
  test(`a message from ${label} is ignored`, async () => {
    const world = await makeWorld();
    const { auth } = start(world);
    answerFrames(world, opts);
    const result = auth.checkSession();
    await new Promise((r) => setTimeout(r, 50));
    await world.clock.tick(SETTINGS.IamCheckSsoTimeout);
    assert.equal(await result, false);
    assert.equal(world.fetch.count(TOKEN_URL), 0);
    assert.equal(world.document.attached.length, 0);
  });
}

test('concurrent checkSession calls share one frame', async () => {
  const world = await makeWorld();
  const { auth } = start(world);
  answerFrames(world);
  const [a, b] = await Promise.all([auth.checkSession(), auth.checkSession()]);
  assert.equal(a && b, true);
  assert.equal(world.fetch.count(TOKEN_URL), 1);
});
