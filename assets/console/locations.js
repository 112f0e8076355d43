// Locations: the merchant's locations as POST /v1/location/list pages them, by
// status, with the cursors forwards and back; a plan of the listed points; one location's record
// in words, a quarantined one's neighbour named and drawn beside it, and Archive / Restore with
// expected_version (a change meanwhile told in words, and the location shown as it now is).

import { call, inWords } from './api.js';
import { announce, fill, h, metresBetween, notice, table, when } from './dom.js';
import { showForm } from './form.js';
import { plan } from './plan.js';

const STATUSES = ['ACTIVE', 'QUARANTINE', 'ARCHIVED'];
const PAGE = 20;
// Where the list stands: the status filter and the cursors of the pages walked to (null: first).
const state = { status: '', text: '', cursors: [null] };

// What a save said, shown once on the location's page it leads to.
let saved = null;

// Signing out starts the next person from the first page of every location.
export function forgetLocations() {
  state.status = '';
  state.text = '';
  state.cursors = [null];
  saved = null;
}

// The form: a new location (`id` absent) or an edit of the location with `id`.
export async function showLocationForm(view, id) {
  const done = (savedId, said) => {
    saved = said;
    location.hash = `#locations/${encodeURIComponent(savedId)}`;
  };
  if (!id) return showForm(view, null, done);
  let l;
  try {
    l = await record(id);
  } catch (e) {
    fill(view, h('h1', {}, 'Location'), notice(inWords(e), true));
    return null;
  }
  if (!l) {
    fill(view, h('h1', {}, 'Location'), notice('No location of this merchant has this id.', true));
    return null;
  }
  return showForm(view, l, done);
}

export function showLocations(view) {
  const select = h('select', { id: 'status-filter' },
    h('option', { value: '' }, 'All'),
    STATUSES.map((s) => h('option', { value: s }, s)));
  select.value = state.status;
  const body = h('div', { 'aria-live': 'polite' });
  const previous = h('button', { type: 'button', class: 'secondary' }, 'Previous page');
  const next = h('button', { type: 'button', class: 'secondary' }, 'Next page');
  const add = h('button', { type: 'button' }, 'Add location');
  add.addEventListener('click', () => { location.hash = '#locations/new'; });
  const find = h('input', { id: 'find', type: 'search', autocomplete: 'off', 'aria-describedby': 'find-help' });
  find.value = state.text;
  const search = h('form', { role: 'search', class: 'controls', novalidate: true },
    h('div', {}, h('label', { for: 'find' }, 'Find'), find,
      h('p', { id: 'find-help', class: 'help' }, 'A piece of a name or of your id, in any letter case.')),
    h('button', { type: 'submit', class: 'secondary' }, 'Find'));
  search.addEventListener('submit', (event) => {
    event.preventDefault();
    state.text = find.value;
    state.cursors = [null];
    load();
  });
  fill(view,
    h('h1', {}, 'Locations'),
    search,
    h('div', { class: 'controls' }, h('div', {}, h('label', { for: 'status-filter' }, 'Status'), select), add),
    body,
    h('div', { class: 'controls' }, previous, next));
  let page = null;
  const load = async () => {
    previous.disabled = true;
    next.disabled = true;
    const cursor = state.cursors[state.cursors.length - 1];
    const filter = {};
    if (state.status) filter.status = state.status;
    if (state.text) filter.text = state.text;
    try {
      page = await call('/v1/location/list', { filter, pagination: cursor ? { limit: PAGE, cursor } : { limit: PAGE } });
    } catch (e) {
      fill(body, notice(inWords(e), true));
      previous.disabled = state.cursors.length < 2;
      return;
    }
    const n = state.cursors.length;
    const from = (n - 1) * PAGE + 1;
    const shown = page.locations.length;
    const rows = page.locations.map((l) => h('tr', {},
      h('td', {}, h('a', { href: `#locations/${encodeURIComponent(l.location_id)}` }, l.name)),
      h('td', { class: `status status-${l.status}` }, l.status),
      h('td', { class: 'num' }, l.version),
      h('td', {}, (l.location_types || []).join(', ')),
      h('td', {}, l.merchant_location_id || '—'),
      h('td', {}, when(l.updated_at))));
    fill(body,
      h('p', {}, shown === 0 ? 'No location matches.'
        : page.pagination.total === null ? `Locations ${from} to ${from + shown - 1} with “${state.text}”.`
          : `Locations ${from} to ${from + shown - 1} of ${page.pagination.total}.`),
      h('div', { class: 'layout' },
        table('Locations', [['Name'], ['Status'], ['Version', 'num'], ['Types'], ['Your id'], ['Updated']], rows),
        plan(page.locations, 'Plan of the listed locations')));
    previous.disabled = n < 2;
    next.disabled = !page.pagination.has_next;
    announce(`Page ${n} of the locations shown.`);
  };
  select.addEventListener('change', () => {
    state.status = select.value;
    state.cursors = [null];
    load();
  });
  next.addEventListener('click', () => {
    if (page && page.pagination.next_cursor) {
      state.cursors.push(page.pagination.next_cursor);
      load();
    }
  });
  previous.addEventListener('click', () => {
    if (state.cursors.length > 1) {
      state.cursors.pop();
      load();
    }
  });
  load();
}

