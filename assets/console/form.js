// One form for a location, built from the service's own OpenAPI document: each field of
// LocationInput becomes a control by its schema (text, number, a choice, check boxes for a list of
// words, a group for an object, a day-by-day editor for the weekly hours, rows for dated
// exceptions), in the record's order, with the types that allow and require it and its unit. A
// new field of the location needs no code here. The form sends what was typed (the service is the
// one place of every rule); each error of the answer is shown at the control that edits its path.

import { call, inWords } from './api.js';
import { fill, h, notice } from './dom.js';

let schemas = null;

async function loadSchemas() {
  if (!schemas) {
    const response = await fetch('/openapi.json', { credentials: 'omit' });
    if (!response.ok) throw new Error(`the service's description answered ${response.status}`);
    schemas = (await response.json()).components.schemas;
  }
  return schemas;
}

// A schema with its reference followed and its `null` alternative left out.
function resolved(schema) {
  let s = schema;
  for (let i = 0; s && i < 8; i += 1) {
    if (s.$ref) s = { ...schemas[s.$ref.split('/').pop()], description: s.description || schemas[s.$ref.split('/').pop()].description };
    else if (s.oneOf) s = { ...s.oneOf.find((o) => o.type !== 'null' && !(Array.isArray(o.type) && o.type.includes('null') && o.type.length === 1)), description: s.description };
    else break;
  }
  return s || {};
}

const typeOf = (s) => [].concat(s.type || []).find((t) => t !== 'null');
const ordered = (s) => s['x-field-order'] || Object.keys(s.properties || {});

// What kind of control a field's schema asks for.
function kindOf(s) {
  const type = typeOf(s);
  if (s.enum) return 'choice';
  if (type === 'boolean') return 'flag';
  if (type === 'number' || type === 'integer') return 'number';
  if (type === 'object') return 'group';
  if (type === 'array') {
    const item = resolved(s.items || {});
    if (item.enum) return 'words';
    const props = item.properties || {};
    const weekday = Object.keys(props).find((k) => (resolved(props[k]).enum || []).length === 7);
    if (weekday) return 'week';
    if (Object.keys(props).some((k) => props[k].format === 'date')) return 'dates';
  }
  return (s.maxLength || 0) > 500 ? 'long' : 'text';
}

const NAMES = {
  merchant_location_id: 'Your id', location_types: 'Types', address_tail: 'Address', provider_id: 'Provider',
  provider_location_id: 'Provider’s id of the point', storage_period_days: 'Storage period, days',
  limits: 'Largest order', working_schedule: 'Weekly hours', individual_schedule: 'Dated exceptions',
  is_accepts_returns: 'Accepts returns', time_start: 'Opens', time_end: 'Closes', break: 'Break',
  shipping_cutoff: 'Shipping cut-off', is_works: 'Open that day', date: 'Date',
};
const word = (w) => w.charAt(0) + w.slice(1).toLowerCase().replaceAll('_', ' ');
const nameOf = (key) => NAMES[key] || word(key.toUpperCase());

// "Pickup point and click and collect only; required for them."
function typesHint(s) {
  const marks = s['x-location-types'];
  if (!marks) return null;
  const list = (types) => types.map(word).join(', ');
  const all = (schemas.LocationType.enum || []).length;
  let text = marks.allowed.length < all ? `For ${list(marks.allowed)} only` : '';
  if (marks.required.length) text += `${text ? '; required' : 'Required'} for ${list(marks.required)}`;
  return text ? `${text}.` : null;
}

// The number typed, or the text itself when it is not one (the service says what is wrong).
function typedNumber(text) {
  const t = text.trim();
  if (t === '') return undefined;
  return /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(t) ? Number(t) : t;
}

