// Webhooks: the merchant's endpoints (URL, status, why disabled), adding one (its
// secret shown once, with a copy button), and for each: a test event, a new secret, enabling,
// deleting (after a confirmation); its deliveries (the log of attempts, filtered by outcome) with Resend on
// each, and a recovery since a date and time. Every result in words.

import { call, inWords } from './api.js';
import { announce, confirmed, copyable, fill, h, local, notice, table, typedTime, when, zone } from './dom.js';
import { eventOf, locateEvents, nameOf } from './names.js';

const REASONS = { gone: 'it answered 410 Gone', failing: 'none of its attempts succeeded for too long' };

function secretShown(secret, what) {
  return h('div', { class: 'notice' },
    h('p', {}, `${what} Its secret is shown only now: keep it where your receiver verifies signatures.`),
    copyable(secret, 'Copy secret'));
}

// The outcome of a test or a resend, in words.
function attempted(delivery, what) {
  if (delivery.outcome === 'delivered') {
    return notice(`${what} delivered: the receiver answered ${delivery.http_status} in ${delivery.duration_ms} ms.`);
  }
  return notice(`${what} not delivered: ${delivery.error || 'it failed'}.`, true);
}

// Whether an endpoint's automatic deliveries are failing, read from its newest attempts (tests and
// resends leave the endpoint's state as it is): since when, and the last error. `since` is the
// oldest failure read when no delivered attempt was among them (`atLeast`).
export function failing(deliveries, hasMore) {
  const automatic = deliveries.filter((d) => d.trigger === 'automatic');
  if (automatic.length === 0 || automatic[0].outcome !== 'failed') return null;
  const delivered = automatic.findIndex((d) => d.outcome === 'delivered');
  const failures = delivered === -1 ? automatic : automatic.slice(0, delivered);
  return {
    since: failures[failures.length - 1].attempted_at,
    atLeast: delivered === -1 && hasMore,
    error: automatic[0].error || (automatic[0].http_status ? `answered ${automatic[0].http_status}` : 'it failed'),
  };
}

function failingSaid(state) {
  if (!state) return null;
  return h('p', { class: 'failing' },
    `Deliveries failing ${state.atLeast ? 'since at least' : 'since'} ${when(state.since)}. The last error: ${state.error}.`);
}

async function failingOf(w) {
  if (w.status !== 'ENABLED') return null;
  try {
    const page = await call('/v1/webhook/deliveries', { webhook_id: w.webhook_id, pagination: { limit: 100 } });
    return failing(page.deliveries, page.pagination.has_next);
  } catch { return null; }
}

function endpointCard(w, refresh, said, state) {
  const buttons = [];
  const test = h('button', { type: 'button' }, 'Send test event');
  test.addEventListener('click', async () => {
    test.disabled = true;
    try {
      const { delivery } = await call('/v1/webhook/test', { webhook_id: w.webhook_id });
      said(attempted(delivery, 'Test event'));
    } catch (e) { said(notice(inWords(e), true)); }
    test.disabled = false;
  });
  buttons.push(test);
  const rotate = h('button', { type: 'button', class: 'secondary' }, 'Rotate secret');
  rotate.addEventListener('click', async () => {
    try {
      const answer = await call('/v1/webhook/rotate_secret', { webhook_id: w.webhook_id });
      said(secretShown(answer.secret, 'A new secret: for 24 hours deliveries carry both signatures, the new and the old.'));
    } catch (e) { said(notice(inWords(e), true)); }
  });
  buttons.push(rotate);
  if (w.status === 'DISABLED') {
    const enable = h('button', { type: 'button' }, 'Enable');
    enable.addEventListener('click', async () => {
      try {
        await call('/v1/webhook/enable', { webhook_id: w.webhook_id });
        await refresh(notice(`Enabled: ${w.url} gets the events appended from now on (recover the earlier ones).`));
      } catch (e) { said(notice(inWords(e), true)); }
    });
    buttons.push(enable);
  }
  const remove = h('button', { type: 'button', class: 'danger' }, 'Delete');
  remove.addEventListener('click', async () => {
    if (!(await confirmed(`Delete the endpoint ${w.url}? Nothing more is delivered to it.`, 'Delete endpoint'))) return;
    try {
      await call('/v1/webhook/delete', { webhook_id: w.webhook_id });
      await refresh(notice(`Deleted: ${w.url}.`));
    } catch (e) { said(notice(inWords(e), true)); }
  });
  buttons.push(remove);
  return h('article', { class: 'endpoint', 'aria-label': w.url },
    h('h2', {}, h('a', { href: `#webhooks/${encodeURIComponent(w.webhook_id)}` }, w.url)),
    h('p', {}, h('span', { class: `status status-${w.status}` }, w.status),
      w.status === 'DISABLED' ? ` because ${REASONS[w.disabled_reason] || w.disabled_reason}.` : '',
      ` Takes ${w.types ? w.types.join(', ') : 'every event type'}; created ${when(w.created_at)}.`),
    failingSaid(state),
    h('div', { class: 'controls' }, buttons));
}

