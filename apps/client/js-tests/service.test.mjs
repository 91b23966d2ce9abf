import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LocalService } from '../src/roadkit_client/static/modules/local.js';
import { RemoteService } from '../src/roadkit_client/static/modules/remote.js';
import { getService } from '../src/roadkit_client/static/modules/service.js';
import { normalizeSettings } from '../src/roadkit_client/static/modules/settings.js';
import { ISSUER, SETTINGS, makeWorld } from './fakes.mjs';

test('getService picks the class by mode, then by settings.mode', async () => {
  const { env } = await makeWorld();
  assert.ok(getService({ mode: 'local', settings: SETTINGS, env }) instanceof LocalService);
  assert.ok(getService({ mode: 'remote', settings: SETTINGS, env }) instanceof RemoteService);
  assert.ok(getService({ settings: { ...SETTINGS, mode: 'remote' }, env }) instanceof RemoteService);
});

test('an unknown mode is an error, not a silent do-nothing service', async () => {
  const { env } = await makeWorld();
  assert.throws(() => getService({ mode: 'keycloak', settings: SETTINGS, env }), /unknown authentication mode/);
});

test('missing settings are named', async () => {
  const { env } = await makeWorld();
  assert.throws(() => getService({ mode: 'local', settings: { IamUrl: 'x' }, env }), /IamRealm, IamClientId/);
});

test('IamClientSecret never reaches the service, storage or requests', async () => {
  const world = await makeWorld();
  const warnings = [];
  const original = console.warn;
  console.warn = (m) => warnings.push(m);
  let service;
  try {
    service = getService({ mode: 'local', settings: { ...SETTINGS, IamClientSecret: 's3cr3t' }, env: world.env });
  } finally {
    console.warn = original;
  }
  assert.equal('IamClientSecret' in service.settings, false);
  assert.equal(warnings.length, 1);
  await service.login();
  world.location.href = world.iam.authorize(world.navigations[0]);
  const again = getService({ mode: 'local', settings: { ...SETTINGS, IamClientSecret: 's3cr3t' }, env: world.env });
  assert.equal((await again.resolveAccessStatus()).status, 'login');
  for (const call of world.fetch.calls) {
    assert.ok(!String(call.body ?? '').includes('s3cr3t'), call.key);
    assert.ok(!call.url.includes('s3cr3t'), call.key);
    assert.ok(!String(call.headers.Authorization ?? '').startsWith('Basic'), call.key);
  }
  assert.ok(!world.env.localStorage.getItem('service').includes('s3cr3t'));
  assert.ok(world.fetch.calls.some((c) => c.key === `POST ${ISSUER}/protocol/openid-connect/token`));
});

test('flags are booleans whatever their spelling', () => {
  assert.equal(normalizeSettings({ IamCheckSsoDisable: '1' }).IamCheckSsoDisable, true);
  assert.equal(normalizeSettings({ IamCheckSsoDisable: 'false' }).IamCheckSsoDisable, false);
  assert.equal(normalizeSettings({ IamCheckSsoDisable: true }).IamCheckSsoDisable, true);
  assert.equal(normalizeSettings({}).IamCheckSsoDisable, false);
  assert.equal(normalizeSettings({}).IamScope, 'openid');
});
