/**
 * `getService({mode, settings, env?, emitter?})`: the factory of the
 * authentication services. `mode` is `'local'` or `'remote'`; anything else is an
 * error (the reference library silently returned a do-nothing service).
 */
import { makeEnv } from './env.js';
import { LocalService } from './local.js';
import { RemoteService } from './remote.js';
import { normalizeSettings, requireSettings } from './settings.js';

export { EVENTS, createEmitter } from './emitter.js';
export { AuthError } from './errors.js';

/**
 * @param {{mode?: 'local'|'remote', settings: object, env?: object, emitter?: object}} options
 *   `settings`: the IamSettings (`IamUrl`, `IamRealm`, `IamClientId`,
 *   `IamEntrepotApiUrl`, `IamEntrepotApiUrlRemote`, `IamScope`...); a
 *   `IamClientSecret` is dropped. `mode` defaults to `settings.mode`.
 */
export function getService({ mode, settings, env, emitter } = {}) {
  const clean = normalizeSettings(settings ?? {});
  const chosen = mode ?? clean.mode;
  const fullEnv = makeEnv(env);
  if (chosen === 'local') {
    requireSettings(clean, ['IamUrl', 'IamRealm', 'IamClientId', 'IamEntrepotApiUrl']);
    return new LocalService({ settings: clean, env: fullEnv, emitter });
  }
  if (chosen === 'remote') {
    requireSettings(clean, ['IamEntrepotApiUrlRemote']);
    return new RemoteService({ settings: clean, env: fullEnv, emitter });
  }
  throw new TypeError(`unknown authentication mode ${JSON.stringify(chosen)} (expected "local" or "remote")`);
}

/** Fetch `/settings.json` (the static app's view of the IamSettings). */
export async function loadSettings(url = '/settings.json', fetchFn = globalThis.fetch) {
  const response = await fetchFn(url, { headers: { Accept: 'application/json' } });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.json();
}
