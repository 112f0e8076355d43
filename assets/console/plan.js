// A plan of points drawn from their coordinates (no map tiles): an equirectangular projection
// scaled to fit, north up, each point a circle with its name as its title; the chosen ones larger
// and labelled. As the widget's plan, it says where points are relative to one another.

import { h, svg } from './dom.js';

const SIZE = 320;
const MARGIN = 24;

// `marks`: the location ids to point out, each with its label (the first one is the location the
// page is about).
export function plan(points, label, marks = {}) {
  const drawn = points.filter((p) => Number.isFinite(p.latitude) && Number.isFinite(p.longitude));
  const picture = svg('svg', { class: 'plan', viewBox: `0 0 ${SIZE} ${SIZE}`, role: 'img', 'aria-label': label });
  if (drawn.length === 0) return h('figure', {}, picture, h('figcaption', {}, 'No location to draw.'));
  const lat0 = drawn.reduce((s, p) => s + p.latitude, 0) / drawn.length;
  const kx = Math.cos((lat0 * Math.PI) / 180);
  const xs = drawn.map((p) => p.longitude * kx);
  const ys = drawn.map((p) => p.latitude);
  const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const span = Math.max(x1 - x0, y1 - y0, 1e-6);
  const scale = (SIZE - 2 * MARGIN) / span;
  const cx = (x0 + x1) / 2;
  const cy = (y0 + y1) / 2;
  const at = (p) => [SIZE / 2 + (p.longitude * kx - cx) * scale, SIZE / 2 - (p.latitude - cy) * scale];
  const marked = Object.keys(marks);
  for (const p of drawn) {
    const [x, y] = at(p);
    const mark = marked.indexOf(p.location_id);
    const dot = svg('circle', { cx: x.toFixed(1), cy: y.toFixed(1), r: mark >= 0 ? 7 : 4,
      class: `${p.status}${mark === 0 ? ' chosen' : mark > 0 ? ' marked' : ''}` }, svg('title', {}, p.name));
    picture.append(dot);
    if (mark >= 0) {
      const right = x > SIZE / 2;
      picture.append(svg('text', { x: (right ? x - 12 : x + 12).toFixed(1), y: (y < 30 ? y + 20 : y - 10).toFixed(1),
        'text-anchor': right ? 'end' : 'start' }, marks[p.location_id]));
    }
  }
  const km = span * 111.2;
  const spans = drawn.length < 2 ? '' : `; the plan spans about ${km < 1 ? `${Math.round(km * 1000)} m` : `${km.toFixed(1)} km`}`;
  return h('figure', {}, picture,
    h('figcaption', {}, `${drawn.length} location${drawn.length === 1 ? '' : 's'} drawn${spans}, north up.`));
}
