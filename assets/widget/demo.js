// The /widget/ page: reads the form, mounts the widget once and updates it on every submit.
// A key in the address's fragment (#key=sf_…, as `serve --demo` prints it) fills the key field;
// a fragment never reaches the server's logs.
(function () {
  'use strict';
  var form = document.getElementById('ask');
  var error = document.getElementById('form-error');
  var picked = document.getElementById('picked');
  var target = document.getElementById('pickup');
  var widget = null;
  var fromHash = /(?:^#|&)key=([^&]+)/.exec(location.hash);
  if (fromHash) form.key.value = decodeURIComponent(fromHash[1]);

  function number(field) {
    var text = field.value.trim().replace(',', '.');
    return text === '' ? null : Number(text);
  }

  function options() {
    var lat = number(form.lat), lon = number(form.lon), radius = number(form.radius);
    if (lat === null || lon === null || isNaN(lat) || isNaN(lon)) throw new Error('Enter the buyer’s latitude and longitude as numbers.');
    var filter = {};
    if (form.at.value) filter.open_at = form.at.value.slice(0, 16);
    if (form.pay.value) filter.payment_method = form.pay.value;
    var sides = [number(form.len), number(form.wid), number(form.hei), number(form.kg)];
    if (sides.some(function (v) { return v !== null; })) {
      if (sides.some(function (v) { return v === null || isNaN(v) || v <= 0; })) throw new Error('Give all four parcel sizes as positive numbers, or none.');
      filter.parcel = { length: sides[0], width: sides[1], height: sides[2], weight: sides[3] };
    }
    return {
      apiKey: form.key.value.trim(),
      near: { latitude: lat, longitude: lon },
      radius_m: radius === null || isNaN(radius) ? null : radius,
      filter: filter,
      limit: 8
    };
  }

  function show(event) {
    event.preventDefault();
    error.textContent = '';
    if (!form.key.value.trim()) { error.textContent = 'Enter a storefront API key.'; form.key.focus(); return; }
    try {
      var o = options();
      if (widget) widget.update(o); else widget = window.StorefrontPickup.mount(target, o);
    } catch (e) {
      error.textContent = e.message;
    }
  }

  target.addEventListener('storefront:pickup', function (event) {
    picked.textContent = JSON.stringify(event.detail, null, 2);
  });
  form.addEventListener('submit', show);
  if (form.key.value) show(new Event('submit'));
})();
