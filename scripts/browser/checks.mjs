// What every browser test checks of a page: its failures said in one line (and the test ended),
// axe-core's WCAG 2.1 A and AA rules, no sideways scrolling, and Tab reaching every control with
// a visible focus.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/// `fail(message)` ends the test named `test` with the message; `check(ok, message)` fails unless ok.
export function checker(test) {
  const fail = (message) => { console.error(`${test} FAILED: ${message}`); process.exit(1); };
  return { fail, check: (ok, message) => { if (!ok) fail(message); } };
}

/// axe-core's WCAG 2.1 A and AA rules on the page as it is: no violation, and more than a few rules run.
export async function axe(page, what, check) {
  await page.evaluate(axeSource);
  const result = await page.evaluate(() => window.axe.run(document, {
    runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
  }));
  const violations = result.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  check(violations.length === 0, `axe-core on ${what}: ${violations.join(' | ')}`);
  check(result.passes.length > 10, `axe-core ran ${result.passes.length} checks only on ${what}`);
}

/// The page no wider than the viewport's `width`: nothing to scroll sideways to.
export async function fitsWidth(page, what, width, check) {
  const scroll = await page.evaluate(() => document.documentElement.scrollWidth);
  check(scroll <= width, `${what} scrolls sideways at ${width} px (${scroll} px wide)`);
}

/// Tab from the top reaches every control of the page, each with a visible focus.
export async function tabReachesEverything(page, what, check) {
  const controls = await page.evaluate(() => [...document.querySelectorAll('a[href], button, input, select, [tabindex="0"]')]
    .filter((el) => !el.disabled && el.offsetParent !== null && !el.closest('[hidden]')).length);
  await page.evaluate(() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); });
  await page.locator('body').focus();
  const seen = new Set();
  for (let i = 0; i < controls + 20 && seen.size < controls; i += 1) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => {
      const el = document.activeElement;
      if (!el || el === document.body) return null;
      const style = getComputedStyle(el);
      const visible = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2;
      const all = [...document.querySelectorAll('a[href], button, input, select, [tabindex="0"]')];
      return { index: all.indexOf(el), visible, name: el.textContent.trim().slice(0, 40) || el.id };
    });
    if (!focused || focused.index < 0) continue;
    check(focused.visible, `${what}: no visible focus on ${focused.name}`);
    seen.add(focused.index);
  }
  check(seen.size >= controls, `${what}: Tab reached ${seen.size} of ${controls} controls`);
}
