//! The rules a client needs, in the OpenAPI document's own descriptions (so `/docs` and
//! `docs/api.md` show them): every field of a location with its rule and the code that breaks it,
//! the fields each location type allows and requires, the storefront rules, and what each field
//! code and request-level code means. The checks themselves are in `domain::location`; this is
//! their documentation, kept beside the document it is written into.

use serde_json::{Value, json};

use crate::domain::location::{LocationType, TypeSet, schema};

/// The location input's own description: the rules every field shares, by type, and across fields.
const LOCATION_INPUT: &str = "\
A location. Every error of an item is reported (at most 50, at most one per field, in field order), \
each with the full path of the field (`locations[3].limits.weight`) and one of the field codes \
(FieldCode); an item with any error is not stored (`FAILED`).

Rules every field shares: a value of the wrong JSON type is `INVALID_TYPE` (its inner checks are \
skipped); a required field that is absent, a required string that is empty or only white space, or \
a required array that is empty is `REQUIRED`; a key the location does not define is \
`SCHEMA_MISMATCH`; a string over its length (counted in Unicode characters) or holding a control \
character (`comment` and `instruction` may hold line feeds and tabs) is `INVALID_FORMAT`; an \
enumeration's value that is not one of its words (exact, case-sensitive) is `INVALID_ENUM`, an \
element repeated in an array is `INVALID_FORMAT` at the repeat; an array over its length is \
`TOO_MANY_ITEMS`.