async function record(id) {
  const page = await call('/v1/location/list', { filter: { location_ids: [id] } });
  return page.locations[0] || null;
}

const DAYS = { MONDAY: 'Monday', TUESDAY: 'Tuesday', WEDNESDAY: 'Wednesday', THURSDAY: 'Thursday', FRIDAY: 'Friday',
  SATURDAY: 'Saturday', SUNDAY: 'Sunday' };

function hours(s) {
  if (!s) return 'closed';
  let text = `${s.time_start}–${s.time_end}`;
  if (s.break) text += `, break ${s.break}`;
  if (s.shipping_cutoff) text += `, orders shipped the same day until ${s.shipping_cutoff}`;
  return text;
}

// A field's value in words.
function words(key, value) {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'boolean') return value ? 'Yes' : 'No';
  if (key === 'created_at' || key === 'updated_at') return when(value);
  if (key === 'limits') return `${value.length} × ${value.width} × ${value.height} cm, up to ${value.weight} kg`;
  if (key === 'working_schedule') {
    return h('ul', {}, value.map((d) => h('li', {}, `${DAYS[d.day] || d.day}: ${hours(d.schedule)}`)));
  }
  if (key === 'individual_schedule') {
    return h('ul', {}, value.map((d) => h('li', {},
      `${d.date}: ${d.is_works ? hours(d.schedule) : 'closed'}`)));
  }
  if (key === 'issue') return 'Said above, under “Why it is in quarantine”.';
  if (Array.isArray(value)) return value.length ? value.join(', ') : '—';
  if (typeof value === 'object') {
    return Object.entries(value).map(([k, v]) => `${k.replaceAll('_', ' ')}: ${v === null ? '—' : v}`).join('; ');
  }
  return String(value);
}

const TYPES = { WAREHOUSE: 'a warehouse', PICKUP_POINT: 'a pickup point', CLICK_AND_COLLECT: 'a click-and-collect point' };

// Why a location is in quarantine, in words a person acts on: the neighbour by name and address,
// how far apart they are, and what can be done.
function inQuarantine(l, neighbour) {
  const metres = Math.round(metresBetween(l, neighbour));
  const shared = (l.location_types || []).filter((t) => (neighbour.location_types || []).includes(t));
  const link = h('a', { href: `#locations/${encodeURIComponent(neighbour.location_id)}` }, neighbour.name);
  return h('div', {},
    h('p', {}, 'It stands ', h('strong', {}, `${metres} m`), ' from ', link,
      neighbour.address_tail ? ` (${neighbour.address_tail})` : '',
      `, which is also ${shared.map((t) => TYPES[t] || t).join(' and ') || 'of its type'} and ${neighbour.status === 'ACTIVE' ? 'is shown to buyers' : `is ${neighbour.status.toLowerCase()}`}. `
      + 'Two such places closer than 50 m look like one place entered twice, so buyers are not shown this one.'),
    h('p', {}, 'What you can do:'),
    h('ul', {},
      h('li', {}, 'If its position is wrong, correct it with Edit: it is shown to buyers once it stands apart.'),
      h('li', {}, 'If it is the same place as its neighbour, archive one of the two.'),
      h('li', {}, 'If both are real places side by side, ask the service\'s operator to approve it.')));
}

