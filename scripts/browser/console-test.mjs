// The merchant's console (CONTRACT §21) in headless Chromium, against the real server over the
// demo database (its data made through the create and change paths) and data made here through
// the API:
// - signing in: an unknown key and a storefront key refused in words; a full key signs in; the key
//   never in localStorage, a cookie or a URL; Sign out forgets it;
// - Locations: the table equals the API's pages, forwards and back, by status and by Find (a piece
//   of a name in another letter case); a quarantined
//   location names its neighbour and draws both; Archive and Restore change the stored location
//   (read back through the API); a stale version shows the conflict in words;
// - Add location and Edit: the form built from the OpenAPI document; a save with three errors
//   stores nothing, each message the description of its control, the first focused, the typed
//   values kept; a pickup point added and read back through the API field by field; Edit sends
//   the version shown; a stale edit shows the record as it now is and keeps the edits; the mapping
//   of error paths to controls;
// - Events: a location created through the API appears within 5 s, without a reload;
// - Webhooks: an endpoint added (its secret shown once), a test event received here and its
//   signature verified, the list saying it is failing (since when, the last error), failures
//   filtered by Outcome and named by their events' locations, one resent, a recovery counted, an
//   endpoint deleted after the confirmation; the back button returns to the previous section;
// - Import: Check, then Import, of examples/locations.xlsx: the progress bar, the counts and the
//   failed rows equal to the API's, the imports listed;
// - Keys: the table equal to the API's list; a key's errors at their controls; a storefront key
//   made for a page of another port, its snippet pasted into such a page and a point picked there;
//   a key for any page previewed here; Revoke after the confirmation, and the key is refused 401;
// - Sign out, then in as another merchant: nothing of the first on any section;
// - every request only to the service; the CSP on every file of the console and no violation;
//   axe-core finds no WCAG 2.1 A/AA violation in any section at 1280 and 320 px; no sideways
//   scrolling at 320 px; Tab reaches every control with a visible focus; screenshots of each
//   section at both widths; everything it loads under 100 KB gzipped.
// Usage: IMPORT_FILE=examples/locations.xlsx OTHER_KEY=<another merchant's key>
//        node console-test.mjs BASE_URL FULL_KEY STOREFRONT_KEY SCREENSHOT_DIR
import crypto from 'node:crypto';
import http from 'node:http';
import { gzipSync } from 'node:zlib';
import { axe, checker, fitsWidth, tabReachesEverything } from './checks.mjs';
import { launch } from './chromium.mjs';

const [base, key, storefrontKey, shots] = process.argv.slice(2);
const { check } = checker('console browser test');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function api(path, body, as = key) {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${as}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  check(response.status === 200, `the API's ${path} answered ${response.status}`);
  return response.json();
}

// A receiver here: records each request; answers 500 while `broken`.
const received = [];
let broken = false;
const receiver = http.createServer((request, response) => {
  let body = '';
  request.on('data', (chunk) => { body += chunk; });
  request.on('end', () => {
    received.push({ headers: request.headers, body });
    response.writeHead(broken ? 500 : 204);
    response.end();
  });
});
await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const hookUrl = `http://127.0.0.1:${receiver.address().port}/hooks`;

