// The pickup-point widget (CONTRACT §13.3) in headless Chromium:
// - a checkout page served from another origin (allowed with --cors-origin) includes
//   /widget/pickup.js and mounts it with a storefront key: the points appear nearest first, the
//   same as the API answers; the keyboard alone moves through the listbox and picks one, and
//   `storefront:pickup` bubbles with the location's record; paging, update(), messages, destroy();
// - the Russian locale: its sentences, plural forms and numbers, with messages overriding them;
// - a page of an origin the service refuses: a calm sentence, both causes in the developer's console;
// - an invalid key shows a message in words;
// - nothing is requested from any other host; the script is under 20 KB gzipped;
// - /widget/ itself: axe-core finds no WCAG 2.1 A/AA violation at 1280 and at 320 px wide, no
//   sideways scrolling at 320 px, no Content-Security-Policy violation; screenshots of both widths.
// - open or not, and the day's hours, as the cases in tests/data/open-cases.json say (the same
//   table the server's search is tested on);
// Usage: OPEN_CASES=tests/data/open-cases.json node widget-test.mjs BASE_URL STOREFRONT_KEY EMBED_PORT SCREENSHOT_DIR
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { axe, checker, fitsWidth } from './checks.mjs';
import { launch } from './chromium.mjs';

const [base, key, embedPort, shots] = process.argv.slice(2);
const embed = `http://127.0.0.1:${embedPort}`;
const { check } = checker('widget browser test');
const MOSCOW = { latitude: 55.7575, longitude: 37.6134 };
const PETERSBURG = { latitude: 59.9343, longitude: 30.3351 };

async function search(near, limit, cursor) {
  const response = await fetch(`${base}/v1/location/search`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ near, pagination: cursor ? { limit, cursor } : { limit } }),
  });
  check(response.status === 200, `the API's own search answered ${response.status}`);
  return response.json();
}

