import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lineCoordinates, project } from '../src/roadkit_client/static/modules/draw.js';
import { computeRoute, parsePoint, routeFeature, routeSummary, straightLine } from '../src/roadkit_client/static/modules/routing.js';
import { json, makeFetch } from './fakes.mjs';

const ROUTING = 'http://routing.test/simple/1.0.0';

test('route request uses the simple API parameters', async () => {
  const fetchFn = makeFetch({
    [`GET ${ROUTING}/route`]: () => json({ geometry: { type: 'LineString', coordinates: [[7.41, 43.73], [7.42, 43.74]] }, distance: 1200, duration: 180 }),
  });
  const route = await computeRoute({ routingUrl: ROUTING, resource: 'monaco-osrm', start: [7.41, 43.73], end: [7.42, 43.74], fetch: fetchFn });
  const q = new URL(fetchFn.calls[0].url).searchParams;
  assert.equal(q.get('resource'), 'monaco-osrm');
  assert.equal(q.get('start'), '7.41,43.73');
  assert.equal(q.get('end'), '7.42,43.74');
  assert.equal(q.get('geometryFormat'), 'geojson');
  assert.equal(route.distance, 1200);
});

test('routing failures become readable errors, never crashes', async () => {
  const down = makeFetch({});
  down.routes[`GET ${ROUTING}/route`] = () => {
    throw new TypeError('Failed to fetch');
  };
  await assert.rejects(computeRoute({ routingUrl: ROUTING, resource: 'r', start: [0, 0], end: [1, 1], fetch: down }), /unreachable/);
  const bad = makeFetch({ [`GET ${ROUTING}/route`]: () => json({ error: { message: 'No path found' } }, 404) });
  await assert.rejects(computeRoute({ routingUrl: ROUTING, resource: 'r', start: [0, 0], end: [1, 1], fetch: bad }), /No path found/);
});

test('points are parsed as lon,lat', () => {
  assert.deepEqual(parsePoint(' 7.4197, 43.7311 '), [7.4197, 43.7311]);
  assert.throws(() => parsePoint('7.4'), /longitude,latitude/);
  assert.throws(() => parsePoint('200,10'), /out of range/);
});

test('a saved route is a GeoJSON Feature with its LineString', () => {
  const f = routeFeature(straightLine([0, 0], [1, 1]), { start: [0, 0], end: [1, 1], resource: 'r' });
  assert.equal(f.type, 'Feature');
  assert.deepEqual(f.geometry, { type: 'LineString', coordinates: [[0, 0], [1, 1]] });
  assert.equal(f.properties.straight, true);
});

test('projection fits the box, keeps north up and the aspect ratio', () => {
  const pts = project([[7.41, 43.73], [7.43, 43.73], [7.43, 43.75]], { width: 600, height: 400, padding: 20 });
  for (const [x, y] of pts) {
    assert.ok(x >= 19.99 && x <= 580.01 && y >= 19.99 && y <= 380.01, `${x},${y}`);
  }
  assert.ok(pts[2][1] < pts[1][1], 'north is up');
  const k = Math.cos((43.74 * Math.PI) / 180);
  const ratio = (pts[1][0] - pts[0][0]) / (pts[1][1] - pts[2][1]);
  assert.ok(Math.abs(ratio - k) < 1e-9);
  assert.deepEqual(lineCoordinates({ type: 'Feature', geometry: { type: 'LineString', coordinates: [[1, 2]] } }), [[1, 2]]);
});

test('units are asked for explicitly, shown as the answer says, and saved with the numbers', async () => {
  const fetchFn = makeFetch({
    [`GET ${ROUTING}/route`]: () =>
      json({ geometry: { type: 'LineString', coordinates: [[7.41, 43.73], [7.42, 43.74]] }, distance: 1690, duration: 245,
             distanceUnit: 'meter', timeUnit: 'second' }),
  });
  const route = await computeRoute({ routingUrl: ROUTING, resource: 'monaco-osrm', start: [7.41, 43.73], end: [7.42, 43.74], fetch: fetchFn });
  const q = new URL(fetchFn.calls[0].url).searchParams;
  assert.equal(q.get('distanceUnit'), 'meter');
  assert.equal(q.get('timeUnit'), 'second');
  assert.equal(routeSummary(route), '1.69 km · 4 min');
  const props = routeFeature(route, { start: [7.41, 43.73], end: [7.42, 43.74], resource: 'monaco-osrm' }).properties;
  assert.deepEqual([props.distance, props.distanceUnit, props.duration, props.timeUnit], [1690, 'meter', 245, 'second']);
  // Documents saved in other units are shown right; unknown units are not guessed.
  assert.equal(routeSummary({ distance: 1.69, distanceUnit: 'kilometer', duration: 4.1, timeUnit: 'minute' }), '1.69 km · 4 min');
  assert.equal(routeSummary({ distance: 850, distanceUnit: 'meter', duration: 1.5, timeUnit: 'hour' }), '850 m · 1 h 30 min');
  assert.equal(routeSummary({ distance: 1690, duration: 4 }), '');
  assert.equal(routeSummary(straightLine([0, 0], [1, 1])), 'Straight line (no routing)');
});