// The key of the control that edits the field at `path` (`locations[0].working_schedule[2].
// schedule.time_end`) in the item `sent`: fields by name, a weekly day by its day, a dated
// exception by its row, an element of a list of words by the list. `kinds` maps each field to its
// kind of control. Keys that no control has are narrowed by the caller.
export function controlKey(path, sent, kinds) {
  const rest = path.replace(/^locations\[\d+\]\.?/, '');
  const tokens = [...rest.matchAll(/([A-Za-z_]+)|\[(\d+)\]/g)].map((t) => (t[1] !== undefined ? t[1] : Number(t[2])));
  const [field, ...more] = tokens;
  if (field === undefined) return '';
  const kind = kinds[field];
  if (kind === 'week' || kind === 'dates') {
    const i = more[0];
    const element = typeof i === 'number' && sent && Array.isArray(sent[field]) ? sent[field][i] : null;
    if (!element) return field;
    const row = kind === 'week' ? Object.values(element).find((v) => typeof v === 'string' && /^[A-Z]+DAY$/.test(v)) : i;
    if (row === undefined) return field;
    const leaf = more.slice(1).filter((t) => typeof t === 'string' && t !== 'schedule').pop();
    return leaf && !(kind === 'week' && /^[a-z]+$/.test(leaf) && element[leaf] === row) ? `${field}.${row}.${leaf}` : `${field}.${row}`;
  }
  if (kind === 'group' && typeof more[0] === 'string') return `${field}.${more[0]}`;
  return field;
}

// A labelled text or number control, with its hint and its error said as its description.
function input(form, key, label, s, kind) {
  const id = `f-${key.replaceAll('.', '-')}`;
  const control = kind === 'long'
    ? h('textarea', { id, rows: 3 })
    : h('input', { id, type: 'text', autocomplete: 'off', spellcheck: kind === 'text' ? null : 'false',
      inputmode: kind === 'number' ? 'decimal' : null });
  const unit = s['x-unit'] ? `, ${s['x-unit']}` : '';
  return form.register(key, control, h('label', { for: id }, `${label}${unit}`), typesHint(s));
}

class LocationForm {
  constructor(root) {
    this.root = root;
    this.controls = new Map();
    this.kinds = {};
    this.builders = [];
    this.first = null;
  }

  // Adds a control under `key`: its error element and hint become its description.
  register(key, control, label, hint, group) {
    const id = control.id;
    const error = h('p', { id: `${id}-error`, class: 'error' });
    const hintEl = hint ? h('p', { id: `${id}-hint`, class: 'help' }, hint) : null;
    control.setAttribute('aria-describedby', [hintEl ? hintEl.id : null, error.id].filter(Boolean).join(' '));
    this.controls.set(key, { control, error, members: group || [control] });
    // A check box stands before its label, as people read one.
    return control.type === 'checkbox'
      ? h('div', { class: 'field check' }, control, label, hintEl, error)
      : h('div', { class: 'field' }, label, hintEl, control, error);
  }

  // Check boxes for a list of words, or a choice of one: a group named by its legend.
  words(key, s, many) {
    const values = resolved(many ? s.items : s).enum || [];
    const id = `f-${key}`;
    if (!many) {
      const select = h('select', { id }, h('option', { value: '' }, '—'), values.map((v) => h('option', { value: v }, word(v))));
      return this.register(key, select, h('label', { for: id }, nameOf(key)), typesHint(s));
    }
    const boxes = values.map((v) => h('input', { type: 'checkbox', id: `${id}-${v}`, value: v }));
    const error = h('p', { id: `${id}-error`, class: 'error' });
    const hint = typesHint(s);
    const hintEl = hint ? h('p', { id: `${id}-hint`, class: 'help' }, hint) : null;
    for (const box of boxes) box.setAttribute('aria-describedby', [hintEl ? hintEl.id : null, error.id].filter(Boolean).join(' '));
    this.controls.set(key, { control: boxes[0], error, members: boxes });
    return h('fieldset', { class: 'field' }, h('legend', {}, nameOf(key)), hintEl,
      h('div', { class: 'words' }, boxes.map((b, i) => h('span', { class: 'check' }, b, h('label', { for: b.id }, word(values[i]))))),
      error);
  }

