/**
 * The routing service's simple API (route operation), as the client uses it:
 * `{RoutingUrl}/route?resource=...&start=x,y&end=x,y&geometryFormat=geojson`.
 */

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
  return body;
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
      duration: route.duration ?? null,
      straight: !!route.straight,
    },
  };
}
