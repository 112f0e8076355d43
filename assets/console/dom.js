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

// A time of the API (RFC 3339, UTC) in words, in the reader's time zone.
export function when(iso) {
  if (!iso) return '—';
  const at = new Date(iso);
  return Number.isNaN(at.getTime()) ? iso : at.toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'medium' });
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