  // The schedule's own fields (opens, closes, ...) for one row, under `prefix`.
  dayFields(prefix, schedule) {
    return ordered(schedule).map((k) => input(this, `${prefix}.${k}`, nameOf(k), resolved(schedule.properties[k]), 'text'));
  }

  week(key, s) {
    const item = resolved(s.items);
    const dayKey = Object.keys(item.properties).find((k) => (resolved(item.properties[k]).enum || []).length === 7);
    const days = resolved(item.properties[dayKey]).enum;
    const schedule = resolved(item.properties.schedule);
    const rows = days.map((day) => {
      const open = h('input', { type: 'checkbox', id: `f-${key}-${day}` });
      const fields = h('div', { class: 'day-hours' }, this.dayFields(`${key}.${day}`, schedule));
      return h('fieldset', { class: 'day' }, h('legend', {}, word(day)),
        this.register(`${key}.${day}`, open, h('label', { for: open.id }, `Open on ${word(day)}`)), fields);
    });
    this.builders.push({
      key,
      read: () => days.filter((day) => this.controls.get(`${key}.${day}`).control.checked)
        .map((day) => ({ [dayKey]: day, schedule: this.readAll(`${key}.${day}`, schedule) })),
      write: (list) => {
        for (const day of days) {
          const entry = (list || []).find((d) => d[dayKey] === day);
          this.controls.get(`${key}.${day}`).control.checked = Boolean(entry);
          this.writeAll(`${key}.${day}`, schedule, entry ? entry.schedule : {});
        }
      },
    });
    return h('fieldset', { class: 'field week' }, h('legend', {}, nameOf(key)),
      this.groupError(key, days.map((day) => this.controls.get(`${key}.${day}`).control)), rows);
  }

  // An error element for a whole group, said by each of `members` and shown above them; the
  // group's errors land there, the first member focused.
  groupError(key, members) {
    const error = h('p', { id: `f-${key}-error`, class: 'error' });
    for (const m of members) m.setAttribute('aria-describedby', `${m.getAttribute('aria-describedby') || ''} ${error.id}`.trim());
    this.controls.set(key, { control: members[0], error, members });
    return error;
  }

  dates(key, s) {
    const item = resolved(s.items);
    const schedule = resolved(item.properties.schedule);
    const list = h('div', {});
    let count = 0;
    const add = h('button', { type: 'button', class: 'secondary' }, 'Add a date');
    const rowValue = (i) => ({ date: this.controls.get(`${key}.${i}.date`).control.value,
      is_works: this.controls.get(`${key}.${i}.is_works`).control.checked, schedule: this.readAll(`${key}.${i}`, schedule) });
    const rebuild = (entries) => {
      for (const k of [...this.controls.keys()]) if (k.startsWith(`${key}.`)) this.controls.delete(k);
      list.replaceChildren();
      count = 0;
      for (const entry of entries) addRow(entry);
    };
    const addRow = (entry) => {
      const i = count;
      count += 1;
      const date = input(this, `${key}.${i}.date`, nameOf('date'), resolved(item.properties.date), 'text');
      const works = h('input', { type: 'checkbox', id: `f-${key}-${i}-is_works` });
      const remove = h('button', { type: 'button', class: 'secondary' }, `Remove exception ${i + 1}`);
      remove.addEventListener('click', () => {
        const kept = [...Array(count).keys()].filter((j) => j !== i).map(rowValue);
        rebuild(kept);
        add.focus();
      });
      const worksField = this.register(`${key}.${i}.is_works`, works, h('label', { for: works.id }, nameOf('is_works')));
      list.append(h('fieldset', { class: 'day' }, h('legend', {}, `Exception ${i + 1}`), date, worksField,
        h('div', { class: 'day-hours' }, this.dayFields(`${key}.${i}`, schedule)), remove));
      this.controls.set(`${key}.${i}`, this.controls.get(`${key}.${i}.date`));
      if (entry) {
        this.controls.get(`${key}.${i}.date`).control.value = entry.date || '';
        works.checked = Boolean(entry.is_works);
        this.writeAll(`${key}.${i}`, schedule, entry.schedule || {});
      }
    };
    add.addEventListener('click', () => { addRow(null); this.controls.get(`${key}.${count - 1}.date`).control.focus(); });
    this.builders.push({
      key,
      read: () => [...Array(count).keys()].map(rowValue),
      write: (entries) => rebuild(entries || []),
    });
    const legend = h('legend', {}, nameOf(key));
    const fieldset = h('fieldset', { class: 'field' }, legend, this.groupError(key, [add]), list, add);
    return fieldset;
  }

