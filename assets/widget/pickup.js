/*
 * Storefront pickup-point widget, served by the Storefront Catalog Service at
 * /widget/pickup.js. Plain JavaScript, no dependencies, nothing loaded from anywhere else.
 *
 *   <div id="pickup"></div>
 *   <script src="https://catalog.example/widget/pickup.js"></script>
 *   <script>StorefrontPickup.mount(document.getElementById('pickup'),
 *     {apiKey: 'sf_…', near: {latitude: 55.7575, longitude: 37.6134}});</script>
 *
 * Options: apiKey (a storefront key), near, radius_m, filter (as the search's), limit, baseUrl
 * (default: where this script came from), locale ('en', the default, or 'ru': the sentences, plural
 * forms and numbers of that language), messages (any sentence below, as a string with {names} or a
 * function; it overrides the locale's). The buyer's pick bubbles from the element as `storefront:pickup`, its detail the
 * location's record. mount() returns {update(options), destroy()}.
 */
(function () {
  'use strict';

  var script = document.currentScript;
  var DEFAULT_BASE = script && script.src ? new URL(script.src, location.href).origin : location.origin;
  var WEEKDAYS = ['SUNDAY', 'MONDAY', 'TUESDAY', 'WEDNESDAY', 'THURSDAY', 'FRIDAY', 'SATURDAY'];
  var SVG = 'http://www.w3.org/2000/svg';
  var mounted = 0;

  // What an option left out means (the search's own defaults, but the page size).
  var DEFAULTS = { radius_m: 5000, limit: 10 };

  var EN = {
    listLabel: 'Pickup points, nearest first',
    loading: 'Looking for pickup points…',
    found: function (v) {
      return v.count === 1 ? '1 pickup point found.' : v.count + ' pickup points found, nearest first.';
    },
    foundMore: '{count} more shown, {total} in all.',
    none: 'No pickup points within {distance} of this address.',
    more: 'Show more pickup points',
    picked: 'Selected: {name}, {address}.',
    openNow: 'Open',
    closedNow: 'Closed',
    closedToday: 'Closed all day',
    hours: '{start}–{end}',
    hoursBreak: '{start}–{end}, break {breakStart}–{breakEnd}',
    today: 'today',
    // Sentences made of others: named places, so that a translation may reorder them.
    stateToday: '{state} · {today} {hours}',
    stateClosedToday: '{state} · {closedToday}',
    kindAndAddress: '{kind} · {address}',
    listJoin: ' · ',
    payment: 'Payment: {methods}',
    ALREADY_PAID: 'prepaid',
    CARD: 'card',
    CASH: 'cash',
    fitting: 'Fitting room',
    returns: 'Returns accepted',
    POSTAMAT: 'Parcel locker',
    PICKUP_POINT: 'Pickup point',
    metres: '{n} m',
    kilometres: '{n} km',
    planLabel: 'Plan of the {count} points shown around the delivery address; the list has the same points.',
    planYou: 'Delivery address',
    errorKey: 'Pickup points cannot be shown: this shop’s key for them is not valid. Please choose another delivery method or contact the shop.',
    errorBusy: 'Too many searches right now. Please try again in {seconds} s.',
    errorRequest: 'Pickup points cannot be searched for this address or parcel. Please check the delivery details.',
    errorNetwork: 'Pickup points could not be loaded. Please check your connection and try again.',
    retry: 'Try again'
  };

  // Russian plural forms of a count, as Intl.PluralRules names them (one, few, many).
  var RU_PLURAL = new Intl.PluralRules('ru');
  function ru(n, forms) {
    return forms[RU_PLURAL.select(n)] || forms.many;
  }

  var RU = {
    listLabel: 'Пункты выдачи, сначала ближайшие',
    loading: 'Ищем пункты выдачи…',
    found: function (v) {
      return ru(v.count, { one: 'Найден {count} пункт выдачи.', few: 'Найдено {count} пункта выдачи, сначала ближайшие.',
        many: 'Найдено {count} пунктов выдачи, сначала ближайшие.' }).replace('{count}', v.count);
    },
    foundMore: 'Показано ещё {count}, всего {total}.',
    none: 'В пределах {distance} от этого адреса пунктов выдачи нет.',
    more: 'Показать ещё пункты выдачи',
    picked: 'Выбран: {name}, {address}.',
    openNow: 'Открыто',
    closedNow: 'Закрыто',
    closedToday: 'Весь день закрыто',
    hours: '{start}–{end}',
    hoursBreak: '{start}–{end}, перерыв {breakStart}–{breakEnd}',
    today: 'сегодня',
    stateToday: '{state} · {today} {hours}',
    stateClosedToday: '{state} · {closedToday}',
    kindAndAddress: '{kind} · {address}',
    listJoin: ' · ',
    payment: 'Оплата: {methods}',
    ALREADY_PAID: 'предоплата',
    CARD: 'карта',
    CASH: 'наличные',
    fitting: 'Есть примерочная',
    returns: 'Принимает возвраты',
    POSTAMAT: 'Постамат',
    PICKUP_POINT: 'Пункт выдачи',
    metres: '{n} м',
    kilometres: '{n} км',
    planLabel: function (v) {
      return ru(v.count, { one: 'План {count} показанного пункта', few: 'План {count} показанных пунктов',
        many: 'План {count} показанных пунктов' }).replace('{count}', v.count)
        + ' вокруг адреса доставки; в списке те же пункты.';
    },
    planYou: 'Адрес доставки',
    errorKey: 'Пункты выдачи показать нельзя: ключ магазина для них недействителен. Выберите другой способ доставки или свяжитесь с магазином.',
    errorBusy: 'Сейчас слишком много поисков. Попробуйте снова через {seconds} с.',
    errorRequest: 'Для этого адреса или посылки пункты выдачи найти нельзя. Проверьте данные доставки.',
    errorNetwork: 'Не удалось загрузить пункты выдачи. Проверьте подключение и попробуйте снова.',
    retry: 'Повторить'
  };

  var LOCALES = { en: EN, ru: RU };

  var CSS = [
    ':host{display:block;font:inherit;color:#1f2328}',
    '.sp{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;font-size:15px;line-height:1.4;',
    'border:1px solid #8c959f;border-radius:8px;background:#fff;overflow:hidden}',
    '.sp-status{padding:8px 12px;border-bottom:1px solid #d0d7de;background:#f6f8fa;margin:0}',
    '.sp-error{padding:12px;background:#fff1f0;color:#82071e;border-bottom:1px solid #ffcecb}',
    '.sp-error[hidden],.sp-more[hidden]{display:none}',
    '.sp-body{display:flex;flex-wrap:wrap-reverse;align-items:flex-end}',
    '.sp-side{flex:1 1 280px;min-width:0}',
    '.sp-list{list-style:none;margin:0;padding:4px;max-height:420px;overflow-y:auto;outline:none}',
    '.sp-list:focus-visible{box-shadow:inset 0 0 0 3px #0a58ca}',
    '.sp-opt{display:grid;grid-template-columns:28px 1fr auto;gap:2px 8px;padding:8px;border-radius:6px;',
    'border:2px solid transparent;cursor:pointer}',
    '.sp-opt:hover{background:#f6f8fa}',
    '.sp-opt.active{border-color:#0a58ca;background:#eef4ff}',
    '.sp-list:focus .sp-opt.active{outline:3px solid #0a58ca;outline-offset:1px}',
    '.sp-opt[aria-selected=true]{background:#dafbe1;border-color:#1a7f37}',
    '.sp-num{grid-row:span 5;width:24px;height:24px;border-radius:50%;background:#0a58ca;color:#fff;',
    'font-size:13px;font-weight:600;display:flex;align-items:center;justify-content:center}',
    '.sp-name{font-weight:600;overflow-wrap:anywhere}',
    '.sp-dist{color:#424a53;white-space:nowrap}',
    '.sp-line{grid-column:2/4;color:#424a53;overflow-wrap:anywhere}',
    '.sp-open{color:#1a7f37;font-weight:600}.sp-closed{color:#a40e26;font-weight:600}',
    '.sp-more{display:block;width:calc(100% - 16px);margin:8px;padding:10px;font:inherit;font-weight:600;',
    'color:#0a58ca;background:#fff;border:1px solid #0a58ca;border-radius:6px;cursor:pointer}',
    '.sp-more:focus-visible,.sp-retry:focus-visible{outline:3px solid #0a58ca;outline-offset:2px}',
    '.sp-retry{margin-left:8px;font:inherit;padding:4px 10px;border:1px solid #82071e;border-radius:6px;',
    'background:#fff;color:#82071e;cursor:pointer}',
    '.sp-plan{flex:1 1 240px;max-width:100%;min-width:0;padding:8px;box-sizing:border-box}',
    '.sp-plan svg{display:block;width:100%;height:auto;max-height:420px;background:#f6f8fa;border-radius:6px}',
    '.sp-dot{fill:#0a58ca;stroke:#fff;stroke-width:1.5;cursor:pointer}',
    '.sp-dot.active{fill:#003d99;stroke:#ffb000;stroke-width:3}.sp-dot.picked{fill:#1a7f37}',
    '.sp-label{fill:#fff;font-size:8px;font-weight:600;text-anchor:middle;pointer-events:none}',
    '.sp-me{fill:#a40e26;stroke:#fff;stroke-width:2}',
    '.sp-ring{fill:none;stroke:#8c959f;stroke-dasharray:3 3}',
    '.sp-scale{stroke:#1f2328;stroke-width:1.5}.sp-scale-text{font-size:9px;fill:#1f2328}',
    '.sp-legend{font-size:9px;fill:#1f2328;text-anchor:end}',
    '@media (max-width:560px){.sp-plan svg{max-height:220px}}',
    '@media (prefers-reduced-motion:no-preference){.sp-opt{transition:background .1s}}'
  ].join('');
  var sheet = null;

  function text(messages, key, vars) {
    var m = messages[key];
    if (typeof m === 'function') return String(m(vars || {}));
    return String(m).replace(/\{(\w+)\}/g, function (all, name) {
      return vars && vars[name] !== undefined ? vars[name] : all;
    });
  }

  function el(tag, className, content) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (content !== undefined) node.textContent = content;
    return node;
  }

  function svg(tag, attrs) {
    var node = document.createElementNS(SVG, tag);
    for (var name in attrs) node.setAttribute(name, attrs[name]);
    return node;
  }

  // A distance in metres, or in kilometres (one decimal under 10 km) written as `locale` writes numbers.
  function distance(messages, m, locale) {
    if (m < 1000) return text(messages, 'metres', { n: new Intl.NumberFormat(locale).format(Math.round(m)) });
    var km = m / 1000, digits = km < 10 ? 1 : 0;
    var n = new Intl.NumberFormat(locale, { minimumFractionDigits: digits, maximumFractionDigits: digits }).format(km);
    return text(messages, 'kilometres', { n: n });
  }

  function minutes(hhmm) {
    var p = /^(\d\d):(\d\d)$/.exec(hhmm || '');
    return p ? Number(p[1]) * 60 + Number(p[2]) : null;
  }

  // The wall-clock time asked about: the filter's open_at, else now in the buyer's own time.
  function localTime(filter) {
    var at = filter && filter.open_at;
    var p = at && /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)$/.exec(at);
    var d = p ? new Date(Number(p[1]), Number(p[2]) - 1, Number(p[3]), Number(p[4]), Number(p[5])) : new Date();
    var pad = function (n) { return (n < 10 ? '0' : '') + n; };
    return {
      date: d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()),
      weekday: WEEKDAYS[d.getDay()],
      minute: d.getHours() * 60 + d.getMinutes()
    };
  }

  // The day's schedule at `when`, as the search decides it: a dated element first.
  function daySchedule(record, when) {
    var dated = (record.individual_schedule || []).filter(function (e) { return e.date === when.date; })[0];
    if (dated) return dated.is_works ? dated.schedule : null;
    var day = (record.working_schedule || []).filter(function (e) { return e.day === when.weekday; })[0];
    return day ? day.schedule : null;
  }

  // Open or not at `when`, and the day's hours (null: closed all day): the rule the server's search
  // applies (tests/data/open-cases.json holds the cases both are tested on).
  function dayState(record, when) {
    var s = daySchedule(record, when);
    if (!s) return { open: false, hours: null };
    var start = minutes(s.time_start), end = s.time_end === '24:00' ? 1440 : minutes(s.time_end);
    var br = s.break ? s.break.split('-') : null;
    var inBreak = br && when.minute >= minutes(br[0]) && when.minute < minutes(br[1]);
    return {
      open: when.minute >= start && when.minute < end && !inBreak,
      hours: { start: s.time_start, end: s.time_end, break: br }
    };
  }

  function hoursLine(messages, record, when) {
    var day = dayState(record, when);
    var state = text(messages, day.open ? 'openNow' : 'closedNow');
    if (!day.hours) {
      return { open: false, text: text(messages, 'stateClosedToday', { state: state, closedToday: text(messages, 'closedToday') }) };
    }
    var h = day.hours;
    var hours = h.break
      ? text(messages, 'hoursBreak', { start: h.start, end: h.end, breakStart: h.break[0], breakEnd: h.break[1] })
      : text(messages, 'hours', { start: h.start, end: h.end });
    return { open: day.open, text: text(messages, 'stateToday', { state: state, today: text(messages, 'today'), hours: hours }) };
  }

  function niceLength(max) {
    var steps = [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000];
    for (var i = steps.length - 1; i >= 0; i--) if (steps[i] <= max) return steps[i];
    return steps[0];
  }

  function Picker(element, options) {
    if (!element || !element.nodeType) throw new TypeError('StorefrontPickup.mount: an element is required');
    this.element = element;
    this.id = 'sp' + (++mounted);
    this.root = element.shadowRoot || element.attachShadow({ mode: 'open' });
    if (this.root.adoptedStyleSheets !== undefined && typeof CSSStyleSheet === 'function' && 'replaceSync' in CSSStyleSheet.prototype) {
      if (!sheet) { sheet = new CSSStyleSheet(); sheet.replaceSync(CSS); }
      this.root.adoptedStyleSheets = [sheet];
      this.root.replaceChildren();
    } else {
      this.root.replaceChildren(el('style', null, CSS));
    }
    this.build();
    this.set(options);
  }

  Picker.prototype.set = function (options) {
    options = options || {};
    if (!options.apiKey) throw new TypeError('StorefrontPickup: options.apiKey (a storefront key) is required');
    var near = options.near;
    if (!near || typeof near.latitude !== 'number' || typeof near.longitude !== 'number') {
      throw new TypeError('StorefrontPickup: options.near {latitude, longitude} is required');
    }
    this.options = options;
    this.locale = LOCALES[options.locale] ? options.locale : 'en';
    if (options.locale && !LOCALES[options.locale]) {
      console.warn('StorefrontPickup: locale ' + JSON.stringify(options.locale) + ' is not built in (en, ru): English is used.');
    }
    this.messages = Object.assign({}, LOCALES[this.locale], options.messages || {});
    this.base = (options.baseUrl || DEFAULT_BASE).replace(/\/+$/, '');
    this.more.textContent = text(this.messages, 'more');
    this.list.setAttribute('aria-label', text(this.messages, 'listLabel'));
    this.search(null);
  };

  Picker.prototype.build = function () {
    var self = this;
    var box = el('div', 'sp');
    this.status = el('p', 'sp-status');
    this.status.setAttribute('role', 'status');
    this.status.setAttribute('aria-live', 'polite');
    this.error = el('div', 'sp-error');
    this.error.setAttribute('role', 'alert');
    this.error.hidden = true;
    var body = el('div', 'sp-body');
    var side = el('div', 'sp-side');
    this.list = el('ul', 'sp-list');
    this.list.id = this.id + '-list';
    this.list.setAttribute('role', 'listbox');
    this.list.tabIndex = 0;
    this.more = el('button', 'sp-more');
    this.more.type = 'button';
    this.more.hidden = true;
    this.plan = el('div', 'sp-plan');
    side.append(this.list, this.more);
    body.append(side, this.plan);
    box.append(this.status, this.error, body);
    this.root.append(box);

    this.onKey = function (e) { self.key(e); };
    this.onClick = function (e) {
      var option = e.target.closest && e.target.closest('[role=option]');
      if (option) { self.activate(Number(option.dataset.index)); self.pick(Number(option.dataset.index)); }
    };
    this.onFocus = function () { if (self.active < 0 && self.records.length) self.activate(0); };
    this.onMore = function () { self.search(self.cursor); };
    this.list.addEventListener('keydown', this.onKey);
    this.list.addEventListener('click', this.onClick);
    this.list.addEventListener('focus', this.onFocus);
    this.more.addEventListener('click', this.onMore);
  };

  Picker.prototype.search = function (cursor) {
    var self = this, o = this.options;
    if (this.aborter) this.aborter.abort();
    var aborter = this.aborter = new AbortController();
    if (!cursor) {
      this.records = [];
      this.distances = [];
      this.active = -1;
      this.picked = -1;
      this.list.replaceChildren();
      this.list.removeAttribute('aria-activedescendant');
      this.plan.replaceChildren();
    }
    this.error.hidden = true;
    this.more.hidden = true;
    this.status.textContent = text(this.messages, 'loading');
    this.list.setAttribute('aria-busy', 'true');
    var body = { near: { latitude: o.near.latitude, longitude: o.near.longitude } };
    if (o.radius_m != null) body.radius_m = o.radius_m;
    if (o.filter) body.filter = o.filter;
    body.pagination = { limit: o.limit || DEFAULTS.limit };
    if (cursor) body.pagination.cursor = cursor;
    fetch(this.base + '/v1/location/search', {
      method: 'POST',
      headers: { 'Authorization': 'Bearer ' + o.apiKey, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
      signal: aborter.signal,
      credentials: 'omit',
      referrerPolicy: 'strict-origin'
    }).then(function (response) {
      return response.json().catch(function () { return null; }).then(function (json) {
        if (aborter.signal.aborted) return;
        if (!response.ok || !json) return self.fail(response.status, response.headers.get('Retry-After'));
        self.show(json, !cursor);
      });
    }, function (e) {
      if (aborter.signal.aborted) return;
      // A browser tells a page neither why a request got no answer nor whether the service refused
      // the page's origin: the shop's developer is told both possible causes, the buyer a calm sentence.
      console.warn('StorefrontPickup: the search at ' + self.base + ' got no answer (' + e + '). Either the network '
        + 'or the service is down, or the service refused this page\'s origin ' + location.origin + ': the storefront key '
        + 'must allow it (its allowed_origins), or the service must be started with --cors-origin ' + location.origin + '.');
      self.fail(0, null);
    });
  };

  Picker.prototype.fail = function (status, retryAfter) {
    var self = this, m = this.messages;
    this.list.removeAttribute('aria-busy');
    var message = status === 401 || status === 403 ? text(m, 'errorKey')
      : status === 429 ? text(m, 'errorBusy', { seconds: Number(retryAfter) || 1 })
        : status === 400 ? text(m, 'errorRequest')
          : text(m, 'errorNetwork');
    this.status.textContent = '';
    this.error.replaceChildren(el('span', null, message));
    if (status !== 401 && status !== 403 && status !== 400) {
      var retry = el('button', 'sp-retry', text(m, 'retry'));
      retry.type = 'button';
      retry.addEventListener('click', function () { self.search(self.records.length ? self.cursor : null); });
      this.error.append(retry);
    }
    this.error.hidden = false;
    this.more.hidden = !this.cursor || !this.records.length;
  };

  Picker.prototype.show = function (answer, first) {
    var m = this.messages, when = localTime(this.options.filter), before = this.records.length;
    var results = answer.results || [], count;
    for (var i = 0; i < results.length; i++) {
      var index = this.records.length;
      this.records.push(results[i].location);
      this.distances.push(results[i].distance_m);
      this.list.append(this.option(index, results[i], when));
    }
    count = this.records.length;
    this.cursor = answer.pagination && answer.pagination.has_next ? answer.pagination.next_cursor : null;
    var wasOnMore = this.root.activeElement === this.more;
    this.more.hidden = !this.cursor;
    if (wasOnMore && !this.cursor && count > before) {
      this.list.focus();
      this.activate(before);
    }
    this.list.removeAttribute('aria-busy');
    this.status.textContent = !count
      ? text(m, 'none', { distance: distance(m, this.options.radius_m == null ? DEFAULTS.radius_m : this.options.radius_m, this.locale) })
      : first ? text(m, 'found', { count: count })
        : text(m, 'foundMore', { count: count - before, total: count });
    this.draw();
  };

  Picker.prototype.option = function (index, result, when) {
    var m = this.messages, r = result.location;
    var li = el('li', 'sp-opt');
    li.id = this.id + '-o' + index;
    li.setAttribute('role', 'option');
    li.setAttribute('aria-selected', 'false');
    li.dataset.index = index;
    li.dataset.locationId = r.location_id;
    li.dataset.distance = result.distance_m;
    var num = el('span', 'sp-num', String(index + 1));
    num.setAttribute('aria-hidden', 'true');
    li.append(num, el('span', 'sp-name', r.name), el('span', 'sp-dist', distance(m, result.distance_m, this.locale)));
    var kind = r.pickup_point_type ? text(m, r.pickup_point_type) : '';
    var place = kind && r.address_tail ? text(m, 'kindAndAddress', { kind: kind, address: r.address_tail }) : kind || r.address_tail;
    if (place) li.append(el('span', 'sp-line', place));
    var hours = hoursLine(m, r, when);
    var line = el('span', 'sp-line');
    line.append(el('span', hours.open ? 'sp-open' : 'sp-closed', hours.text));
    li.append(line);
    var extras = [];
    if (r.payment_methods && r.payment_methods.length) {
      extras.push(text(m, 'payment', { methods: r.payment_methods.map(function (p) { return text(m, p); }).join(', ') }));
    }
    if ((r.pickup_services || []).indexOf('FITTING') >= 0) extras.push(text(m, 'fitting'));
    if (r.is_accepts_returns) extras.push(text(m, 'returns'));
    if (extras.length) li.append(el('span', 'sp-line', extras.join(text(m, 'listJoin'))));
    if (r.instruction) li.append(el('span', 'sp-line', r.instruction));
    return li;
  };

  Picker.prototype.options_ = function () {
    return this.list.querySelectorAll('[role=option]');
  };

  Picker.prototype.activate = function (index) {
    var all = this.options_();
    if (!all.length) return;
    index = Math.max(0, Math.min(all.length - 1, index));
    if (this.active >= 0 && all[this.active]) all[this.active].classList.remove('active');
    this.active = index;
    all[index].classList.add('active');
    this.list.setAttribute('aria-activedescendant', all[index].id);
    all[index].scrollIntoView({ block: 'nearest' });
    this.mark();
  };

  Picker.prototype.pick = function (index) {
    var all = this.options_();
    if (!all[index]) return;
    if (this.picked >= 0 && all[this.picked]) all[this.picked].setAttribute('aria-selected', 'false');
    this.picked = index;
    all[index].setAttribute('aria-selected', 'true');
    var record = this.records[index];
    this.status.textContent = text(this.messages, 'picked', { name: record.name, address: record.address_tail || '' });
    this.mark();
    this.element.dispatchEvent(new CustomEvent('storefront:pickup', { detail: record, bubbles: true, composed: true }));
  };

  Picker.prototype.key = function (e) {
    var n = this.records.length;
    if (!n) return;
    var page = 5;
    switch (e.key) {
      case 'ArrowDown': this.activate(this.active + 1); break;
      case 'ArrowUp': this.activate(this.active - 1); break;
      case 'Home': this.activate(0); break;
      case 'End': this.activate(n - 1); break;
      case 'PageDown': this.activate(this.active + page); break;
      case 'PageUp': this.activate(this.active - page); break;
      case 'Enter': case ' ': if (this.active >= 0) this.pick(this.active); break;
      default: return;
    }
    e.preventDefault();
  };

  // The plan: the buyer at the centre, each point at its bearing and distance (an equirectangular
  // projection, true enough within a city), spanning the radius or the farthest point shown.
  Picker.prototype.draw = function () {
    var self = this, m = this.messages, o = this.options;
    this.plan.replaceChildren();
    if (!this.records.length) return;
    var radius = o.radius_m == null ? DEFAULTS.radius_m : o.radius_m;
    var far = Math.max.apply(null, this.distances.concat([50]));
    var span = Math.min(radius, far * 1.15);
    var size = 200, half = size / 2, scale = (half - 12) / span;
    var lat0 = o.near.latitude, lon0 = o.near.longitude, kx = Math.cos(lat0 * Math.PI / 180);
    var root = svg('svg', { viewBox: '0 0 ' + size + ' ' + size, role: 'img' });
    root.setAttribute('aria-label', text(m, 'planLabel', { count: this.records.length }));
    var title = svg('title', {});
    title.textContent = text(m, 'planLabel', { count: this.records.length });
    root.append(title);
    if (radius * scale <= half) root.append(svg('circle', { class: 'sp-ring', cx: half, cy: half, r: radius * scale }));
    this.dots = [];
    for (var i = this.records.length - 1; i >= 0; i--) {
      var r = this.records[i];
      var dlon = ((r.longitude - lon0 + 540) % 360) - 180;
      var x = half + dlon * kx * 111320 * scale, y = half - (r.latitude - lat0) * 110574 * scale;
      var g = svg('g', { 'data-index': i });
      var dot = svg('circle', { class: 'sp-dot', cx: x.toFixed(1), cy: y.toFixed(1), r: 6.5 });
      var label = svg('text', { class: 'sp-label', x: x.toFixed(1), y: (y + 2.8).toFixed(1) });
      label.textContent = String(i + 1);
      g.append(dot, label);
      g.addEventListener('click', (function (index) {
        return function () { self.activate(index); self.pick(index); };
      })(i));
      root.append(g);
      this.dots[i] = dot;
    }
    root.append(svg('circle', { class: 'sp-me', cx: half, cy: half, r: 5 }));
    root.append(svg('circle', { class: 'sp-me', cx: size - 8, cy: size - 13, r: 3.5 }));
    var legend = svg('text', { class: 'sp-legend', x: size - 15, y: size - 10 });
    legend.textContent = text(m, 'planYou');
    root.append(legend);
    var bar = niceLength(span * 0.5), px = bar * scale, y0 = size - 10;
    root.append(svg('path', { class: 'sp-scale', d: 'M8 ' + (y0 - 3) + 'V' + y0 + 'H' + (8 + px).toFixed(1) + 'V' + (y0 - 3) }));
    var caption = svg('text', { class: 'sp-scale-text', x: 8, y: y0 - 5 });
    caption.textContent = distance(m, bar, this.locale);
    root.append(caption);
    this.plan.append(root);
    this.mark();
  };

  Picker.prototype.mark = function () {
    if (!this.dots) return;
    for (var i = 0; i < this.dots.length; i++) {
      if (!this.dots[i]) continue;
      this.dots[i].classList.toggle('active', i === this.active);
      this.dots[i].classList.toggle('picked', i === this.picked);
    }
  };

  Picker.prototype.destroy = function () {
    if (this.aborter) this.aborter.abort();
    this.list.removeEventListener('keydown', this.onKey);
    this.list.removeEventListener('click', this.onClick);
    this.list.removeEventListener('focus', this.onFocus);
    this.more.removeEventListener('click', this.onMore);
    this.root.replaceChildren();
  };

  window.StorefrontPickup = {
    // The search's opening-hours rule as the widget applies it: {open, hours: {start, end, break} | null} of a
    // record at `openAt` (`YYYY-MM-DDTHH:MM`, the buyer's wall-clock time; now when left out).
    openAt: function (record, openAt) {
      return dayState(record, localTime({ open_at: openAt }));
    },
    mount: function (element, options) {
      var picker = new Picker(element, options);
      return {
        update: function (changed) { picker.set(Object.assign({}, picker.options, changed || {})); },
        destroy: function () { picker.destroy(); }
      };
    }
  };
})();
