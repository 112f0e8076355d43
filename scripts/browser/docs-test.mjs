// Opens /docs in headless Chromium, checks that every operation is listed, authorizes with an
// API key, sends a list request through the page ("Try it out" → "Execute"), and checks that the
// page loaded nothing from outside the service. Usage: node docs-test.mjs BASE_URL API_KEY
import { launch } from './chromium.mjs';

const [base, key] = process.argv.slice(2);
const fail = (message) => { console.error(`browser test FAILED: ${message}`); process.exit(1); };

const browser = await launch();
try {
  const page = await browser.newPage();
  const outside = [];
  page.on('request', (r) => { if (!r.url().startsWith(base)) outside.push(r.url()); });
  await page.goto(`${base}/docs/`, { waitUntil: 'networkidle' });
  // Swagger UI draws the operations after it fetched and parsed the document.
  await page.locator('.opblock-summary-path').nth(2).waitFor({ timeout: 15000 });

  const paths = await page.locator('.opblock-summary-path').allInnerTexts();
  for (const path of ['/v1/location/create', '/v1/location/list', '/v1/categories/list']) {
    if (!paths.some((p) => p.replace(/\u200b/g, '').includes(path))) fail(`operation ${path} not shown (saw ${paths})`);
  }

  await page.locator('button.authorize').first().click();
  await page.locator('.modal-ux input').first().fill(key);
  await page.locator('.modal-ux button.authorize').first().click();
  await page.locator('.modal-ux button.btn-done, .modal-ux .close-modal').first().click();

  const list = page.locator('.opblock', { has: page.locator('.opblock-summary-path', { hasText: 'categories' }) });
  await list.locator('.opblock-summary').click();
  // "Try it out" is on by default (the page's config); switch it on where it is not.
  const execute = list.locator('button.execute');
  if (!(await execute.isVisible())) await list.locator('button.try-out__btn').click();
  await execute.click();
  const status = list.locator('.live-responses-table tr.response .response-col_status').first();
  await status.waitFor({ timeout: 15000 });
  const code = (await status.innerText()).trim();
  if (code !== '200') fail(`the list request through the page answered ${code}`);
  const body = await list.locator('.live-responses-table tr.response .response-col_description pre').first().innerText();
  if (!body.includes('"categories"') || !body.includes('"pagination"')) fail(`unexpected answer: ${body.slice(0, 200)}`);
  if (outside.length) fail(`the page loaded from outside the service: ${outside.join(', ')}`);
  console.log('browser test: /docs lists every operation; a list request sent through the page answered 200 with categories; nothing loaded from outside');
} finally {
  await browser.close();
}
