// Import: a file of locations (CSV, workbook, JSON Lines) handed to the service, checked first
// (a dry run) or applied, followed to its end with a progress bar, then its counts and the rows
// that did not succeed; the merchant's earlier imports below, newest first.

import { call, inWords } from './api.js';
import { announce, fill, h, notice, table, when } from './dom.js';

const FAILED_SHOWN = 1000;

// The file's bytes as standard base64.
function base64Of(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.addEventListener('load', () => resolve(String(reader.result).replace(/^data:[^,]*,/, '')));
    reader.addEventListener('error', () => reject(reader.error));
    reader.readAsDataURL(file);
  });
}

const wait = (ms, signal) => new Promise((resolve, reject) => {
  const timer = setTimeout(resolve, ms);
  signal.addEventListener('abort', () => { clearTimeout(timer); reject(new DOMException('left', 'AbortError')); });
});

function counts(i) {
  const c = i.counts;
  const parts = [[c.created, 'created'], [c.updated, 'updated'], [c.unchanged, 'unchanged'],
    [c.quarantined, 'quarantined'], [c.archived, 'archived'], [c.failed, 'failed']];
  return parts.map(([n, what]) => `${n} ${what}`).join(', ');
}

// The import's end in words: what it did, or would do when only checked.
function ended(i) {
  if (i.status === 'FAILED') return notice(`The file was not applied: ${i.error ? i.error.message : 'it failed'}.`, true);
  const verb = i.dry_run ? 'Checked: applied now, this file would have' : 'Imported:';
  return notice(`${verb} ${counts(i)} (${i.rows_total} row${i.rows_total === 1 ? '' : 's'}).`, i.counts.failed > 0);
}

async function failedRows(importId, signal) {
  let rows = [];
  let cursor = null;
  do {
    const page = await call('/v1/import/rows', { import_id: importId, filter: { outcome: 'failed' },
      pagination: cursor ? { limit: 1000, cursor } : { limit: 1000 } }, { signal });
    rows = rows.concat(page.rows);
    cursor = page.pagination.next_cursor;
  } while (cursor && rows.length < FAILED_SHOWN);
  return rows;
}

function failedTable(rows) {
  const lines = rows.flatMap((r) => (r.errors || []).map((e) => h('tr', {},
    h('td', { class: 'num' }, r.row),
    h('td', {}, r.merchant_location_id || '—'),
    h('td', {}, e.field || '—'),
    h('td', {}, e.message))));
  return [h('h2', {}, 'Rows that did not succeed'),
    table('Rows that did not succeed', [['Row', 'num'], ['Your id'], ['Column or field'], ['Message']], lines)];
}

export function showImports(view) {
  const file = h('input', { id: 'import-file', type: 'file', accept: '.csv,.xlsx,.jsonl,.ndjson,.json' });
  const update = h('input', { id: 'import-update', type: 'checkbox' });
  const archive = h('input', { id: 'import-archive', type: 'checkbox' });
  const check = h('button', { type: 'button', class: 'secondary' }, 'Check');
  const apply = h('button', { type: 'button' }, 'Import');
  const progress = h('progress', { id: 'import-progress', max: 1, value: 0, 'aria-label': 'Rows done' });
  const progressText = h('p', { role: 'status' });
  const result = h('div', {});
  const list = h('div', {});
  const running = h('div', { hidden: true }, progress, progressText);
  fill(view, h('h1', {}, 'Import'),
    h('p', {}, 'Hand over a file of locations as ', h('code', {}, 'storefront locations push'), ' reads it: CSV, a workbook '
      + '(.xlsx) or JSON Lines, one location a row. Check it first: nothing is stored, and each row says what would happen.'),
    h('div', {}, h('label', { for: 'import-file' }, 'File'), file),
    h('div', { class: 'check' }, update, h('label', { for: 'import-update' }, 'Update existing locations')),
    h('div', { class: 'check' }, archive, h('label', { for: 'import-archive' }, 'Archive locations not in the file')),
    h('div', { class: 'controls' }, check, apply),
    running, result, h('h2', {}, 'Your imports'), list);
  const stop = new AbortController();
  const refresh = async () => {
    try {
      const { imports } = await call('/v1/import/list', { pagination: { limit: 20 } }, { signal: stop.signal });
      fill(list, imports.length === 0 ? h('p', {}, 'No import yet.')
        : table('Your imports', [['Started'], ['File'], ['Kind'], ['Status'], ['Rows', 'num'], ['Outcome']],
          imports.map((i) => h('tr', {},
            h('td', {}, when(i.created_at)),
            h('td', {}, i.file_name),
            h('td', {}, i.dry_run ? 'check' : 'import'),
            h('td', { class: `status status-${i.status}` }, i.status),
            h('td', { class: 'num' }, i.rows_total === null ? '—' : i.rows_total),
            h('td', {}, i.status === 'FAILED' && i.error ? i.error.message : counts(i))))));
    } catch (e) {
      if (e.name !== 'AbortError') fill(list, notice(inWords(e), true));
    }
  };
  const follow = async (started) => {
    let i = started;
    running.hidden = false;
    while (i.status === 'QUEUED' || i.status === 'RUNNING') {
      progress.max = Math.max(1, i.rows_total || 1);
      progress.value = i.rows_done;
      progressText.textContent = i.rows_total === null ? 'Reading the file…' : `${i.rows_done} of ${i.rows_total} rows done.`;
      await wait(1000, stop.signal);
      i = (await call('/v1/import/get', { import_id: i.import_id }, { signal: stop.signal })).import;
    }
    progress.max = Math.max(1, i.rows_total || 1);
    progress.value = i.rows_done;
    progressText.textContent = `${i.rows_done} of ${i.rows_total || 0} rows done.`;
    const rows = i.counts.failed > 0 ? await failedRows(i.import_id, stop.signal) : [];
    fill(result, ended(i), rows.length ? failedTable(rows) : null);
    announce(i.status === 'FAILED' ? 'The import failed.' : 'The import ended.');
  };
  const start = async (dryRun) => {
    fill(result);
    if (!file.files.length) {
      fill(result, notice('Choose a file first.', true));
      file.focus();
      return;
    }
    check.disabled = true;
    apply.disabled = true;
    try {
      const chosen = file.files[0];
      const answer = await call('/v1/import/create', {
        file_name: chosen.name, content_base64: await base64Of(chosen),
        update: update.checked, archive_missing: archive.checked, dry_run: dryRun,
      }, { signal: stop.signal });
      await refresh();
      await follow(answer.import);
      await refresh();
    } catch (e) {
      if (e.name === 'AbortError') return;
      fill(result, notice(inWords(e), true));
    }
    check.disabled = false;
    apply.disabled = false;
  };
  check.addEventListener('click', () => start(true));
  apply.addEventListener('click', () => start(false));
  refresh();
  return () => stop.abort();
}