export function showWebhooks(view) {
  const url = h('input', { id: 'endpoint-url', type: 'url', inputmode: 'url', placeholder: 'https://shop.example/hooks/storefront' });
  const add = h('button', { type: 'submit' }, 'Add endpoint');
  const result = h('div', {});
  const list = h('div', {});
  const form = h('form', { novalidate: true },
    h('label', { for: 'endpoint-url' }, 'Endpoint URL'), url, h('div', {}, add));
  fill(view, h('h1', {}, 'Webhooks'),
    h('p', {}, 'Your endpoints receive every event as it happens, signed with their secret (Standard Webhooks).'),
    form, result, list);
  const said = (node) => { fill(result, node); };
  const refresh = async (message) => {
    if (message) said(message);
    try {
      const { webhooks } = await call('/v1/webhook/list', {});
      const states = await Promise.all(webhooks.map(failingOf));
      fill(list, webhooks.length === 0 ? h('p', {}, 'No endpoint yet.')
        : webhooks.map((w, i) => endpointCard(w, refresh, said, states[i])));
    } catch (e) { fill(list, notice(inWords(e), true)); }
  };
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    add.disabled = true;
    try {
      const answer = await call('/v1/webhook/create', { url: url.value.trim() });
      url.value = '';
      await refresh(secretShown(answer.secret, `Added ${answer.webhook.url}.`));
      announce('Endpoint added.');
    } catch (e) {
      said(notice(inWords(e), true));
      url.focus();
    }
    add.disabled = false;
  });
  refresh();
}

const PAGE = 50;

// A delivery's event named by its location (linked), with its sequence; a test event as such.
function eventSaid(d) {
  if (d.sequence === null) return ['Test event ', h('code', {}, d.event_id)];
  const e = eventOf(d.sequence);
  if (!e || !e.location_id) return [h('code', {}, d.event_id), ` (#${d.sequence})`];
  return [h('a', { href: `#locations/${encodeURIComponent(e.location_id)}` },
    nameOf(e.location_id) || e.merchant_location_id || e.location_id), ` (${e.type}, #${d.sequence})`];
}

