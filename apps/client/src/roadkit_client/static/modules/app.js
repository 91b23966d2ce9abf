/**
 * The roadkit client UI: sign-in state, profile, route computation and drawing,
 * documents (save, list, delete). Shared by `index.html` (mode from
 * /settings.json, local by default) and `login.html` (remote-mode landing).
 *
 * For tests only, `window.__roadkit = {auth, service, settings, events, status, ready}`:
 * `events` records every service event and callback with the value of
 * `isAuthenticated` at that moment. It exists only when the page carries
 * `<meta name="roadkit-test-hooks" content="1">`, which the server injects under a test
 * configuration (`app.test_hooks = true`); the shipped page never exposes the service.
 */
import { drawLine } from './draw.js';
import { computeRoute, parsePoint, routeFeature, routeSummary, straightLine } from './routing.js';
import { getService, loadSettings } from './service.js';
import { displayName, useAuth } from './useAuth.js';

// Two points in Monaco (the demo data set).
const DEFAULT_START = '7.4197,43.7311';
const DEFAULT_END = '7.4256,43.7384';

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const child of children) node.append(child);
  return node;
}

function layout(root) {
  root.replaceChildren(
    el(
      'header',
      { class: 'bar' },
      el('h1', {}, 'roadkit'),
      el('span', { id: 'status', class: 'status' }, 'Checking your session…'),
      el('span', { id: 'mode', class: 'mode' }),
      el('button', { id: 'login', type: 'button', hidden: '' }, 'Sign in'),
      el('button', { id: 'check-session', type: 'button', hidden: '' }, 'Check session'),
      el('button', { id: 'logout', type: 'button', hidden: '' }, 'Sign out'),
    ),
    el('p', { id: 'error', class: 'error', role: 'alert', hidden: '' }),
    el(
      'section',
      { id: 'profile', hidden: '' },
      el('h2', {}, 'Profile'),
      el(
        'dl',
        {},
        el('dt', {}, 'Name'),
        el('dd', { id: 'profile-name' }),
        el('dt', {}, 'User name'),
        el('dd', { id: 'profile-username' }),
        el('dt', {}, 'E-mail'),
        el('dd', { id: 'profile-email' }),
      ),
    ),
    el(
      'section',
      { id: 'route', hidden: '' },
      el('h2', {}, 'Route'),
      el(
        'form',
        { id: 'route-form' },
        el('label', {}, 'Start (lon,lat) ', el('input', { id: 'route-start', name: 'start', value: DEFAULT_START, required: '' })),
        el('label', {}, 'End (lon,lat) ', el('input', { id: 'route-end', name: 'end', value: DEFAULT_END, required: '' })),
        el('button', { id: 'route-compute', type: 'submit' }, 'Compute route'),
        el('button', { id: 'route-straight', type: 'button' }, 'Straight line'),
      ),
      el('p', { id: 'route-error', class: 'error', role: 'alert', hidden: '' }),
      el('p', { id: 'route-summary', class: 'summary' }),
      el('svg', { id: 'route-drawing', class: 'drawing', role: 'img', 'aria-label': 'route drawing' }),
      el(
        'form',
        { id: 'save-form' },
        el('label', {}, 'Title ', el('input', { id: 'save-title', name: 'title', value: 'My route', required: '' })),
        el('button', { id: 'save', type: 'submit', disabled: '' }, 'Save as document'),
      ),
    ),
    el(
      'section',
      { id: 'documents', hidden: '' },
      el('h2', {}, 'Documents'),
      el('p', { id: 'documents-error', class: 'error', role: 'alert', hidden: '' }),
      el('ul', { id: 'document-list' }),
    ),
  );
  // `el('svg')` made an HTML element; replace it with a real SVG one.
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.id = 'route-drawing';
  svg.setAttribute('class', 'drawing');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', 'route drawing');
  $('route-drawing').replaceWith(svg);
}

function showError(id, error) {
  const node = $(id);
  if (!node) return;
  if (!error) {
    node.textContent = '';
    node.hidden = true;
    return;
  }
  node.textContent = error.code ? `${error.message} [${error.code}]` : error.message ?? String(error);
  node.hidden = false;
}