Fields by location type (W = WAREHOUSE, P = PICKUP_POINT, C = CLICK_AND_COLLECT; a field is allowed \
when one of the item's types allows it, required when one requires it). A field given that no type \
of the item allows is `SCHEMA_MISMATCH`; one a type requires that is absent is \
`CONDITIONALLY_REQUIRED`.

| field | allowed for | required for |
|---|---|---|
| `address_tail` | W P C | P C |
| `provider_id`, `provider_location_id` | P | each when the other is given |
| `pickup_point_type` | P | P |
| `payment_methods` | P C | P C |
| `storage_period_days` | P C | P C |
| `instruction`, `pickup_services` | P C | none |
| `shipping_cutoff` in any schedule | W C | none |

Storefront rules (`STOREFRONT_RULE_VIOLATION`; the item is not stored): a CLICK_AND_COLLECT point \
must also be a WAREHOUSE (at `location_types`); a POSTAMAT takes no `CASH` (at `payment_methods`) \
and offers no `FITTING` (at `pickup_services`); latitude 0 with longitude 0 is a placeholder (at \
`latitude`); a merchant may have at most 100 other live locations within 50 m of one it stores \
(at `latitude`).

Quarantine (the item is stored, in `QUARANTINE`, with one `STOREFRONT_RULE_VIOLATION` at \
`latitude` in its result): the merchant already has a live location (`ACTIVE` or `QUARANTINE`, or \
an earlier item of the request) of a shared type within 50 m; the message names the nearest.";

/// Each field's rule and the codes that break it (the shared rules above apply besides).
const LOCATION_FIELDS: [(&str, &str); 18] = [
    (
        "merchant_location_id",
        "Your id of the location, unique per merchant: a create sent again with the same id and \
         content answers the stored location (a safe retry); other content under a used id is \
         `CONFLICT`. Items of one request with the same id: the last one wins, the earlier ones are \
         `CONFLICT`. Too long: `INVALID_FORMAT`.",
    ),
    (
        "location_types",
        "Required, non-empty; each of `WAREHOUSE`, `PICKUP_POINT`, `CLICK_AND_COLLECT` \
         (`INVALID_ENUM` at `location_types[k]`), none repeated (`INVALID_FORMAT`). Fixed at \
         creation: an update that changes it is `CONFLICT`.",
    ),
    ("name", "Required; too long: `INVALID_FORMAT`."),
    (
        "address_tail",
        "`postal code, country, city, street, building[, entrance[, floor[, flat]]]`: 5 to 8 \
         comma-separated parts, each trimmed. Postal code: 3 to 10 letters, digits, spaces or `-`, \
         with a digit; country, city and street each with a letter; building not empty; entrance, \
         floor and flat may be empty, and a floor is an integer from -5 to 200. Anything else is \
         `INVALID_ADDRESS_FORMAT`, its message naming the part (too long: `INVALID_FORMAT`). Required for \
         PICKUP_POINT and CLICK_AND_COLLECT (`CONDITIONALLY_REQUIRED`).",
    ),
    ("comment", "Free text; too long: `INVALID_FORMAT`."),
    (
        "latitude",
        "Required; out of range: `INVALID_LATITUDE`. With longitude, where quarantine and the \
         50 m rules measure from.",
    ),
    ("longitude", "Required; out of range: `INVALID_LONGITUDE`."),
    (
        "provider_id",
        "`PROVIDER_1` to `PROVIDER_16` (`INVALID_ENUM`); PICKUP_POINT only; given with \
         `provider_location_id` (`CONDITIONALLY_REQUIRED` when one is missing).",
    ),
    (
        "provider_location_id",
        "The provider's id of the point; PICKUP_POINT only, with `provider_id`.",
    ),
    (
        "pickup_point_type",
        "`PICKUP_POINT` or `POSTAMAT` (`INVALID_ENUM`); required for PICKUP_POINT.",
    ),
    (
        "payment_methods",
        "Each of `ALREADY_PAID`, `CARD`, `CASH` (`INVALID_ENUM` at `[k]`), none repeated; required \
         for PICKUP_POINT and CLICK_AND_COLLECT; a POSTAMAT takes no `CASH` \
         (`STOREFRONT_RULE_VIOLATION`).",
    ),
    (
        "storage_period_days",
        "Days an order is kept for the buyer: an integer (`7.0` is 7; a fraction is \
         `INVALID_TYPE`), below 0 `NEGATIVE_VALUE`, 0 `MIN_VALUE`, over 90 `MAX_VALUE`; required for \
         PICKUP_POINT and CLICK_AND_COLLECT.",
    ),
    (
        "limits",
        "Required: the largest order the location takes. Each of `length`, `width`, `height` (cm) \
         and `weight` (kg) is a required number: below 0 `NEGATIVE_VALUE`, 0 `MIN_VALUE`, over 1000 cm \
         or 10000 kg `MAX_VALUE`.",
    ),
    (
        "instruction",
        "How to find the point; PICKUP_POINT and CLICK_AND_COLLECT only.",
    ),
    (
        "pickup_services",
        "`FITTING` (`INVALID_ENUM` at `[k]`); PICKUP_POINT and CLICK_AND_COLLECT only; a POSTAMAT \
         offers no `FITTING` (`STOREFRONT_RULE_VIOLATION`).",
    ),
    (
        "working_schedule",
        "Required: the weekly hours (more than 7 days: `TOO_MANY_ITEMS`), each day at most once \
         (`INVALID_FORMAT` at the repeat's `.day`); a day not listed is closed.",
    ),
    (
        "individual_schedule",
        "Dated exceptions to the weekly hours (more: `TOO_MANY_ITEMS`), each date at most once \
         (`INVALID_FORMAT` at the repeat).",
    ),
    ("is_accepts_returns", "Required: whether buyers may return orders here."),
];

const SCHEDULE_FIELDS: [(&str, &str); 4] = [
    (
        "time_start",
        "Required; `HH:MM`, 00:00 to 23:59, two digits each (`INVALID_TIME`).",
    ),
    (
        "time_end",
        "Required; `HH:MM` or `24:00` (the end of the day) (`INVALID_TIME`); after `time_start` \
         (`INVALID_TIME_RANGE` here).",
    ),
    (
        "break",
        "`HH:MM-HH:MM` without spaces (`INVALID_TIME`), its start before its end and both within \
         `time_start`..`time_end` (`INVALID_TIME_RANGE`); empty or absent: no break.",
    ),
    (
        "shipping_cutoff",
        "`HH:MM` (`INVALID_TIME`) within `time_start`..`time_end` (`INVALID_TIME_RANGE`): orders \
         after it ship the next working day; empty or absent: none. WAREHOUSE and CLICK_AND_COLLECT \
         only (`SCHEMA_MISMATCH`).",
    ),
];

const FIELD_CODES: &str = "\
The code of one error of one field of an item (in its result's `errors`; the request is answered \
200):

- `REQUIRED`: a required field absent, or empty where it may not be.
- `CONDITIONALLY_REQUIRED`: a field one of the item's location types requires is absent.
- `REQUIRED_ONE_OF`: an item names its location by neither `location_id` nor `merchant_location_id`.
- `INVALID_TYPE`: a value of the wrong JSON type (a fraction where an integer is due).
- `INVALID_FORMAT`: a string too long or with a control character, a repeated element, a date \
  that is not a real `YYYY-MM-DD`.
- `INVALID_ENUM`: not one of the enumeration's words.
- `INVALID_TIME`: a time that is not `HH:MM` (or `HH:MM-HH:MM` for a break).
- `INVALID_TIME_RANGE`: times in the wrong order, or a break or cut-off outside the day's hours.
- `INVALID_ADDRESS_FORMAT`: an `address_tail` that does not follow its template.
- `INVALID_LATITUDE`, `INVALID_LONGITUDE`: coordinates out of range.
- `SCHEMA_MISMATCH`: a key the location does not define, or one its types do not allow.
- `NEGATIVE_VALUE`, `MIN_VALUE`, `MAX_VALUE`: a number below 0, at 0, or over its maximum.
- `TOO_MANY_ITEMS`: an array over its length.
- `NOT_FOUND`: an update, archive or restore names a location the merchant does not have.
- `CONFLICT`: another location's `merchant_location_id`, a changed `location_types` or \
  `merchant_location_id`, an `expected_version` that is not the stored one, an archived location \
  updated, an earlier item superseded by a later one with the same `merchant_location_id`.
- `STOREFRONT_RULE_VIOLATION`: a storefront rule, or (in a stored item's result) why it is in \
  `QUARANTINE`.";

const ERROR_CODES: &str = "\
The code of a request-level error (the whole request refused, nothing stored):

| HTTP | code | when |
|---|---|---|
| 400 | `UNSUPPORTED_MEDIA_TYPE` | `Content-Type` missing, not `application/json`, or sent twice; a `Content-Encoding` other than `identity` (send the body uncompressed) |
| 400 | `PAYLOAD_TOO_LARGE` | a body over 8 MiB, or of more than 1,000,000 JSON tokens |
| 400 | `MALFORMED_JSON` | not JSON; `details.line` and `details.column` say where |
| 400 | `INVALID_REQUEST` | JSON, but not the request's shape; `details.field` names the key |
| 400 | `TOO_MANY_ITEMS` | more than 200 locations, or 1000 ids; `details.max` and `details.actual` |
| 400 | `INVALID_FILTER` | a filter key unknown, or of the wrong type or value |
| 400 | `INVALID_PAGINATION` | `pagination` without `limit`, a `limit` not an integer or below 1 |
| 400 | `INVALID_CURSOR` | a cursor not issued by this service, altered, or sent with another filter |
| 400 | `CURSOR_EXPIRED` | a feed cursor older than the oldest event kept: start again from `latest` |
| 400 | `NOT_FOUND` | a webhook operation naming an endpoint or an event the merchant does not have; `details.field` names it |
| 401 | `UNAUTHENTICATED` | no `Authorization: Bearer` header, or more than one |
| 401 | `INVALID_API_KEY` | an unknown or revoked key |
| 403 | `FORBIDDEN` | a storefront key calling what its scope does not allow; a preflight from an origin not allowed |
| 404 | `NOT_FOUND` | no such path |
| 405 | `METHOD_NOT_ALLOWED` | not `POST` |
| 408 | `REQUEST_TIMEOUT` | the body paused for 10 s, or was not complete within 30 s |
| 429 | `RATE_LIMITED` | over the merchant's rate, or a wait that did not end in time (an endpoint's attempts in flight; a merchant's lists filtered by `text`, which run one at a time): wait `Retry-After` seconds (`details.retry_after_ms`) |
| 500 | `INTERNAL` | anything unexpected; nothing of the request is stored, then or later; `details.request_id` |
| 503 | `OUTCOME_UNKNOWN` | the connection to PostgreSQL broke during the commit: it may be stored; resend it (a create by `merchant_location_id` is safe to resend) |";

/// Writes the rules into `doc`'s schemas.
pub fn describe(doc: &mut Value) {
    let mut put = |pointer: &str, text: &str| {
        if let Some(Value::Object(at)) = doc.pointer_mut(pointer) {
            at.insert("description".to_owned(), Value::String(text.to_owned()));
        }
    };
    put("/components/schemas/LocationInput", LOCATION_INPUT);
    for (field, rule) in LOCATION_FIELDS {
        put(&format!("/components/schemas/LocationInput/properties/{field}"), rule);
    }
    for (field, rule) in SCHEDULE_FIELDS {
        put(
            &format!("/components/schemas/DayScheduleInput/properties/{field}"),
            rule,
        );
    }
    put(
        "/components/schemas/WorkingDayInput/properties/day",
        "Required; `MONDAY` to `SUNDAY` (`INVALID_ENUM`).",
    );
    put(
        "/components/schemas/WorkingDayInput/properties/schedule",
        "Required: that day's hours.",
    );
    put(
        "/components/schemas/DatedDayInput/properties/schedule",
        "Required: that date's hours.",
    );
    put(
        "/components/schemas/DatedDayInput/properties/date",
        "Required; `YYYY-MM-DD`, a real calendar date (`INVALID_FORMAT`).",
    );
    put(
        "/components/schemas/DatedDayInput/properties/is_works",
        "Required: `false` when the location is closed that day.",
    );
    put(
        "/components/schemas/PaginationRequest/properties/cursor",
        "`next_cursor` of the previous page, sent with the same filter; empty or absent for the \
         first page. A cursor is bound to its merchant and its filter: another filter, another \
         merchant's cursor or an altered one is `INVALID_CURSOR`. A walk of the location list \
         returns every location that matched when it began exactly once; those created meanwhile \
         come at its end. Cursors survive restarts and work on every instance.",
    );
    put("/components/schemas/FieldCode", FIELD_CODES);
    put("/components/schemas/ErrorCode", ERROR_CODES);
    mark_for_forms(doc);
}

/// What a form needs beyond the JSON Schema, as extensions: the order people read the fields in
/// (`x-field-order`: the record's order, where JSON objects have none), the location types that
/// allow and require each field whose presence depends on them (`x-location-types`), and the
/// unit of each limit (`x-unit`).
fn mark_for_forms(doc: &mut Value) {
    let limits = ["length", "width", "height", "weight"];
    let orders = [
        (
            "LocationInput",
            LOCATION_FIELDS.iter().map(|(key, _)| *key).collect::<Vec<_>>(),
        ),
        (
            "DayScheduleInput",
            SCHEDULE_FIELDS.iter().map(|(key, _)| *key).collect(),
        ),
        ("LimitsInput", limits.to_vec()),
    ];
    for (at, order) in orders {
        if let Some(Value::Object(schema)) = doc.pointer_mut(&format!("/components/schemas/{at}")) {
            schema.insert("x-field-order".to_owned(), json!(order));
        }
    }
    let names = |types: TypeSet| -> Vec<&str> { types.iter().map(LocationType::as_str).collect() };
    for (key, presence) in schema::BY_KEY {
        let marks = json!({"allowed": names(presence.allowed), "required": names(presence.required)});
        for at in ["LocationInput", "DayScheduleInput"] {
            if let Some(Value::Object(field)) = doc.pointer_mut(&format!("/components/schemas/{at}/properties/{key}")) {
                field.insert("x-location-types".to_owned(), marks.clone());
            }
        }
    }
    for (key, unit) in limits.into_iter().zip(["cm", "cm", "cm", "kg"]) {
        if let Some(Value::Object(field)) =
            doc.pointer_mut(&format!("/components/schemas/LimitsInput/properties/{key}"))
        {
            field.insert("x-unit".to_owned(), json!(unit));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::Value;

    #[test]
    fn every_field_a_form_shows_has_its_place_in_the_order() {
        let doc = super::super::openapi::document();
        for at in ["LocationInput", "DayScheduleInput", "LimitsInput"] {
            let schema = &doc["components"]["schemas"][at];
            let keys = |v: &Value| -> BTreeSet<String> {
                v.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default()
            };
            let order: BTreeSet<String> = schema["x-field-order"]
                .as_array()
                .map(|a| a.iter().filter_map(|k| k.as_str().map(str::to_owned)).collect())
                .unwrap_or_default();
            assert_eq!(order, keys(&schema["properties"]), "{at}");
        }
    }
}