export function showWebhook(view, id) {
  const result = h('div', {});
  const log = h('div', {});
  const outcome = h('select', { id: 'outcome-filter' },
    h('option', { value: '' }, 'All'), h('option', { value: 'delivered' }, 'delivered'), h('option', { value: 'failed' }, 'failed'));
  const since = h('input', { id: 'recover-since', type: 'text', autocomplete: 'off', placeholder: 'YYYY-MM-DD HH:MM:SS',
    'aria-describedby': 'recover-since-help' });
  const recover = h('button', { type: 'submit' }, 'Recover');
  const more = h('button', { type: 'button', class: 'secondary' }, 'Older deliveries');
  const header = h('div', {});
  fill(view, h('p', {}, h('a', { href: '#webhooks' }, 'All endpoints')), header, result,
    h('form', { class: 'controls', id: 'recover-form' },
      h('div', {}, h('label', { for: 'recover-since' }, 'Since'), since,
        h('p', { id: 'recover-since-help', class: 'help' }, `Your time, ${zone()}, as the tables write it.`)), recover),
    h('h2', {}, 'Deliveries'),
    h('div', { class: 'controls' }, h('div', {}, h('label', { for: 'outcome-filter' }, 'Outcome'), outcome)),
    log, more);
  const said = (node) => { fill(result, node); };
  let cursor = null;
  let rows = [];
  const row = (d) => {
    const cells = [
      h('td', {}, when(d.attempted_at)),
      h('td', {}, eventSaid(d)),
      h('td', { class: 'num' }, d.attempt),
      h('td', { class: `outcome-${d.outcome}` }, d.outcome),
      h('td', { class: 'num' }, d.http_status === null ? '—' : d.http_status),
      h('td', {}, d.error || '—'),
      h('td', {}, d.trigger),
    ];
    const resend = h('button', { type: 'button', class: 'secondary' }, 'Resend');
    resend.addEventListener('click', async () => {
      resend.disabled = true;
      try {
        const { delivery } = await call('/v1/webhook/resend', { webhook_id: id, event_id: d.event_id });
        said(attempted(delivery, `Resent ${d.event_id}:`));
        await load(true);
      } catch (e) { said(notice(inWords(e), true)); }
      resend.disabled = false;
    });
    // An event delivered since needs no resend; a test event is sent again with Send test event.
    const delivered = rows.some((r) => r.event_id === d.event_id && r.outcome === 'delivered');
    cells.push(h('td', {}, d.sequence === null || delivered ? '—' : resend));
    return h('tr', {}, cells);
  };
  const load = async (again) => {
    if (again) { cursor = null; rows = []; }
    const filter = outcome.value ? { outcome: outcome.value } : null;
    try {
      const page = await call('/v1/webhook/deliveries', {
        webhook_id: id, filter, pagination: cursor ? { limit: PAGE, cursor } : { limit: PAGE } });
      rows = rows.concat(page.deliveries);
      cursor = page.pagination.next_cursor;
      await locateEvents(page.deliveries.map((d) => d.sequence)).catch(() => {});
      more.hidden = !page.pagination.has_next;
      fill(log, rows.length === 0 ? h('p', {}, 'No delivery.')
        : table('Deliveries', [['Time'], ['Event'], ['Attempt', 'num'], ['Outcome'], ['HTTP status', 'num'], ['Error'],
          ['Trigger'], ['Action']], rows.map(row)));
    } catch (e) { fill(log, notice(inWords(e), true)); }
  };
  const refresh = async (message) => {
    if (message) said(message);
    try {
      const { webhooks } = await call('/v1/webhook/list', {});
      const w = webhooks.find((x) => x.webhook_id === id);
      if (!w) {
        fill(header, h('h1', {}, 'Webhooks'), notice('No endpoint of this merchant has this id (deleted?).', true));
        return;
      }
      fill(header, h('h1', {}, 'Webhooks'), endpointCard(w, refresh, said, await failingOf(w)));
    } catch (e) { fill(header, h('h1', {}, 'Webhooks'), notice(inWords(e), true)); }
  };
  outcome.addEventListener('change', () => load(true));
  more.addEventListener('click', () => load(false));
  view.querySelector('#recover-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const at = typedTime(since.value);
    if (!at) {
      said(notice(`Enter the date and time from which to recover, such as ${local(new Date())}.`, true));
      since.focus();
      return;
    }
    try {
      const { recovered } = await call('/v1/webhook/recover', { webhook_id: id, since: at.toISOString() });
      said(notice(`${recovered} event${recovered === 1 ? '' : 's'} recovered since ${when(at.toISOString())}: `
        + 'each is delivered again from the start of the schedule.'));
      announce(`${recovered} events recovered.`);
    } catch (e) { said(notice(inWords(e), true)); }
  });
  refresh();
  load(true);
}
