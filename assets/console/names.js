// What the console has learnt of the merchant's locations and events, for naming them: each
// location's name by its id, and each event's location by its sequence (read by walking the feed
// from its oldest event, as far as needed, at most WALK_PAGES pages). Signing out forgets both.

import { call } from './api.js';

const WALK_PAGES = 20;
const names = new Map();
const eventLocations = new Map();
let feed = { cursor: null, through: 0, ended: false };

export function forgetNames() {
  names.clear();
  eventLocations.clear();
  feed = { cursor: null, through: 0, ended: false };
}

// A location's name, once `nameAll` has read it.
export function nameOf(locationId) {
  return names.get(locationId);
}

// Reads the names of the locations of `ids` not known yet, a thousand a request.
export async function nameAll(ids) {
  const unknown = [...new Set(ids.filter((id) => id && !names.has(id)))];
  for (let i = 0; i < unknown.length; i += 1000) {
    const page = await call('/v1/location/list', { filter: { location_ids: unknown.slice(i, i + 1000) }, pagination: { limit: 1000 } });
    for (const l of page.locations) names.set(l.location_id, l.name);
  }
}

// Remembers the events read elsewhere (the Events section reads the feed too).
export function learnEvents(events) {
  for (const e of events) eventLocations.set(e.sequence, e);
}

// The event of `sequence` (its location_id and merchant_location_id), if the walk reached it.
export function eventOf(sequence) {
  return eventLocations.get(sequence);
}

// Walks the feed on from where it was until every sequence of `sequences` is known, with names,
// the log has ended, or WALK_PAGES more pages were read.
export async function locateEvents(sequences) {
  const wanted = sequences.filter((s) => s !== null && !eventLocations.has(s));
  const last = Math.max(0, ...wanted);
  for (let pages = 0; wanted.length && last > feed.through && !feed.ended && pages < WALK_PAGES; pages += 1) {
    const page = await call('/v1/location/events', feed.cursor
      ? { pagination: { limit: 1000, cursor: feed.cursor } }
      : { start: 'oldest', pagination: { limit: 1000 } });
    learnEvents(page.events);
    feed = {
      cursor: page.pagination.next_cursor,
      through: page.events.length ? page.events[page.events.length - 1].sequence : feed.through,
      ended: !page.pagination.has_next,
    };
  }
  await nameAll(sequences.map((s) => eventLocations.get(s)?.location_id));
}
