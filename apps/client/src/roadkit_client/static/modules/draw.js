/**
 * Draw a GeoJSON LineString as SVG: an equirectangular projection scaled by
 * cos(latitude) so that small areas keep their shape. No map library.
 */
const SVG_NS = 'http://www.w3.org/2000/svg';

/** The coordinates of a LineString, MultiLineString or a Feature of either. */
export function lineCoordinates(geojson) {
  const g = geojson?.type === 'Feature' ? geojson.geometry : geojson;
  if (g?.type === 'LineString') return g.coordinates;
  if (g?.type === 'MultiLineString') return g.coordinates.flat();
  return [];
}

/**
 * Project lon/lat points into a `width` x `height` box with `padding`.
 * @returns {number[][]} [x, y] pairs, y growing downwards
 */
export function project(coords, { width = 600, height = 400, padding = 20 } = {}) {
  if (!coords.length) return [];
  const lons = coords.map((c) => c[0]);
  const lats = coords.map((c) => c[1]);
  const [minLon, maxLon, minLat, maxLat] = [Math.min(...lons), Math.max(...lons), Math.min(...lats), Math.max(...lats)];
  const k = Math.cos((((minLat + maxLat) / 2) * Math.PI) / 180);
  const spanX = Math.max((maxLon - minLon) * k, 1e-9);
  const spanY = Math.max(maxLat - minLat, 1e-9);
  const scale = Math.min((width - 2 * padding) / spanX, (height - 2 * padding) / spanY);
  const offX = (width - spanX * scale) / 2;
  const offY = (height - spanY * scale) / 2;
  return coords.map(([lon, lat]) => [offX + (lon - minLon) * k * scale, height - offY - (lat - minLat) * scale]);
}

/** Replace the content of `svg` with the line of `geojson`. */
export function drawLine(svg, geojson) {
  const width = 600;
  const height = 400;
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const points = project(lineCoordinates(geojson), { width, height });
  if (!points.length) return 0;
  const doc = svg.ownerDocument;
  const path = doc.createElementNS(SVG_NS, 'polyline');
  path.setAttribute('points', points.map((p) => p.map((v) => v.toFixed(1)).join(',')).join(' '));
  path.setAttribute('class', 'route-line');
  svg.appendChild(path);
  for (const [cls, p] of [['route-start', points[0]], ['route-end', points.at(-1)]]) {
    const dot = doc.createElementNS(SVG_NS, 'circle');
    dot.setAttribute('cx', p[0].toFixed(1));
    dot.setAttribute('cy', p[1].toFixed(1));
    dot.setAttribute('r', '6');
    dot.setAttribute('class', cls);
    svg.appendChild(dot);
  }
  return points.length;
}
