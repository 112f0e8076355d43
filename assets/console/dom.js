// A few lines of DOM building: h('p', {class: 'x'}, 'text', child). Text is always set as text
// (never as HTML), so nothing from the API is ever parsed as markup.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// Replaces what `el` holds.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// Says `text` to screen readers (the page's polite live region).
export function announce(text) {
  const status = document.getElementById('status');
  status.textContent = '';
  setTimeout(() => { status.textContent = text; }, 50);
}

// A message box in words: `bad` for a failure (role alert), else a notice (role status).
export function notice(text, bad = false) {
  return h('p', { class: bad ? 'notice bad' : 'notice', role: bad ? 'alert' : 'status' }, text);
}

// The reader's time zone as an offset from UTC: `UTC+03:00`.
export function zone(at = new Date()) {
  const minutes = -at.getTimezoneOffset();
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `UTC${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

const two = (n) => String(n).padStart(2, '0');

// A time in the reader's time zone, as the console writes every time (and reads one typed):
// `2026-12-02 11:30:05`.
export function local(at) {
  return `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())} `
    + `${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}`;
}

// A time of the API (RFC 3339, UTC) in the reader's time zone, with the zone said.
export function when(iso) {
  if (!iso) return '—';
  const at = new Date(iso);
  return Number.isNaN(at.getTime()) ? iso : `${local(at)} ${zone(at)}`;
}

// A time typed as the console writes it (`2026-12-02 11:30` or with seconds, a `T` allowed), in
// the reader's time zone; null when it is not one.
export function typedTime(text) {
  const m = /^\s*(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2}))?\s*$/.exec(text);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1).map((v) => Number(v || 0));
  const at = new Date(year, month - 1, day, hour, minute, second);
  return at.getMonth() === month - 1 && at.getDate() === day && at.getHours() === hour ? at : null;
}

// How far apart two points are, in metres (the haversine on a sphere of the Earth's mean radius).
export function metresBetween(a, b) {
  const rad = Math.PI / 180;
  const dLat = (b.latitude - a.latitude) * rad;
  const dLon = (b.longitude - a.longitude) * rad;
  const s = Math.sin(dLat / 2) ** 2 + Math.cos(a.latitude * rad) * Math.cos(b.latitude * rad) * Math.sin(dLon / 2) ** 2;
  return 2 * 6371008.8 * Math.asin(Math.sqrt(s));
}

// A table in a wrapper that scrolls sideways within itself (reachable by the keyboard).
export function table(label, headers, rows) {
  return h('div', { class: 'table-wrap', role: 'region', 'aria-label': label, tabindex: 0 },
    h('table', {},
      h('thead', {}, h('tr', {}, headers.map(([text, cls]) => h('th', { scope: 'col', class: cls }, text)))),
      h('tbody', {}, rows)));
}

// `text` in a code element with a button that copies it (where the browser refuses the clipboard,
// the text is selected for the keyboard to copy). `block`: the text is shown as a block of lines.
export function copyable(text, label, block = false) {
  const code = h('code', {}, text);
  const copy = h('button', { type: 'button', class: 'secondary' }, label);
  const said = h('span', { role: 'status' });
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      said.textContent = 'Copied.';
    } catch {
      const range = document.createRange();
      range.selectNodeContents(code);
      getSelection().removeAllRanges();
      getSelection().addRange(range);
      said.textContent = 'Selected: copy it with your keyboard.';
    }
  });
  return block
    ? h('div', {}, h('pre', { class: 'snippet', tabindex: 0 }, code), h('p', { class: 'secret' }, copy, said))
    : h('p', { class: 'secret' }, code, copy, said);
}

// Asks to confirm in a dialog; resolves true for the confirming button.
export function confirmed(question, yes) {
  return new Promise((resolve) => {
    const ok = h('button', { type: 'button', class: 'danger' }, yes);
    const cancel = h('button', { type: 'button', class: 'secondary' }, 'Cancel');
    const dialog = h('dialog', { 'aria-labelledby': 'confirm-title' }, h('p', { id: 'confirm-title' }, question), ok, cancel);
    const done = (answer) => { dialog.close(); dialog.remove(); resolve(answer); };
    ok.addEventListener('click', () => done(true));
    cancel.addEventListener('click', () => done(false));
    dialog.addEventListener('cancel', () => done(false));
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();
  });
}