  // The typed values of a schema's fields under `prefix`, leaving out what was not typed.
  readAll(prefix, s) {
    const out = {};
    for (const k of ordered(s)) {
      const field = this.controls.get(`${prefix}.${k}`);
      if (!field) continue;
      const kind = kindOf(resolved(s.properties[k]));
      const value = kind === 'number' ? typedNumber(field.control.value) : field.control.value;
      if (value !== undefined && value !== '') out[k] = value;
    }
    return out;
  }

  writeAll(prefix, s, values) {
    for (const k of ordered(s)) {
      const field = this.controls.get(`${prefix}.${k}`);
      if (field) field.control.value = values && values[k] !== null && values[k] !== undefined ? String(values[k]) : '';
    }
  }

  async build() {
    await loadSchemas();
    const location = schemas.LocationInput;
    const parts = [];
    for (const key of ordered(location)) {
      const s = resolved(location.properties[key]);
      const kind = kindOf(s);
      this.kinds[key] = kind;
      if (kind === 'week') parts.push(this.week(key, s));
      else if (kind === 'dates') parts.push(this.dates(key, s));
      else if (kind === 'words') parts.push(this.words(key, s, true));
      else if (kind === 'choice') parts.push(this.words(key, s, false));
      else if (kind === 'flag') {
        const box = h('input', { type: 'checkbox', id: `f-${key}` });
        parts.push(this.register(key, box, h('label', { for: box.id }, nameOf(key)), typesHint(s)));
      } else if (kind === 'group') {
        const inner = ordered(s).map((k) => input(this, `${key}.${k}`, nameOf(k), resolved(s.properties[k]), 'number'));
        const members = ordered(s).map((k) => this.controls.get(`${key}.${k}`).control);
        parts.push(h('fieldset', { class: 'field' }, h('legend', {}, nameOf(key)), this.groupError(key, members),
          h('div', { class: 'day-hours' }, inner)));
      } else parts.push(input(this, key, nameOf(key), s, kind));
    }
    fill(this.root, ...parts);
    return this;
  }

  // The item as typed.
  read() {
    const location = schemas.LocationInput;
    const out = {};
    for (const key of ordered(location)) {
      const s = resolved(location.properties[key]);
      const kind = this.kinds[key];
      const field = this.controls.get(key);
      let value;
      const builder = this.builders.find((b) => b.key === key);
      if (builder) value = builder.read();
      else if (kind === 'words') value = field.members.filter((b) => b.checked).map((b) => b.value);
      else if (kind === 'flag') value = field.control.checked;
      else if (kind === 'group') value = this.readAll(key, s);
      else if (kind === 'number') value = typedNumber(field.control.value);
      else value = field.control.value;
      const empty = value === undefined || value === '' || (Array.isArray(value) && value.length === 0)
        || (kind === 'group' && Object.keys(value).length === 0);
      if (!empty) out[key] = value;
    }
    return out;
  }

