/**
 * IamSettings as the browser sees them. `IamClientSecret` is dropped here: a
 * browser client is public (PKCE only) and a secret must never reach it, be sent
 * by it, or be persisted by it. Flags are normalised to booleans.
 */

const DEFAULTS = Object.freeze({
  IamScope: 'openid',
  IamCheckSsoTimeout: 5000,
  BaseUrl: '/',
  AppName: 'roadkit',
});

const FLAGS = ['IamCheckSsoDisable'];

function toBool(value) {
  if (typeof value === 'string') return ['1', 'true', 'yes', 'on'].includes(value.trim().toLowerCase());
  return Boolean(value);
}

/**
 * Return a frozen copy of `raw` fit for the browser.
 * @param {object} raw settings, e.g. the JSON of `/settings.json`
 * @param {{warn?: (msg: string) => void}} [options]
 */
export function normalizeSettings(raw, { warn = (m) => console.warn(m) } = {}) {
  const settings = { ...DEFAULTS };
  for (const [key, value] of Object.entries(raw ?? {})) {
    if (key === 'IamClientSecret') {
      if (value) warn('IamClientSecret ignored: a browser client is public and never holds a secret');
      continue;
    }
    if (value !== undefined && value !== null) settings[key] = value;
  }
  for (const flag of FLAGS) settings[flag] = toBool(settings[flag]);
  settings.IamCheckSsoTimeout = Number(settings.IamCheckSsoTimeout) || DEFAULTS.IamCheckSsoTimeout;
  if (!String(settings.BaseUrl).endsWith('/')) settings.BaseUrl = `${settings.BaseUrl}/`;
  return Object.freeze(settings);
}

/** Check that the settings a mode needs are present. */
export function requireSettings(settings, keys) {
  const missing = keys.filter((k) => !settings[k]);
  if (missing.length) throw new TypeError(`missing IamSettings: ${missing.join(', ')}`);
}
