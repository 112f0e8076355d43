// The console's frame: signing in and out, and the sections by the address's fragment
// (#locations, #locations/ID, #events, #webhooks/ID, ...), so that the browser's back button
// returns to the previous section. Nothing here talks to the service but api.js.

import { call, forget, inWords, remember, signedIn, ApiError, UNKNOWN_KEY } from './api.js';
import { announce, h } from './dom.js';
import { showEvents } from './events.js';
import { showImports } from './imports.js';
import { showKeys } from './keys.js';
import { forgetNames } from './names.js';
import { forgetLocations, showLocation, showLocationForm, showLocations } from './locations.js';
import { showWebhook, showWebhooks } from './webhooks.js';

// Every section, in the navigation's order: its fragment, its title, how it is shown (with the
// id and the action after the slashes, if any), and what it remembers that signing out must
// forget. A new section is one entry here.
const SECTIONS = [
  { id: 'locations', title: 'Locations', forget: forgetLocations,
    show: (view, id, action) => {
      if (id === 'new') return showLocationForm(view);
      if (action === 'edit') return showLocationForm(view, id);
      return id ? showLocation(view, id) : showLocations(view);
    } },
  { id: 'import', title: 'Import', show: (view) => showImports(view) },
  { id: 'events', title: 'Events', show: (view) => showEvents(view) },
  { id: 'webhooks', title: 'Webhooks', show: (view, id) => (id ? showWebhook(view, id) : showWebhooks(view)) },
  { id: 'keys', title: 'Keys', show: (view) => showKeys(view) },
];

const signIn = document.getElementById('sign-in');
const form = document.getElementById('sign-in-form');
const keyInput = document.getElementById('api-key');
const signInError = document.getElementById('sign-in-error');
const nav = document.getElementById('nav');
const signOut = document.getElementById('sign-out');
const view = document.getElementById('view');
const main = document.getElementById('main');
let leave = () => {};
nav.querySelector('ul').replaceChildren(...SECTIONS.map((s) => h('li', {}, h('a', { href: `#${s.id}` }, s.title))));

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const presented = keyInput.value.trim();
  signInError.textContent = '';
  if (!presented) {
    signInError.textContent = 'Enter your API key.';
    keyInput.focus();
    return;
  }
  try {
    // A full key may read the merchant's locations; a storefront key may not (403).
    await call('/v1/location/list', { pagination: { limit: 1 } }, { presented });
  } catch (e) {
    signInError.textContent = e instanceof ApiError && e.status === 403
      ? 'This is a storefront key: it can only search pickup points for buyers, not manage anything. Sign in with a full key.'
      : e instanceof ApiError && e.status === 401
        ? `${UNKNOWN_KEY} Check it and try again.`
        : inWords(e);
    keyInput.focus();
    return;
  }
  remember(presented);
  keyInput.value = '';
  if (!location.hash || location.hash === '#') location.hash = '#locations';
  route();
});

signOut.addEventListener('click', () => {
  forget();
  leave();
  leave = () => {};
  for (const section of SECTIONS) if (section.forget) section.forget();
  forgetNames();
  view.replaceChildren();
  history.replaceState(null, '', location.pathname);
  route();
  announce('Signed out.');
});

window.addEventListener('hashchange', route);

function route() {
  leave();
  leave = () => {};
  const signed = signedIn();
  signIn.hidden = signed;
  nav.hidden = !signed;
  signOut.hidden = !signed;
  view.hidden = !signed;
  if (!signed) {
    document.title = 'Sign in · Storefront console';
    return;
  }
  const [section, id, action] = location.hash.replace(/^#/, '').split('/').map(decodeURIComponent);
  for (const link of nav.querySelectorAll('a')) {
    if (link.getAttribute('href') === `#${section}`) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const shown = SECTIONS.find((s) => s.id === section);
  if (!shown) {
    location.replace('#locations');
    return;
  }
  const left = shown.show(view, id, action);
  leave = typeof left === 'function' ? left : () => {};
  document.title = `${shown.title} · Storefront console`;
  main.focus({ preventScroll: true });
}

route();
