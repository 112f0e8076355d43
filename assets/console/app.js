// The console's frame (CONTRACT §21): signing in and out, and the sections by the address's
// fragment (#locations, #locations/ID, #events, #webhooks, #webhooks/ID), so that the browser's
// back button returns to the previous section. Nothing here talks to the service but api.js.

import { call, forget, inWords, remember, signedIn, ApiError } from './api.js';
import { announce } from './dom.js';
import { showEvents } from './events.js';
import { showLocation, showLocations } from './locations.js';
import { showWebhook, showWebhooks } from './webhooks.js';

const signIn = document.getElementById('sign-in');
const form = document.getElementById('sign-in-form');
const keyInput = document.getElementById('api-key');
const signInError = document.getElementById('sign-in-error');
const nav = document.getElementById('nav');
const signOut = document.getElementById('sign-out');
const view = document.getElementById('view');
const main = document.getElementById('main');
let leave = () => {};

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
        ? 'This API key is unknown or was revoked. Check it and try again.'
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
  const [section, id] = location.hash.replace(/^#/, '').split('/').map(decodeURIComponent);
  for (const link of nav.querySelectorAll('a')) {
    if (link.getAttribute('href') === `#${section}`) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const show = {
    locations: () => (id ? showLocation(view, id) : showLocations(view)),
    events: () => showEvents(view),
    webhooks: () => (id ? showWebhook(view, id) : showWebhooks(view)),
  }[section];
  if (!show) {
    location.replace('#locations');
    return;
  }
  leave = show() || (() => {});
  const title = { locations: 'Locations', events: 'Events', webhooks: 'Webhooks' }[section];
  document.title = `${title} · Storefront console`;
  main.focus({ preventScroll: true });
}

route();