// A shop's page on another port, holding whatever snippet it is given (as a shop pastes it).
let shopHtml = '';
const shop = http.createServer((request, response) => {
  response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  response.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head><body>
<main><h1>Checkout</h1>${shopHtml}</main></body></html>`);
});
await new Promise((resolve) => shop.listen(0, '127.0.0.1', resolve));
const shopOrigin = `http://127.0.0.1:${shop.address().port}`;

function signedBy(got, secret) {
  const raw = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const signed = `${got.headers['webhook-id']}.${got.headers['webhook-timestamp']}.${got.body}`;
  const expected = `v1,${crypto.createHmac('sha256', raw).update(signed).digest('base64')}`;
  return got.headers['webhook-signature'].split(' ').includes(expected);
}

function location(n, lat, lon) {
  return {
    merchant_location_id: `console-${n}-${Date.now()}`, location_types: ['PICKUP_POINT'], name: `Console point ${n}`,
    address_tail: '101000, Russia, Moscow, Tverskaya street, 1', latitude: lat, longitude: lon,
    provider_id: 'PROVIDER_3', provider_location_id: `PVZ-${n}`, pickup_point_type: 'PICKUP_POINT',
    payment_methods: ['CARD'], storage_period_days: 7, pickup_services: ['FITTING'],
    limits: { length: 100, width: 60, height: 60, weight: 30 },
    working_schedule: [{ day: 'MONDAY', schedule: { time_start: '09:00', time_end: '18:00' } }],
    is_accepts_returns: true,
  };
}

// The console's files, gzipped: at most 100 KB in all.
const files = ['', 'console.css', 'app.js', 'api.js', 'dom.js', 'plan.js', 'locations.js', 'names.js', 'events.js',
  'webhooks.js', 'imports.js', 'keys.js', 'form.js'];
let gzipped = 0;
for (const file of files) {
  const response = await fetch(`${base}/console/${file}`);
  check(response.status === 200, `/console/${file} answered ${response.status}`);
  const policy = response.headers.get('content-security-policy') || '';
  check(policy.includes("default-src 'self'") && policy.includes("frame-ancestors 'none'")
    && !policy.includes('unsafe-inline') && !policy.includes('unsafe-eval'), `/console/${file}: CSP ${policy}`);
  check(response.headers.get('x-content-type-options') === 'nosniff', `/console/${file}: no nosniff`);
  check(response.headers.get('referrer-policy') === 'no-referrer', `/console/${file}: no Referrer-Policy`);
  gzipped += gzipSync(Buffer.from(await response.arrayBuffer()), { level: 9 }).length;
}
check(gzipped <= 100 * 1024, `the console weighs ${gzipped} bytes gzipped`);

const browser = await launch();
const outside = [];
const keyInUrl = [];
const answers = [];
function watch(page) {
  const problems = [];
  page.on('request', (r) => {
    if (new URL(r.url()).origin !== base) outside.push(r.url());
    if (r.url().includes(key)) keyInUrl.push(r.url());
  });
  page.on('response', (r) => {
    if (new URL(r.url()).pathname.startsWith('/console/')) answers.push([r.url(), r.headers()['content-security-policy']]);
  });
  page.on('console', (m) => { if (m.type() === 'error' && !/status of (4\d\d|5\d\d)/.test(m.text())) problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(String(e)));
  return problems;
}

async function widthChecks(page, what, width) {
  await axe(page, `${what} at ${width} px`, check);
  await fitsWidth(page, what, width, check);
  await page.screenshot({ path: `${shots}/console-${what.toLowerCase()}-${width}.png`, fullPage: width === 320 });
}

const heading = (page) => page.locator('main h1:visible').first().textContent();
const rowsOf = (page) => page.locator('table tbody tr').evaluateAll((rows) => rows.map((r) => [...r.cells].slice(0, 3).map((c) => c.textContent.trim())));

try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const problems = watch(page);
  await page.goto(`${base}/console/`);
  check(await page.getAttribute('html', 'lang') === 'en', 'lang is not set');
  await widthChecks(page, 'Sign-in', 1280);

  // ---- signing in -------------------------------------------------------------------------
  const signIn = async (presented) => {
    await page.getByLabel('API key').fill(presented);
    await page.getByRole('button', { name: 'Sign in' }).click();
  };
  await signIn('sf_000000000000000000000000_not-a-key');
  await page.getByText('unknown or was revoked').waitFor();
  await signIn(storefrontKey);
  await page.getByText('This is a storefront key').waitFor();
  await signIn(key);
  await page.getByRole('navigation').waitFor();
  check(await heading(page) === 'Locations', `signed in, the page shows ${await heading(page)}`);

  // ---- Locations: the API's pages, forwards and back; by status -----------------------------
  const apiPage = async (filter, cursor) => api('/v1/location/list', { filter, pagination: cursor ? { limit: 20, cursor } : { limit: 20 } });
  const asRows = (page1) => page1.locations.map((l) => [l.name, l.status, String(l.version)]);
  const first = await apiPage(null);
  await page.locator('table tbody tr').first().waitFor();
  check(JSON.stringify(await rowsOf(page)) === JSON.stringify(asRows(first)), 'the first page differs from the API\'s');
  check(await page.locator('svg.plan circle').count() === first.locations.length, 'the plan does not draw the listed points');
  await widthChecks(page, 'Locations', 1280);
  await tabReachesEverything(page, 'Locations', check);
  const second = await apiPage(null, first.pagination.next_cursor);
  await page.getByRole('button', { name: 'Next page' }).click();
  await page.getByText(`Locations 21 to 40 of ${first.pagination.total}.`).waitFor();
  check(JSON.stringify(await rowsOf(page)) === JSON.stringify(asRows(second)), 'the second page differs from the API\'s');
  await page.getByRole('button', { name: 'Previous page' }).click();
  await page.getByText(`Locations 1 to 20 of ${first.pagination.total}.`).waitFor();
  check(JSON.stringify(await rowsOf(page)) === JSON.stringify(asRows(first)), 'back on the first page, it differs');
  // Find: a piece of a name, in another letter case, finds what the API finds.
  const piece = first.locations[3].name.slice(2, 9).toUpperCase();
  const byText = await apiPage({ text: piece });
  check(byText.locations.length > 0 && byText.pagination.total === null, `the API's text page: ${JSON.stringify(byText.pagination)}`);
  await page.getByLabel('Find').fill(piece);
  await page.getByRole('button', { name: 'Find', exact: true }).click();
  await page.getByText(`with “${piece}”.`).waitFor();
  check(JSON.stringify(await rowsOf(page)) === JSON.stringify(asRows(byText)), 'the found locations differ from the API\'s');
  await page.getByLabel('Find').fill('');
  await page.getByRole('button', { name: 'Find', exact: true }).click();
  await page.getByText(`Locations 1 to 20 of ${first.pagination.total}.`).waitFor();
  await page.getByLabel('Status').selectOption('ARCHIVED');
  const archived = await apiPage({ status: 'ARCHIVED' });
  await page.getByText(`of ${archived.pagination.total}.`).waitFor();
  check(JSON.stringify(await rowsOf(page)) === JSON.stringify(asRows(archived)), 'the archived ones differ');
  check(await page.locator('svg.plan circle').count() === archived.locations.length, 'the plan does not draw the listed points');
  await page.getByLabel('Status').selectOption('QUARANTINE');
  const quarantined = (await apiPage({ status: 'QUARANTINE' })).locations[0];
  check(quarantined, 'the demo has no location in quarantine');
  await page.getByText('Locations 1 to 1 of 1.').waitFor();

  // A quarantined location: its issue, its neighbour by name, both on the plan.
  await page.getByRole('link', { name: quarantined.name }).click();
  await page.getByRole('heading', { level: 1, name: quarantined.name }).waitFor();
  const neighbourId = quarantined.issue.message.match(/[0-9a-f-]{36}/)[0];
  const neighbour = (await api('/v1/location/list', { filter: { location_ids: [neighbourId] } })).locations[0];
  await page.getByRole('link', { name: neighbour.name }).waitFor();
  check(await page.locator('svg.plan circle').count() === 2, 'the plan does not draw the location and its neighbour');
  // Said in words a person acts on: how far, the neighbour's address, what can be done; no id, no code.
  const rad = Math.PI / 180;
  const haversine = 2 * 6371008.8 * Math.asin(Math.sqrt(Math.sin(((neighbour.latitude - quarantined.latitude) * rad) / 2) ** 2
    + Math.cos(quarantined.latitude * rad) * Math.cos(neighbour.latitude * rad)
    * Math.sin(((neighbour.longitude - quarantined.longitude) * rad) / 2) ** 2));
  const why = await page.locator('h2:has-text("Why it is in quarantine") + div').textContent();
  check(why.includes(`It stands ${Math.round(haversine)} m from ${neighbour.name}`) && why.includes(neighbour.address_tail)
    && why.includes('correct it with Edit') && why.includes('archive one of the two') && why.includes('approve it'),
  `the quarantine is said as: ${why}`);
  check(!/[0-9a-f]{8}-[0-9a-f]{4}-/.test(why) && !why.includes('STOREFRONT_RULE_VIOLATION'), `an id or a code in: ${why}`);
  await widthChecks(page, 'Location', 1280);

  // Archive, then Restore: the stored location changes; a stale version is told in words.
  const target = first.locations.find((l) => l.status === 'ACTIVE');
  await page.goto(`${base}/console/#locations/${target.location_id}`);
  await page.getByRole('button', { name: 'Archive' }).click();
  await page.getByText(`Archived: it is now ARCHIVED, version ${target.version + 1}.`).waitFor();
  const stored = async () => (await api('/v1/location/list', { filter: { location_ids: [target.location_id] } })).locations[0];
  check((await stored()).status === 'ARCHIVED', 'Archive did not archive the stored location');
  await page.getByRole('button', { name: 'Restore' }).click();
  await page.getByText(/Restored: it is now ACTIVE/).waitFor();
  check((await stored()).status === 'ACTIVE', 'Restore did not restore the stored location');
  const version = (await stored()).version;
  await api('/v1/location/archive', { locations: [{ location_id: target.location_id }] });
  await api('/v1/location/restore', { locations: [{ location_id: target.location_id }] });
  await page.getByRole('button', { name: 'Archive' }).click();
  await page.getByText('This location changed while you were looking at it').waitFor();
  check((await stored()).version === version + 2, 'a stale Archive changed the location');
  check(await page.getByRole('button', { name: 'Archive' }).count() === 1, 'the location is not shown as it now is');

  // ---- Add location and Edit ------------------------------------------------------------------
  const keys = await page.evaluate(async () => {
    const { controlKey } = await import('/console/form.js');
    const kinds = { working_schedule: 'week', individual_schedule: 'dates', limits: 'group', payment_methods: 'words', name: 'text' };
    const sent = { working_schedule: [{ day: 'MONDAY' }, { day: 'FRIDAY' }], individual_schedule: [{ date: 'x' }] };
    return ['working_schedule[1].schedule.time_end', 'working_schedule[1].day', 'working_schedule', 'working_schedule[5].day',
      'individual_schedule[0].is_works', 'individual_schedule[0].schedule.break', 'limits.weight', 'payment_methods[2]', 'name']
      .map((path) => controlKey(`locations[0].${path}`, sent, kinds));
  });
  check(JSON.stringify(keys) === JSON.stringify(['working_schedule.FRIDAY.time_end', 'working_schedule.FRIDAY', 'working_schedule',
    'working_schedule', 'individual_schedule.0.is_works', 'individual_schedule.0.break', 'limits.weight', 'payment_methods', 'name']),
  `error paths map to ${JSON.stringify(keys)}`);
  const sentBodies = [];
  page.on('request', (r) => { if (/\/v1\/location\/(create|update)$/.test(r.url())) sentBodies.push(JSON.parse(r.postData())); });
  await page.goto(`${base}/console/#locations`);
  await page.getByRole('button', { name: 'Add location' }).click();
  await page.getByRole('heading', { level: 1, name: 'Add location' }).waitFor();
  const uid = `form-${Date.now()}`;
  const monday = page.getByRole('group', { name: 'Monday' });
  await page.getByLabel('Your id').fill(uid);
  await page.getByLabel('Pickup point', { exact: true }).check();
  await page.getByLabel('Address').fill('101000, Russia, Moscow, Tverskaya street, 7');
  await page.getByLabel('Latitude').fill('91');
  await page.getByLabel('Longitude').fill('37.6102');
  await page.getByLabel('Pickup point type').selectOption('PICKUP_POINT');
  await page.getByLabel('Card', { exact: true }).check();
  await page.getByLabel('Storage period, days').fill('7');
  for (const [label, value] of [['Length, cm', '60'], ['Width, cm', '40'], ['Height, cm', '40'], ['Weight, kg', '15']]) {
    await page.getByLabel(label).fill(value);
  }
  await monday.getByLabel('Open on Monday').check();
  await monday.getByLabel('Opens').fill('09:00');
  await monday.getByLabel('Closes').fill('08:00');
  await page.getByLabel('Accepts returns').check();
  await widthChecks(page, 'Location-form', 1280);
  await tabReachesEverything(page, 'Location-form', check);
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByText(/^Nothing was saved: 3 things to fix/).waitFor();
  const failedSave = (await api('/v1/location/create', { locations: [sentBodies.at(-1).locations[0]] })).locations[0];
  check(failedSave.status === 'FAILED' && failedSave.errors.length === 3, `the same item through the API: ${JSON.stringify(failedSave)}`);
  const controlOf = { 'locations[0].name': 'f-name', 'locations[0].latitude': 'f-latitude',
    'locations[0].working_schedule[0].schedule.time_end': 'f-working_schedule-MONDAY-time_end' };
  for (const e of failedSave.errors) {
    const id = controlOf[e.field];
    check(id, `an error the test did not expect: ${e.field}`);
    const described = await page.locator(`#${id}`).evaluate((el) => el.getAttribute('aria-describedby').split(' ')
      .map((ref) => document.getElementById(ref).textContent).join(' '));
    check(described.includes(e.message), `${e.field}: the control says "${described}", the API "${e.message}"`);
  }
  check(await page.evaluate(() => document.activeElement.id) === 'f-name', 'the first error\'s control is not focused');
  check(await page.getByLabel('Latitude').inputValue() === '91', 'the typed latitude was lost');
  check((await api('/v1/location/list', { filter: { merchant_location_ids: [uid] } })).locations.length === 0, 'a failed save stored');
  await page.getByLabel('Name', { exact: true }).fill('Form point');
  await page.getByLabel('Latitude').fill('55.7601');
  await monday.getByLabel('Closes').fill('21:00');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('heading', { level: 1, name: 'Form point' }).waitFor();
  await page.getByText('Saved.', { exact: true }).waitFor();
  const added = (await api('/v1/location/list', { filter: { merchant_location_ids: [uid] } })).locations[0];
  const want = { merchant_location_id: uid, location_types: ['PICKUP_POINT'], name: 'Form point',
    address_tail: '101000, Russia, Moscow, Tverskaya street, 7', latitude: 55.7601, longitude: 37.6102,
    pickup_point_type: 'PICKUP_POINT', payment_methods: ['CARD'], storage_period_days: 7,
    limits: { length: 60, width: 40, height: 40, weight: 15 }, comment: null, instruction: null, pickup_services: null,
    working_schedule: [{ day: 'MONDAY', schedule: { time_start: '09:00', time_end: '21:00', break: null, shipping_cutoff: null } }],
    individual_schedule: null, is_accepts_returns: true, provider_id: null, provider_location_id: null };
  for (const [field, value] of Object.entries(want)) {
    check(JSON.stringify(added[field]) === JSON.stringify(value), `${field}: stored ${JSON.stringify(added[field])}, typed ${JSON.stringify(value)}`);
  }
  // Edit: the version shown is the one sent.
  await page.getByRole('button', { name: 'Edit' }).click();
  await page.getByRole('heading', { level: 1, name: 'Edit Form point' }).waitFor();
  check(await page.getByLabel('Name', { exact: true }).inputValue() === 'Form point', 'the form is not filled with the record');
  check(await monday.getByLabel('Opens').inputValue() === '09:00', 'the weekly hours are not filled');
  await page.getByLabel('Name', { exact: true }).fill('Form point renamed');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByText('Saved: version 2.').waitFor();
  const update = sentBodies.at(-1).locations[0];
  check(update.expected_version === 1 && update.location_id === added.location_id, `the update sent ${JSON.stringify(update)}`);
  // A stale edit: the record as it now is, the edits kept, saved again on purpose.
  await page.getByRole('button', { name: 'Edit' }).click();
  await page.getByRole('heading', { level: 1, name: 'Edit Form point renamed' }).waitFor();
  const current = (await api('/v1/location/list', { filter: { location_ids: [added.location_id] } })).locations[0];
  const content = Object.fromEntries(Object.entries(current).filter(([k]) => !['status', 'issue', 'version', 'created_at', 'updated_at'].includes(k)));
  await api('/v1/location/update', { locations: [{ ...content, name: 'Changed elsewhere' }] });
  await page.getByLabel('Comment').fill('Entrance from the yard');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByText('This location changed since you opened it').waitFor();
  check((await page.locator('.layout pre').textContent()).includes('Changed elsewhere'), 'the record as it now is is not shown');
  check(await page.getByLabel('Comment').inputValue() === 'Entrance from the yard', 'the edits were lost');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByText('Saved: version 4.').waitFor();
  const resaved = (await api('/v1/location/list', { filter: { location_ids: [added.location_id] } })).locations[0];
  check(resaved.name === 'Form point renamed' && resaved.comment === 'Entrance from the yard', 'the second save did not store the edits');

  // ---- Events: a location created through the API appears within 5 s -----------------------
  await page.getByRole('link', { name: 'Events' }).click();
  await page.getByRole('heading', { level: 1, name: 'Events' }).waitFor();
  await page.locator('table tbody tr').first().waitFor();
  const created = (await api('/v1/location/create', { locations: [location(1, 55.70, 37.50)] })).locations[0];
  await page.getByRole('link', { name: 'Console point 1' }).first().waitFor({ timeout: 5000 });
  const top = await page.locator('table tbody tr').first().textContent();
  check(top.includes('location.created') && top.includes('Console point 1'), `the newest event is not at the top: ${top}`);
  check(created.status === 'ACTIVE', 'the created location is not ACTIVE');
  await widthChecks(page, 'Events', 1280);
  await tabReachesEverything(page, 'Events', check);
  await page.goBack();
  await page.getByRole('heading', { level: 1, name: 'Form point renamed' }).waitFor();
  await page.goForward();
  await page.getByRole('heading', { level: 1, name: 'Events' }).waitFor();

  // ---- Webhooks ----------------------------------------------------------------------------
  await page.getByRole('link', { name: 'Webhooks' }).click();
  await page.getByLabel('Endpoint URL').fill(hookUrl);
  await page.getByRole('button', { name: 'Add endpoint' }).click();
  const secret = (await page.locator('.secret code').textContent()).trim();
  check(/^whsec_/.test(secret), `no secret shown: ${secret}`);
  check(await page.getByRole('button', { name: 'Copy secret' }).count() === 1, 'no way to copy the secret');
  await page.getByRole('button', { name: 'Send test event' }).first().click();
  await page.getByText(/Test event delivered: the receiver answered 204/).waitFor();
  const test = received.at(-1);
  check(JSON.parse(test.body).type === 'webhook.test', `the receiver got ${test.body}`);
  check(signedBy(test, secret), 'the test event is not signed with the secret shown');
  const since = new Date(Date.now() - 1000);
  broken = true;
  await api('/v1/location/create', { locations: [location(2, 55.71, 37.51), location(3, 55.72, 37.52)] });
  const { webhooks } = await api('/v1/webhook/list', {});
  const hook = webhooks.find((w) => w.url === hookUrl);
  for (let i = 0; i < 100; i += 1) {
    const log = await api('/v1/webhook/deliveries', { webhook_id: hook.webhook_id, filter: { outcome: 'failed' } });
    if (log.deliveries.length >= 2) break;
    await sleep(100);
  }
  // The list says the endpoint is failing, since when, and the last error in words.
  await page.reload();
  const failingNote = page.getByRole('article', { name: hookUrl }).locator('.failing');
  await failingNote.waitFor();
  const failingSaid = await failingNote.textContent();
  check(/^Deliveries failing since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC[+-]\d\d:\d\d\. The last error: answered 500 Internal Server Error\.$/
    .test(failingSaid), `the endpoint's list says: ${failingSaid}`);
  await widthChecks(page, 'Webhooks', 1280);
  await tabReachesEverything(page, 'Webhooks', check);
  await page.getByRole('link', { name: hookUrl }).click();
  await page.getByLabel('Outcome').waitFor();
  await page.getByLabel('Outcome').selectOption('failed');
  const failed = (await api('/v1/webhook/deliveries', { webhook_id: hook.webhook_id, filter: { outcome: 'failed' } })).deliveries;
  await page.waitForFunction((n) => document.querySelectorAll('table tbody tr').length === n, failed.length);
  const outcomes = await page.locator('table tbody tr td:nth-child(4)').allTextContents();
  check(outcomes.every((o) => o === 'failed'), `the Outcome filter shows ${outcomes}`);
  // Each delivery names its event's location, linked to it.
  const named = await page.locator('table tbody tr td:nth-child(2)').allTextContents();
  check(named.every((e) => /^Console point [23] \(location\.created, #\d+\)$/.test(e)), `the deliveries name ${named}`);
  check(await page.locator('table tbody tr td:nth-child(2) a[href^="#locations/"]').count() === failed.length,
    'the deliveries do not link their locations');
  broken = false;
  await page.getByRole('button', { name: 'Resend' }).first().click();
  await page.getByText(/Resent evt_[0-9a-f]+: delivered/).waitFor();
  await page.getByLabel('Since').fill(`${since.getFullYear()}-${String(since.getMonth() + 1).padStart(2, '0')}-`
    + `${String(since.getDate()).padStart(2, '0')}T${String(since.getHours()).padStart(2, '0')}:`
    + `${String(since.getMinutes()).padStart(2, '0')}:${String(since.getSeconds()).padStart(2, '0')}`);
  await page.getByRole('button', { name: 'Recover' }).click();
  await page.getByText(/\d+ events? recovered since/).waitFor();
  const said = await page.getByText(/\d+ events? recovered since/).textContent();
  check(/^[12] events? recovered/.test(said), `the recovery said: ${said}`);
  await widthChecks(page, 'Deliveries', 1280);
  await tabReachesEverything(page, 'Deliveries', check);

  // Delete, after the confirmation.
  await page.getByRole('link', { name: 'All endpoints' }).click();
  await page.getByRole('button', { name: 'Delete' }).first().click();
  await page.getByRole('dialog').waitFor();
  await page.getByRole('button', { name: 'Delete endpoint' }).click();
  await page.getByText(`Deleted: ${hookUrl}.`).waitFor();
  check((await api('/v1/webhook/list', {})).webhooks.every((w) => w.url !== hookUrl), 'Delete did not delete');

  // ---- Import: Check, then Import, of the sample workbook --------------------------------------
  await page.getByRole('link', { name: 'Import' }).click();
  await page.getByRole('heading', { level: 1, name: 'Import' }).waitFor();
  const imported = async (dryRun, file = process.env.IMPORT_FILE) => {
    await page.getByLabel('File', { exact: true }).setInputFiles(file);
    await page.getByRole('button', { name: dryRun ? 'Check' : 'Import', exact: true }).click();
    await page.getByText(dryRun ? /^Checked: / : /^Imported: /).waitFor({ timeout: 60000 });
    const last = (await api('/v1/import/list', { pagination: { limit: 1 } })).imports[0];
    check(last.dry_run === dryRun && last.status === 'SUCCEEDED', `the last import: ${JSON.stringify(last)}`);
    const c = last.counts;
    const said = await page.getByText(dryRun ? /^Checked: / : /^Imported: /).textContent();
    check(said.includes(`${c.created} created, ${c.updated} updated, ${c.unchanged} unchanged, ${c.quarantined} quarantined, `
      + `${c.archived} archived, ${c.failed} failed (${last.rows_total} rows)`), `the counts said: ${said}`);
    check(await page.locator('progress').evaluate((p) => p.value === p.max), 'the progress bar did not reach the end');
    const failedRows = (await api('/v1/import/rows', { import_id: last.import_id, filter: { outcome: 'failed' } })).rows;
    const expected = failedRows.flatMap((r) => r.errors.map((e) => [String(r.row), e.field || '—', e.message]));
    const shown = await page.locator('.table-wrap[aria-label="Rows that did not succeed"] tbody tr')
      .evaluateAll((rows) => rows.map((r) => [r.cells[0].textContent, r.cells[2].textContent, r.cells[3].textContent]));
    check(JSON.stringify(shown) === JSON.stringify(expected), `failed rows ${JSON.stringify(shown)} != ${JSON.stringify(expected)}`);
    return last;
  };
  const checked = await imported(true);
  // A file with rows that fail: each error in the table, at its row and column.
  const failing = await imported(true, { name: 'failing.csv', mimeType: 'text/csv', buffer: Buffer.from(
    'merchant_location_id,location_types,name,latitude,longitude,is_accepts_returns\n'
    + 'bad-1,PICKUP_POINT,,55.75,37.61,true\n'
    + 'bad-2,PICKUP_POINT,Too far north,91,37.61,true\n') });
  check(failing.counts.failed === 2, `the failing file: ${JSON.stringify(failing.counts)}`);
  await widthChecks(page, 'Import', 1280);
  await tabReachesEverything(page, 'Import', check);
  const real = await imported(false);
  check(JSON.stringify(real.counts) === JSON.stringify(checked.counts), 'the check and the import differ');
  const listedImports = await page.locator('.table-wrap[aria-label="Your imports"] tbody tr').count();
  check(listedImports >= 2, `the imports list shows ${listedImports} rows`);

  // ---- Keys: the table, errors at their controls, a key for a shop's page, a preview, Revoke -
  await page.getByRole('link', { name: 'Keys' }).click();
  await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor();
  const keyRows = () => page.locator('.table-wrap[aria-label="Keys"] tbody tr')
    .evaluateAll((rows) => rows.map((r) => [r.cells[0].textContent, r.cells[1].textContent]));
  await page.locator('.table-wrap[aria-label="Keys"] tbody tr').first().waitFor();
  const apiKeys = (await api('/v1/key/list', {})).keys;
  check(JSON.stringify(await keyRows()) === JSON.stringify(apiKeys.map((k) => [k.label || '—', k.scope])),
    'the keys differ from the API\'s');
  await page.getByLabel('Allowed origins').fill('https://Shop.example/');
  await page.getByRole('button', { name: 'Create storefront key' }).click();
  await page.getByText('label must be 1 to 100 characters').waitFor();
  const description = async (label) => page.getByLabel(label, { exact: true }).evaluate((el) => el.getAttribute('aria-describedby')
    .split(' ').map((id) => document.getElementById(id).textContent).join(' '));
  check((await description('Label')).includes('label must be 1 to 100 characters'), 'the label\'s error is not its description');
  check(await page.evaluate(() => document.activeElement.id) === 'key-label', 'the focus is not on the label');
  await page.getByLabel('Label').fill('Shop page');
  await page.getByRole('button', { name: 'Create storefront key' }).click();
  await page.getByText('(field: allowed_origins[0])').waitFor();
  check((await description('Allowed origins')).includes('allowed_origins[0]'), 'the origins\' error is not their description');
  check(await page.getByLabel('Label').inputValue() === 'Shop page', 'the typed label was lost');
  check((await api('/v1/key/list', {})).keys.length === apiKeys.length, 'a refused key was stored');
  await page.getByLabel('Allowed origins').fill(shopOrigin);
  await page.getByRole('button', { name: 'Create storefront key' }).click();
  await page.locator('pre.snippet').waitFor();
  const shopKey = (await page.locator('.notice .secret code').textContent()).trim();
  check(await page.getByRole('button', { name: 'Copy key' }).count() === 1, 'no way to copy the key');
  check(await page.getByRole('button', { name: 'Copy HTML' }).count() === 1, 'no way to copy the snippet');
  shopHtml = await page.locator('pre.snippet code').textContent();
  check(shopHtml.includes(shopKey) && shopHtml.includes(`${base}/widget/pickup.js`), `the snippet: ${shopHtml}`);
  const made = (await api('/v1/key/list', {})).keys.find((k) => k.label === 'Shop page');
  check(made && made.scope === 'storefront' && JSON.stringify(made.allowed_origins) === JSON.stringify([shopOrigin]),
    `the key made: ${JSON.stringify(made)}`);
  const shopPage = await context.newPage();
  const shopProblems = [];
  shopPage.on('pageerror', (e) => shopProblems.push(String(e)));
  await shopPage.goto(`${shopOrigin}/`);
  await shopPage.evaluate(() => document.getElementById('pickup').addEventListener('storefront:pickup', (e) => {
    window.picked = e.detail;
  }));
  await shopPage.getByRole('option').first().click();
  const picked = await shopPage.waitForFunction(() => window.picked && window.picked.location_id);
  check(/^[0-9a-f-]{36}$/.test(await picked.jsonValue()), 'no point picked on the shop\'s page');
  check(shopProblems.length === 0, `the shop's page: ${shopProblems.join(' | ')}`);
  await shopPage.close();
  // A key for any page: the widget works right here.
  await page.getByLabel('Label').fill('Any page');
  await page.getByRole('button', { name: 'Create storefront key' }).click();
  await page.locator('.preview').getByRole('option').first().waitFor();
  await widthChecks(page, 'Keys', 1280);
  await tabReachesEverything(page, 'Keys', check);
  await page.getByRole('button', { name: 'Revoke Shop page' }).click();
  await page.getByRole('dialog').waitFor();
  await page.getByRole('button', { name: 'Revoke key' }).click();
  await page.getByText('Revoked “Shop page”: it is refused from now on.').waitFor();
  const refused = await fetch(`${base}/v1/location/search`, {
    method: 'POST', headers: { authorization: `Bearer ${shopKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ near: { latitude: 55.75, longitude: 37.61 } }) });
  check(refused.status === 401, `a revoked key answered ${refused.status}`);
  check((await api('/v1/key/list', {})).keys.find((k) => k.label === 'Shop page').revoked_at, 'Revoke did not revoke');

  // ---- the key: only in this tab's memory and sessionStorage -------------------------------
  const stores = await page.evaluate(() => ({ local: JSON.stringify(localStorage), cookie: document.cookie }));
  check(!stores.local.includes(key) && !stores.cookie.includes(key), 'the key is in localStorage or a cookie');
  check((await context.cookies()).length === 0, 'the console set a cookie');
  check(keyInUrl.length === 0 && !page.url().includes(key), `the key in a URL: ${keyInUrl.join(', ')}`);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('API key').waitFor();
  check(await page.evaluate(() => sessionStorage.length) === 0, 'Sign out did not forget the key');

  // Another merchant signed in on the same tab sees nothing of the first.
  check(await page.locator('#view').evaluate((v) => v.textContent === ''), 'Sign out left the section on the page');
  await page.getByLabel('API key').fill(process.env.OTHER_KEY);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText('No location matches.').waitFor();
  for (const [link, empty] of [['Import', 'No import yet.'], ['Events', 'No event yet.'], ['Webhooks', 'No endpoint yet.']]) {
    await page.getByRole('link', { name: link }).click();
    await page.getByText(empty).waitFor();
  }
  await page.getByRole('link', { name: 'Keys' }).click();
  await page.locator('.table-wrap[aria-label="Keys"] tbody tr').first().waitFor();
  check((await keyRows()).length === 1, 'the other merchant sees keys that are not its own');
  check(!(await page.locator('main').textContent()).includes('Shop page'), 'the first merchant\'s key shows');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('API key').waitFor();

  // ---- 320 px: each section, axe-core, no sideways scrolling, screenshots ------------------
  const narrow = await browser.newPage({ viewport: { width: 320, height: 800 } });
  const narrowProblems = watch(narrow);
  await narrow.goto(`${base}/console/`);
  await widthChecks(narrow, 'Sign-in', 320);
  await narrow.getByLabel('API key').fill(key);
  await narrow.getByRole('button', { name: 'Sign in' }).click();
  await narrow.locator('table tbody tr').first().waitFor();
  await widthChecks(narrow, 'Locations', 320);
  await narrow.goto(`${base}/console/#locations/${quarantined.location_id}`);
  await narrow.getByRole('link', { name: neighbour.name }).waitFor();
  await widthChecks(narrow, 'Location', 320);
  await narrow.goto(`${base}/console/#events`);
  await narrow.locator('table tbody tr').first().waitFor();
  await widthChecks(narrow, 'Events', 320);
  const again = await api('/v1/webhook/create', { url: hookUrl });
  await api('/v1/webhook/test', { webhook_id: again.webhook.webhook_id });
  await narrow.goto(`${base}/console/#webhooks`);
  await narrow.getByRole('button', { name: 'Send test event' }).first().waitFor();
  await widthChecks(narrow, 'Webhooks', 320);
  await narrow.getByRole('link', { name: hookUrl }).click();
  await narrow.getByLabel('Outcome').waitFor();
  await narrow.locator('table').first().waitFor();
  await widthChecks(narrow, 'Deliveries', 320);
  await narrow.goto(`${base}/console/#locations/new`);
  await narrow.getByRole('group', { name: 'Sunday' }).waitFor();
  await widthChecks(narrow, 'Location-form', 320);
  await narrow.goto(`${base}/console/#import`);
  await narrow.locator('.table-wrap[aria-label="Your imports"]').waitFor();
  await widthChecks(narrow, 'Import', 320);
  await narrow.goto(`${base}/console/#keys`);
  await narrow.locator('.table-wrap[aria-label="Keys"]').waitFor();
  await widthChecks(narrow, 'Keys', 320);

  const csp = answers.filter(([, policy]) => !policy || policy.includes('unsafe'));
  check(csp.length === 0, `console answers without the CSP: ${csp.map(([u]) => u).join(', ')}`);
  const violations = problems.concat(narrowProblems).filter((p) => /Content Security Policy|Refused to/.test(p));
  check(violations.length === 0, `CSP violations: ${violations.join(' | ')}`);
  check(problems.concat(narrowProblems).length === 0, `the console logged errors: ${problems.concat(narrowProblems).join(' | ')}`);
  check(outside.length === 0, `requests to other hosts: ${outside.join(', ')}`);
  console.log(`console browser test: signing in (unknown and storefront keys refused in words), Locations equal to the API's `
    + 'pages forwards and back and by status, a quarantined location\'s neighbour named and drawn, Archive/Restore stored '
    + 'and a stale version told, an event within 5 s, an endpoint added, tested (signature verified), said failing '
    + 'since when with its last error, failures filtered and named by their locations, '
    + `one resent, a recovery counted, one deleted after a confirmation; the key only in the tab; ${gzipped} bytes gzipped; `
    + `the CSP on every file; axe-core clean and no sideways scrolling at 1280 and 320 px; Tab reaches every control; `
    + 'a pickup point added through the form built from the OpenAPI document and read back field by field (three errors '
    + 'at their controls first, nothing stored), Edit with the version shown, a stale edit shown with the record as it is, '
    + 'Check and Import of the sample workbook with its counts and failed rows, keys made (errors at their controls), '
    + 'a snippet working on another origin\'s page, a preview, a key revoked and refused, another merchant seeing nothing '
    + `of the first; screenshots in ${shots}`);
} finally {
  await browser.close();
  receiver.close();
  shop.close();
}