/** Start the app on this page. `page` is 'index' or 'login'. */
export async function startApp({ page = 'index' } = {}) {
  const roadkit = { auth: null, service: null, settings: null, events: [], status: null, ready: false, route: null };
  if (document.querySelector('meta[name="roadkit-test-hooks"]')?.content === '1') window.__roadkit = roadkit;
  const record = (name, extra = {}) =>
    roadkit.events.push({ name, isAuthenticated: roadkit.auth ? roadkit.auth.isAuthenticated : false, at: Date.now(), ...extra });

  layout($('app'));
  let auth;
  try {
    const query = new URL(location.href).searchParams;
    // `?success=` on the index page is the portal's logout return: remote mode.
    const pageMode = query.get('mode') ?? (query.has('success') && !query.has('code') ? 'remote' : null);
    const wanted = page === 'login' ? 'remote' : pageMode;
    const raw = await loadSettings(wanted ? `/settings.json?mode=${encodeURIComponent(wanted)}` : '/settings.json');
    const mode = page === 'login' ? 'remote' : raw.mode;
    roadkit.settings = raw;
    const service = getService({ mode, settings: raw });
    roadkit.service = service;
    service.emitter.on('*', (e) => record(e.type));
    auth = useAuth({
      service,
      onLogin: () => {
        record('onLogin');
        showError('error', null); // an error of an earlier attempt is stale now
        render();
      },
      onLogout: () => {
        record('onLogout');
        render();
      },
      onError: (error) => {
        record('onError', { code: error.code, message: error.message });
        showError('error', error);
      },
    });
    roadkit.auth = auth;
  } catch (error) {
    showError('error', error);
    $('status').textContent = 'The application could not start.';
    roadkit.ready = true;
    return roadkit;
  }
  const { service } = auth;
  $('mode').textContent = `${service.mode} mode`;

  function render() {
    const signedIn = auth.isAuthenticated;
    const user = auth.user;
    $('status').textContent = signedIn ? `Signed in as ${displayName(user)}` : 'Not signed in';
    $('login').hidden = signedIn;
    $('logout').hidden = !signedIn;
    $('check-session').hidden = service.mode !== 'local';
    for (const id of ['profile', 'route', 'documents']) $(id).hidden = !signedIn;
    $('profile-name').textContent = displayName(user);
    $('profile-username').textContent = user?.username ?? '';
    $('profile-email').textContent = user?.email ?? '';
    renderDocuments(signedIn ? service.documents : []);
  }

  function renderDocuments(docs) {
    const list = $('document-list');
    list.replaceChildren(
      ...docs.map((doc) =>
        el(
          'li',
          { 'data-id': String(doc.id) },
          el('span', { class: 'doc-title' }, doc.title),
          ' ',
          el('span', { class: 'doc-type' }, doc.type),
          ' ',
          el('time', { datetime: doc.date ?? '' }, doc.date ? new Date(doc.date).toLocaleString() : ''),
          ' ',
          doc.geojson
            ? el('button', { type: 'button', class: 'doc-show', onclick: () => showDocument(doc) }, 'Show')
            : el('span', { class: 'doc-unreadable' }, '(unreadable)'),
          el('button', { type: 'button', class: 'doc-delete', onclick: () => deleteDocument(doc.id) }, 'Delete'),
        ),
      ),
    );
    if (!docs.length) list.append(el('li', { class: 'empty' }, 'No documents yet.'));
  }

  function showDocument(doc) {
    const props = doc.geojson?.properties ?? {};
    showRoute({
      geometry: doc.geojson?.geometry ?? doc.geojson,
      distance: props.distance ?? undefined,
      distanceUnit: props.distanceUnit ?? undefined,
      duration: props.duration ?? undefined,
      timeUnit: props.timeUnit ?? undefined,
      straight: !!props.straight,
    });
  }

  function showRoute(route) {
    roadkit.route = route;
    drawLine($('route-drawing'), route.geometry);
    $('route-summary').textContent = routeSummary(route);
    $('save').disabled = !route.geometry;
  }

  function points() {
    return [parsePoint($('route-start').value, 'start'), parsePoint($('route-end').value, 'end')];
  }

  async function onCompute(event) {
    event.preventDefault();
    showError('route-error', null);
    try {
      const [start, end] = points();
      const route = await computeRoute({
        routingUrl: roadkit.settings.RoutingUrl,
        resource: roadkit.settings.RoutingResource,
        start,
        end,
      });
      showRoute({ ...route, start, end });
    } catch (error) {
      showError('route-error', error);
    }
  }

  function onStraight() {
    showError('route-error', null);
    try {
      const [start, end] = points();
      showRoute({ ...straightLine(start, end), start, end });
    } catch (error) {
      showError('route-error', error);
    }
  }

  async function onSave(event) {
    event.preventDefault();
    if (!roadkit.route) return;
    showError('documents-error', null);
    try {
      const [start, end] = points();
      const feature = routeFeature(roadkit.route, { start, end, resource: roadkit.settings.RoutingResource });
      await service.api.createDocument({ title: $('save-title').value, type: 'route', geojson: feature });
      renderDocuments(await service.refreshDocuments());
    } catch (error) {
      showError('documents-error', error);
    }
  }

  async function deleteDocument(id) {
    showError('documents-error', null);
    try {
      await service.api.deleteDocument(id);
      renderDocuments(await service.refreshDocuments());
    } catch (error) {
      showError('documents-error', error);
    }
  }

  $('route-form').addEventListener('submit', onCompute);
  $('route-straight').addEventListener('click', onStraight);
  $('save-form').addEventListener('submit', onSave);
  $('login').addEventListener('click', () => {
    showError('error', null);
    auth.login();
  });
  $('logout').addEventListener('click', () => auth.logout());
  $('check-session').addEventListener('click', async () => {
    const ok = await auth.checkSession();
    record('checkSession', { result: ok });
    render();
  });

  roadkit.status = await auth.checkAuthentication();
  record('checkAuthentication', { status: roadkit.status });
  render();
  if (roadkit.status === 'logout') $('status').textContent = 'Signed out';
  roadkit.ready = true;
  return roadkit;
}
