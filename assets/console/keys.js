// Keys: the merchant's keys (label, scope, allowed origins, created, revoked); a storefront key
// made here for the shop's web pages, shown once with the HTML that puts the pickup-point widget
// on a page with it and a preview of that widget; Revoke after a confirmation.

import { call, inWords } from './api.js';
import { announce, confirmed, copyable, fill, h, notice, table, when } from './dom.js';

// A preview widget mounted on this page, destroyed when the section is left.
let preview = null;

function stopPreview() {
  if (preview) preview.destroy();
  preview = null;
}

// The origins as typed: one a line, or separated by commas or spaces; none typed: null (any page).
function typedOrigins(text) {
  const list = text.split(/[\s,]+/).filter(Boolean);
  return list.length ? list : null;
}

async function allKeys() {
  let keys = [];
  let cursor = null;
  do {
    const page = await call('/v1/key/list', { pagination: cursor ? { limit: 1000, cursor } : { limit: 1000 } });
    keys = keys.concat(page.keys);
    cursor = page.pagination.next_cursor;
  } while (cursor);
  return keys;
}

// Where the snippet's buyer stands until the shop's page says: the merchant's first location.
async function aPoint() {
  try {
    const page = await call('/v1/location/list', { filter: { status: 'ACTIVE' }, pagination: { limit: 1 } });
    const l = page.locations[0];
    if (l) return { latitude: l.latitude, longitude: l.longitude };
  } catch { /* the snippet says where to put the buyer's point */ }
  return { latitude: 55.7558, longitude: 37.6173 };
}

function snippet(apiKey, near) {
  return `<div id="pickup"></div>
<script src="${location.origin}/widget/pickup.js"></script>
<script>
  const element = document.getElementById('pickup');
  StorefrontPickup.mount(element, {
    apiKey: '${apiKey}',
    near: { latitude: ${near.latitude}, longitude: ${near.longitude} }, // the buyer's point
  });
  element.addEventListener('storefront:pickup', (event) => {
    console.log('Picked', event.detail.location_id); // event.detail is the location's record
  });
</script>`;
}

// The widget script of this service, loaded once into this page.
function widgetScript() {
  if (window.StorefrontPickup) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const script = h('script', { src: '/widget/pickup.js' });
    script.addEventListener('load', () => resolve());
    script.addEventListener('error', () => reject(new Error('the widget script did not load')));
    document.head.append(script);
  });
}

// What was made: the key once, the snippet, and the widget working with that key on this page
// (when the key allows this page's origin).
async function made(answer, place) {
  const near = await aPoint();
  const { key, api_key: apiKey } = answer;
  const here = !key.allowed_origins || key.allowed_origins.includes(location.origin);
  const frame = h('div', { class: 'preview' });
  fill(place, h('div', { class: 'notice' },
    h('p', {}, `Made the storefront key “${key.label}”. The key is shown only now: copy it, or the snippet below, now.`),
    copyable(apiKey, 'Copy key')),
  h('h2', {}, 'The widget on your shop’s page'),
  h('p', {}, 'Put this HTML where the buyer picks a pickup point; set the buyer’s point from the address at checkout.'),
  copyable(snippet(apiKey, near), 'Copy HTML', true),
  h('h2', {}, 'Preview'),
  here ? frame : h('p', {}, `The key may be used only from ${key.allowed_origins.join(', ')}, so it cannot work on this `
    + 'page: paste the HTML into one of those pages to see it.'));
  if (!here) return;
  try {
    await widgetScript();
    stopPreview();
    preview = window.StorefrontPickup.mount(frame, { apiKey, near });
  } catch (e) {
    fill(frame, notice(`The preview could not start: ${e.message}.`, true));
  }
}

export function showKeys(view) {
  const label = h('input', { id: 'key-label', type: 'text', autocomplete: 'off', 'aria-describedby': 'key-label-error' });
  const origins = h('textarea', { id: 'key-origins', rows: 2, spellcheck: 'false',
    'aria-describedby': 'key-origins-help key-origins-error' });
  const labelError = h('p', { id: 'key-label-error', class: 'error' });
  const originsError = h('p', { id: 'key-origins-error', class: 'error' });
  const create = h('button', { type: 'submit' }, 'Create storefront key');
  const result = h('div', {});
  const list = h('div', {});
  const form = h('form', { novalidate: true },
    h('label', { for: 'key-label' }, 'Label'), label, labelError,
    h('label', { for: 'key-origins' }, 'Allowed origins'),
    h('p', { id: 'key-origins-help', class: 'help' }, 'The shop’s web addresses that may use the key, such as '
      + 'https://shop.example, one a line. Leave it empty to allow any page the service allows.'),
    origins, originsError, h('div', {}, create));
  fill(view, h('h1', {}, 'Keys'),
    h('p', {}, 'Your full key manages everything; a storefront key may only search pickup points and list categories, '
      + 'and is meant for your shop’s pages.'),
    form, result, h('h2', {}, 'Your keys'), list);
  const said = (node) => { fill(result, node); };
  const refresh = async () => {
    try {
      const keys = await allKeys();
      fill(list, table('Keys', [['Label'], ['Scope'], ['Allowed origins'], ['Created'], ['Revoked'], ['Action']],
        keys.map((k) => h('tr', {},
          h('td', {}, k.label || '—'),
          h('td', {}, k.scope),
          h('td', {}, k.allowed_origins ? k.allowed_origins.join(', ') : 'any'),
          h('td', {}, when(k.created_at)),
          h('td', {}, k.revoked_at ? when(k.revoked_at) : 'no'),
          h('td', {}, k.scope === 'storefront' && !k.revoked_at ? revokeButton(k) : '—')))));
    } catch (e) { fill(list, notice(inWords(e), true)); }
  };
  const revokeButton = (k) => {
    const button = h('button', { type: 'button', class: 'danger', 'aria-label': `Revoke ${k.label || k.key_id}` }, 'Revoke');
    button.addEventListener('click', async () => {
      const name = k.label ? `“${k.label}”` : k.key_id;
      if (!(await confirmed(`Revoke the storefront key ${name}? Pages that use it stop working at once.`, 'Revoke key'))) return;
      try {
        await call('/v1/key/revoke', { key_id: k.key_id });
        stopPreview();
        said(notice(`Revoked ${name}: it is refused from now on.`));
        announce('Key revoked.');
        await refresh();
      } catch (e) { said(notice(inWords(e), true)); }
    });
    return button;
  };
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    labelError.textContent = '';
    originsError.textContent = '';
    create.disabled = true;
    try {
      const answer = await call('/v1/key/create', { label: label.value, allowed_origins: typedOrigins(origins.value) });
      label.value = '';
      origins.value = '';
      await made(answer, result);
      announce('Storefront key made.');
      await refresh();
    } catch (e) {
      const field = e.field || '';
      const control = field.startsWith('allowed_origins') ? origins : field === 'label' ? label : null;
      if (control) {
        (control === origins ? originsError : labelError).textContent = inWords(e);
        control.focus();
      } else {
        said(notice(inWords(e), true));
      }
    }
    create.disabled = false;
  });
  refresh();
  return stopPreview;
}