const LABELS = { location_id: 'Location id', merchant_location_id: 'Your id', is_accepts_returns: 'Accepts returns' };
const label = (key) => LABELS[key] || key.charAt(0).toUpperCase() + key.slice(1).replaceAll('_', ' ');

export function showLocation(view, id) {
  const body = h('div', {});
  fill(view, h('p', {}, h('a', { href: '#locations' }, 'All locations')), body);
  const show = async (said) => {
    let l;
    try {
      l = await record(id);
    } catch (e) {
      fill(body, h('h1', {}, 'Location'), notice(inWords(e), true));
      return;
    }
    if (!l) {
      fill(body, h('h1', {}, 'Location'), notice('No location of this merchant has this id.', true));
      return;
    }
    const flash = saved ? notice(saved) : null;
    saved = null;
    const parts = [h('h1', {}, l.name), said || flash];
    if (l.status === 'QUARANTINE' && l.issue) {
      const neighbourId = (l.issue.message.match(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i) || [])[0];
      let neighbour = null;
      try { neighbour = neighbourId ? await record(neighbourId) : null; } catch { neighbour = null; }
      parts.push(h('h2', {}, 'Why it is in quarantine'),
        neighbour ? inQuarantine(l, neighbour) : h('p', {}, l.issue.message),
        plan(neighbour ? [l, neighbour] : [l], `Plan of ${l.name} and its neighbour ${neighbour ? neighbour.name : ''}`,
          neighbour ? { [l.location_id]: 'This location', [neighbour.location_id]: 'Its neighbour' }
            : { [l.location_id]: 'This location' }));
    }
    const action = l.status === 'ARCHIVED' ? 'Restore' : 'Archive';
    const button = h('button', { type: 'button', class: action === 'Archive' ? 'danger' : '' }, action);
    button.addEventListener('click', () => change(action, l));
    const edit = h('button', { type: 'button', class: 'secondary' }, 'Edit');
    edit.addEventListener('click', () => { location.hash = `#locations/${encodeURIComponent(l.location_id)}/edit`; });
    parts.push(h('div', { class: 'controls' }, l.status === 'ARCHIVED' ? null : edit, button),
      h('h2', {}, 'Its record'),
      h('dl', { class: 'record' }, Object.entries(l).flatMap(([k, v]) => [h('dt', {}, label(k)), h('dd', {}, words(k, v))])));
    fill(body, ...parts);
  };
  const change = async (action, l) => {
    const path = action === 'Archive' ? '/v1/location/archive' : '/v1/location/restore';
    let result;
    try {
      result = (await call(path, { locations: [{ location_id: l.location_id, expected_version: l.version }] })).locations[0];
    } catch (e) {
      await show(notice(inWords(e), true));
      return;
    }
    const conflict = (result.errors || []).find((e) => e.field.endsWith('expected_version'));
    if (conflict) {
      await show(notice(`This location changed while you were looking at it (${conflict.message}). `
        + 'Here it is as it now is: check it, then try again if you still want to.', true));
    } else if (result.status === 'FAILED') {
      await show(notice(`It could not be changed: ${result.errors.map((e) => e.message).join('; ')}.`, true));
    } else {
      await show(notice(`${action === 'Archive' ? 'Archived' : 'Restored'}: it is now ${result.status}, version ${result.version}.`));
    }
    announce(`${action}: done.`);
  };
  show();
}