  // Fills the controls with a stored record.
  write(record) {
    const location = schemas.LocationInput;
    for (const key of ordered(location)) {
      const s = resolved(location.properties[key]);
      const value = record[key];
      const field = this.controls.get(key);
      const builder = this.builders.find((b) => b.key === key);
      if (builder) builder.write(value);
      else if (this.kinds[key] === 'words') for (const b of field.members) b.checked = (value || []).includes(b.value);
      else if (this.kinds[key] === 'flag') field.control.checked = Boolean(value);
      else if (this.kinds[key] === 'group') this.writeAll(key, s, value || {});
      else field.control.value = value === null || value === undefined ? '' : String(value);
    }
  }

  // Shows each error at its control (the message its description), the first focused; the
  // errors no control edits are returned.
  showErrors(errors, sent) {
    for (const field of this.controls.values()) if (field) field.error.textContent = '';
    const unplaced = [];
    let first = null;
    for (const e of errors) {
      let key = controlKey(e.field, sent, this.kinds);
      while (key && !this.controls.get(key)) key = key.includes('.') ? key.slice(0, key.lastIndexOf('.')) : '';
      const field = key ? this.controls.get(key) : null;
      if (!field) { unplaced.push(e); continue; }
      field.error.textContent = field.error.textContent ? `${field.error.textContent} ${e.message}` : e.message;
      first = first || field.control;
    }
    if (first) first.focus();
    return unplaced;
  }
}

// The form on `view`: a new location (`record` null) or an edit of `record`; `done(id, said)`
// shows the location saved.
export async function showForm(view, record, done) {
  const said = h('div', {});
  const fields = h('div', {});
  const save = h('button', { type: 'submit' }, 'Save');
  const beside = h('div', {});
  const form = h('form', { novalidate: true, class: 'location-form' }, fields, h('div', { class: 'controls' }, save));
  fill(view, h('p', {}, h('a', { href: record ? `#locations/${encodeURIComponent(record.location_id)}` : '#locations' },
    record ? record.name : 'All locations')),
  h('h1', {}, record ? `Edit ${record.name}` : 'Add location'), said, h('div', { class: 'layout' }, form, beside));
  let built;
  try {
    built = await new LocationForm(fields).build();
  } catch (e) {
    fill(said, notice(`The form could not be built: ${e.message}.`, true));
    return;
  }
  let version = record ? record.version : null;
  if (record) built.write(record);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    save.disabled = true;
    fill(said);
    const sent = built.read();
    try {
      const result = record
        ? (await call('/v1/location/update', { locations: [{ location_id: record.location_id, expected_version: version, ...sent }] })).locations[0]
        : (await call('/v1/location/create', { locations: [sent] })).locations[0];
      const errors = result.errors || [];
      const conflict = record && errors.find((e) => e.field.endsWith('expected_version'));
      if (conflict) {
        const now = (await call('/v1/location/list', { filter: { location_ids: [record.location_id] } })).locations[0];
        version = now ? now.version : version;
        fill(said, notice('This location changed since you opened it. Here it is as it now is, beside your edits: '
          + 'Save again to replace it with what you typed.', true));
        fill(beside, h('h2', {}, 'As it now is'), h('pre', { class: 'snippet', tabindex: 0 }, JSON.stringify(now, null, 2)));
        built.showErrors([], sent);
      } else if (result.status === 'FAILED') {
        const left = built.showErrors(errors, sent);
        fill(said, notice(`Nothing was saved: ${errors.length} thing${errors.length === 1 ? '' : 's'} to fix`
          + `${left.length ? ` (${left.map((e) => `${e.field}: ${e.message}`).join('; ')})` : ', each said at its field'}.`, true));
        if (left.length === errors.length) {
          const told = said.querySelector('p');
          told.tabIndex = -1;
          told.focus();
        }
      } else {
        const why = errors.find((e) => e.code === 'STOREFRONT_RULE_VIOLATION');
        done(result.location_id, why ? `Saved, in quarantine: ${why.message}` : `Saved${result.version ? `: version ${result.version}` : ''}.`);
        return;
      }
    } catch (e) {
      fill(said, notice(inWords(e), true));
    }
    save.disabled = false;
  });
}