// The checkout page of a shop on another origin: the three lines of the README, and a listener.
function checkout(apiKey) {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Checkout</title></head>
<body><h1>Checkout</h1><button id="before" type="button">Back to the cart</button>
<div id="pickup"></div>
<script src="${base}/widget/pickup.js"></script>
<script>
  window.picked = []; window.bubbled = 0;
  document.getElementById('pickup').addEventListener('storefront:pickup', (e) => window.picked.push(e.detail));
  document.addEventListener('storefront:pickup', () => { window.bubbled += 1; });
  window.widget = StorefrontPickup.mount(document.getElementById('pickup'),
    {apiKey: ${JSON.stringify(apiKey)}, near: ${JSON.stringify(MOSCOW)}, limit: 5});
</script></body></html>`;
}

const server = http.createServer((request, response) => {
  const apiKey = request.url.startsWith('/bad') ? 'sf_000000000000000000000000_not-a-key' : key;
  response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  response.end(checkout(apiKey));
});
await new Promise((resolve) => server.listen(Number(embedPort), '127.0.0.1', resolve));

const browser = await launch();
const outside = [];
const watch = (page) => {
  page.on('request', (r) => {
    const origin = new URL(r.url()).origin;
    if (origin !== base && origin !== embed) outside.push(r.url());
  });
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(String(e)));
  return problems;
};
const options = (page) => page.locator('#pickup [role=option]');
const shown = (page) => options(page).evaluateAll((all) => all.map((o) => [o.dataset.locationId, Number(o.dataset.distance)]));
const activeRole = (page) => page.evaluate(() => {
  const root = document.getElementById('pickup').shadowRoot;
  return root.activeElement && root.activeElement.getAttribute('role');
});

try {
  // ---- a shop's checkout page on another origin ---------------------------------------------
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems = watch(page);
  await page.goto(`${embed}/`);
  await options(page).nth(4).waitFor({ timeout: 15000 });
  const first = await search(MOSCOW, 5);
  const expected = first.results.map((r) => [r.location.location_id, r.distance_m]);
  check(JSON.stringify(await shown(page)) === JSON.stringify(expected),
    `the widget's points are not the API's, nearest first: ${JSON.stringify(await shown(page))} vs ${JSON.stringify(expected)}`);
  const status = await page.locator('#pickup [role=status]').innerText();
  check(status.includes('5 pickup points found'), `the live region said: ${status}`);
  check(await page.locator('#pickup [role=listbox]').getAttribute('aria-label') === 'Pickup points, nearest first', 'the listbox has no name');
  check(await page.locator('#pickup svg[role=img] circle.sp-dot').count() === 5, 'the plan does not show the five points');
  check((await page.locator('#pickup svg .sp-scale-text').textContent()).match(/^\d+(\.\d)? k?m$/), 'the plan has no scale bar');

  // The keyboard alone: Tab from the button before the widget reaches the listbox.
  await page.focus('#before');
  await page.keyboard.press('Tab');
  check(await activeRole(page) === 'listbox', `Tab did not reach the listbox (${await activeRole(page)})`);
  const activeId = () => page.locator('#pickup [role=listbox]').getAttribute('aria-activedescendant');
  const optionId = (i) => options(page).nth(i).getAttribute('id');
  check(await activeId() === await optionId(0), 'focusing the list does not make the first option active');
  for (const [keyName, index] of [['ArrowDown', 1], ['ArrowDown', 2], ['End', 4], ['Home', 0], ['ArrowUp', 0], ['ArrowDown', 1]]) {
    await page.keyboard.press(keyName);
    check(await activeId() === await optionId(index), `${keyName} did not make option ${index} active`);
  }
  await page.keyboard.press('Enter');
  let picked = await page.evaluate(() => window.picked);
  check(picked.length === 1, `Enter picked ${picked.length} points`);
  check(JSON.stringify(picked[0]) === JSON.stringify(first.results[1].location), 'the event does not carry the location\'s record');
  check(await page.evaluate(() => window.bubbled) === 1, 'storefront:pickup did not bubble to the document');
  check(await options(page).nth(1).getAttribute('aria-selected') === 'true', 'the picked option is not aria-selected');
  check((await page.locator('#pickup [role=status]').innerText()).startsWith('Selected: '), 'the pick is not announced');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press(' ');
  picked = await page.evaluate(() => window.picked);
  check(picked.length === 2 && picked[1].location_id === expected[2][0], 'Space did not pick the third point');
  check(await options(page).nth(1).getAttribute('aria-selected') === 'false', 'two options are selected at once');

  // Paging with the cursor: the next five follow, still nearest first.
  await page.locator('#pickup button.sp-more').click();
  await options(page).nth(9).waitFor({ timeout: 15000 });
  const second = await search(MOSCOW, 5, first.pagination.next_cursor);
  const ten = expected.concat(second.results.map((r) => [r.location.location_id, r.distance_m]));
  check(JSON.stringify(await shown(page)) === JSON.stringify(ten), 'the second page is not the API\'s');

  // update(): another buyer, and the page's own words.
  await page.evaluate((near) => window.widget.update({ near, messages: { found: 'Найдено пунктов: {count}' } }), PETERSBURG);
  await page.locator('#pickup [role=status]', { hasText: 'Найдено пунктов: 5' }).waitFor({ timeout: 15000 });
  const spb = (await search(PETERSBURG, 5)).results.map((r) => [r.location.location_id, r.distance_m]);
  check(JSON.stringify(await shown(page)) === JSON.stringify(spb), 'update() did not search for the new buyer');
  // The Russian locale: sentences, plural forms and numbers ("1,2 км"); messages still override.
  await page.evaluate(() => window.widget.update({ locale: 'ru', messages: null }));
  await page.locator('#pickup [role=status]', { hasText: 'Найдено 5 пунктов выдачи, сначала ближайшие.' }).waitFor({ timeout: 15000 });
  const distances = await page.locator('#pickup .sp-dist').allTextContents();
  check(distances.every((d) => /^\d+ м$|^\d,\d км$|^\d+ км$/.test(d)), `the Russian distances: ${distances}`);
  check(await page.locator('#pickup [role=listbox]').getAttribute('aria-label') === 'Пункты выдачи, сначала ближайшие',
    'the listbox is not named in Russian');
  await page.evaluate(() => window.widget.update({ limit: 1 }));
  await page.locator('#pickup [role=status]', { hasText: 'Найден 1 пункт выдачи.' }).waitFor({ timeout: 15000 });
  await page.evaluate(() => window.widget.update({ limit: 3, messages: { found: 'Нашлось: {count}' } }));
  await page.locator('#pickup [role=status]', { hasText: 'Нашлось: 3' }).waitFor({ timeout: 15000 });
  check((await page.locator('#pickup button.sp-more').innerText()) === 'Показать ещё пункты выдачи', 'a message not overridden is not Russian');
  await page.evaluate(() => window.widget.destroy());
  check(await options(page).count() === 0, 'destroy() left the list');
  check(problems.length === 0, `the checkout page logged errors: ${problems.join(' | ')}`);

  // ---- an invalid key: words, not JSON ------------------------------------------------------
  const bad = await browser.newPage();
  watch(bad);
  await bad.goto(`${embed}/bad`);
  const alert = bad.locator('#pickup [role=alert]');
  await alert.waitFor({ timeout: 15000 });
  const words = await alert.innerText();
  check(words.includes('not valid') && !words.includes('{') && !words.includes('INVALID_API_KEY'), `the invalid key's message: ${words}`);

  // ---- a page of an origin the service refuses (CORS): both causes told to the developer -------
  const refused = await browser.newPage();
  const warnings = [];
  refused.on('console', (m) => { if (m.type() === 'warning') warnings.push(m.text()); });
  const otherOrigin = `http://localhost:${embedPort}`;
  await refused.goto(`${otherOrigin}/`);
  const calm = refused.locator('#pickup [role=alert]');
  await calm.waitFor({ timeout: 15000 });
  check((await calm.innerText()).startsWith('Pickup points could not be loaded. Please check your connection'),
    `the buyer was told: ${await calm.innerText()}`);
  check(warnings.some((w) => w.includes('refused this page\'s origin') && w.includes(`--cors-origin ${otherOrigin}`)
    && w.includes('allowed_origins')), `the developer was told: ${warnings.join(' | ')}`);

  // ---- the script's size ---------------------------------------------------------------------
  const script = Buffer.from(await (await fetch(`${base}/widget/pickup.js`)).arrayBuffer());
  const gzipped = gzipSync(script, { level: 9 }).length;
  check(gzipped < 20 * 1024, `pickup.js is ${gzipped} bytes gzipped`);

  // ---- open or not, and the day's hours: the cases the server's search is tested on -----------
  const table = JSON.parse(readFileSync(process.env.OPEN_CASES, 'utf8'));
  const rules = await browser.newPage();
  await rules.goto(`${embed}/`);
  await rules.waitForFunction(() => window.StorefrontPickup && window.StorefrontPickup.openAt);
  const decided = await rules.evaluate((t) => t.cases.map((c) => window.StorefrontPickup.openAt(t.schedules[c.schedule], c.at)), table);
  table.cases.forEach((c, i) => {
    const want = JSON.stringify({ open: c.open, hours: c.hours });
    const got = JSON.stringify({ open: decided[i].open, hours: decided[i].hours && { ...decided[i].hours, break: decided[i].hours.break } });
    check(got === want, `openAt(${c.schedule}, ${c.at}): ${got}, the shared case says ${want}`);
  });
  await rules.close();

  // ---- /widget/ at 1280 and at 320 px: axe-core, no sideways scrolling, screenshots ---------
  for (const width of [1280, 320]) {
    const demo = await browser.newPage({ viewport: { width, height: 900 } });
    const demoProblems = watch(demo);
    await demo.goto(`${base}/widget/#key=${key}`);
    await options(demo).nth(7).waitFor({ timeout: 15000 });
    // The keyboard's focus on the list, on its second point: the screenshot shows the focus ring.
    await demo.locator('#pickup [role=listbox]').focus();
    await demo.keyboard.press('ArrowDown');
    await axe(demo, `/widget/ at ${width} px`, check);
    await fitsWidth(demo, '/widget/', width, check);
    check(demoProblems.length === 0, `/widget/ logged errors at ${width} px: ${demoProblems.join(' | ')}`);
    await demo.screenshot({ path: `${shots}/widget-${width}.png`, fullPage: width === 320 });
    await demo.close();
  }
  check(outside.length === 0, `requests to other hosts: ${outside.join(', ')}`);
  console.log(`widget browser test: a page of ${embed} mounted the widget; points nearest first as the API answers; `
    + 'the keyboard picked with Enter and Space and the event carried the record; paging, update(), messages, destroy(); '
    + 'the Russian locale (sentences, plural forms, numbers) with messages overriding it; a refused origin told to the developer; '
    + `open or not and the day's hours as the ${table.cases.length} shared cases say; `
    + `an invalid key in words; pickup.js ${gzipped} bytes gzipped; axe-core: no WCAG 2.1 A/AA violation at 1280 and 320 px; `
    + `nothing from other hosts; screenshots in ${shots}`);
} finally {
  await browser.close();
  server.close();
}
