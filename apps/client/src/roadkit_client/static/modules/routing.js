/**
 * The routing service's simple API (route operation), as the client uses it:
 * `{RoutingUrl}/route?resource=...&start=x,y&end=x,y&geometryFormat=geojson&distanceUnit=meter&timeUnit=second`.
 *
 * Units are always asked for explicitly: a resource's defaults (minutes for Monaco's OSRM
 * resource) are not the client's to guess. The answer echoes the units; they are stored
 * with the numbers in saved documents.
 */

/** The units the client asks for. */
export const DISTANCE_UNIT = 'meter';
export const TIME_UNIT = 'second';

const METERS = { meter: 1, kilometer: 1000 };
const SECONDS = { second: 1, minute: 60, hour: 3600 };

export class RoutingError extends Error {
  constructor(message, status) {
    super(message);
    this.name = 'RoutingError';
    this.status = status;
  }
}

/** Parse "lon,lat" into [lon, lat]; throws a readable error. */
export function parsePoint(text, label = 'point') {
  const parts = String(text).split(',').map((s) => s.trim());
  const [lon, lat] = parts.map(Number);
  if (parts.length !== 2 || !Number.isFinite(lon) || !Number.isFinite(lat)) {
    throw new RoutingError(`${label}: expected "longitude,latitude", got "${text}"`);
  }
  if (lon < -180 || lon > 180 || lat < -90 || lat > 90) throw new RoutingError(`${label}: out of range`);
  return [lon, lat];
}

/**
 * Compute a route.
 * @returns {Promise<{geometry: object, distance?: number, duration?: number}>}
 */
export async function computeRoute({ routingUrl, resource, start, end, fetch = globalThis.fetch }) {
  const url = new URL(`${String(routingUrl).replace(/\/+$/, '')}/route`);
  url.searchParams.set('resource', resource);
  url.searchParams.set('start', start.join(','));
  url.searchParams.set('end', end.join(','));
  url.searchParams.set('geometryFormat', 'geojson');
  url.searchParams.set('distanceUnit', DISTANCE_UNIT);
  url.searchParams.set('timeUnit', TIME_UNIT);
  let response;
  try {
    response = await fetch(url.toString(), { headers: { Accept: 'application/json' } });
  } catch (err) {
    throw new RoutingError(`The routing service is unreachable (${err?.message ?? err})`, 0);
  }
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const detail = body?.error?.message ?? body?.message ?? body?.error ?? `HTTP ${response.status}`;
    throw new RoutingError(`Routing failed: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`, response.status);
  }
  if (body?.geometry?.type !== 'LineString' || !Array.isArray(body.geometry.coordinates)) {
    throw new RoutingError('Routing failed: the answer has no LineString geometry', response.status);
  }
  return {
    ...body,
    distanceUnit: body.distanceUnit ?? DISTANCE_UNIT,
    timeUnit: body.timeUnit ?? TIME_UNIT,
  };
}

/** Metres from a distance in `unit` (null when unknown). */
export function toMeters(value, unit) {
  return Number.isFinite(value) && METERS[unit] ? value * METERS[unit] : null;
}

/** Seconds from a duration in `unit` (null when unknown, e.g. the "standard" HH:MM:SS text). */
export function toSeconds(value, unit) {
  return Number.isFinite(value) && SECONDS[unit] ? value * SECONDS[unit] : null;
}

/** "1.69 km" / "850 m". */
export function formatDistance(meters) {
  return meters >= 1000 ? `${(meters / 1000).toFixed(2)} km` : `${Math.round(meters)} m`;
}

/** "4 min", "1 h 05 min", "< 1 min". */
export function formatDuration(seconds) {
  const minutes = Math.round(seconds / 60);
  if (minutes < 1) return '< 1 min';
  if (minutes < 60) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`;
}

/** The summary the user reads: distance and duration, in the units the answer says. */
export function routeSummary(route) {
  const parts = [];
  if (route.straight) parts.push('Straight line (no routing)');
  const meters = toMeters(route.distance, route.distanceUnit);
  const seconds = toSeconds(route.duration, route.timeUnit);
  if (meters !== null) parts.push(formatDistance(meters));
  if (seconds !== null) parts.push(formatDuration(seconds));
  return parts.join(' · ');
}

/** A straight segment, used when no routing service answers. */
export function straightLine(start, end) {
  return { geometry: { type: 'LineString', coordinates: [start, end] }, straight: true };
}

/** The GeoJSON Feature saved as a document. */
export function routeFeature(route, { start, end, resource }) {
  return {
    type: 'Feature',
    geometry: route.geometry,
    properties: {
      start,
      end,
      resource: route.straight ? null : resource,
      distance: route.distance ?? null,
      distanceUnit: route.distance === undefined ? null : route.distanceUnit ?? null,
      duration: route.duration ?? null,
      timeUnit: route.duration === undefined ? null : route.timeUnit ?? null,
      straight: !!route.straight,
    },
  };
}
