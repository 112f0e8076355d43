// Events: the merchant's events, newest at the top, each with its type, time, the
// location's name and its status; new ones appear as they are committed, while the section is
// open, by following the feed with wait_s (one request waiting at a time, ended on leaving).

import { call, inWords } from './api.js';
import { announce, fill, h, notice, table, when } from './dom.js';
import { learnEvents, nameAll as nameOfAll, nameOf } from './names.js';

const SHOWN = 100;
const WALK_PAGES = 20;

async function nameAll(events) {
  learnEvents(events);
  await nameOfAll(events.map((e) => e.location_id));
}

export function showEvents(view) {
  const body = h('div', {});
  fill(view, h('h1', {}, 'Events'),
    h('p', {}, 'What changed in your locations, newest first. New events appear here as they happen.'), body);
  const stop = new AbortController();
  let events = [];
  let cursor = null;
  const draw = (extra) => {
    const rows = events.slice(-SHOWN).reverse().map((e) => h('tr', { 'data-sequence': e.sequence },
      h('td', {}, when(e.occurred_at)),
      h('td', {}, e.type),
      h('td', {}, e.location_id
        ? h('a', { href: `#locations/${encodeURIComponent(e.location_id)}` }, nameOf(e.location_id) || e.merchant_location_id || e.location_id)
        : '—'),
      h('td', { class: `status status-${e.status}` }, e.status),
      h('td', { class: 'num' }, e.version),
      h('td', { class: 'num' }, e.sequence)));
    fill(body, extra || null,
      events.length === 0 ? h('p', {}, 'No event yet.') : h('p', {}, `The newest ${Math.min(events.length, SHOWN)} events.`),
      table('Events', [['Time'], ['Type'], ['Location'], ['Status'], ['Version', 'num'], ['Sequence', 'num']], rows));
  };
  const run = async () => {
    let older = null;
    try {
      // From the oldest kept to the newest, keeping the last ones; a long log starts at its end.
      let page = await call('/v1/location/events', { start: 'oldest', pagination: { limit: 1000 } }, { signal: stop.signal });
      events = page.events;
      let pages = 1;
      while (page.pagination.has_next && pages < WALK_PAGES) {
        page = await call('/v1/location/events', { pagination: { limit: 1000, cursor: page.pagination.next_cursor } }, { signal: stop.signal });
        events = events.concat(page.events).slice(-SHOWN);
        pages += 1;
      }
      if (page.pagination.has_next) {
        older = notice('Your log is long: only the events from now on are shown here (read the rest with the feed).');
        page = await call('/v1/location/events', { start: 'latest' }, { signal: stop.signal });
        events = [];
      }
      cursor = page.pagination.next_cursor;
      events = events.slice(-SHOWN);
      await nameAll(events);
      draw(older);
      for (;;) {
        page = await call('/v1/location/events', { pagination: { limit: 100, cursor }, wait_s: 20 }, { signal: stop.signal });
        cursor = page.pagination.next_cursor;
        if (page.events.length) {
          await nameAll(page.events);
          events = events.concat(page.events).slice(-SHOWN);
          draw(older);
          announce(`${page.events.length} new event${page.events.length === 1 ? '' : 's'}.`);
        }
      }
    } catch (e) {
      if (e.name === 'AbortError') return;
      draw(notice(`${inWords(e)} New events are no longer followed: open Events again to resume.`, true));
    }
  };
  run();
  return () => stop.abort();
}
