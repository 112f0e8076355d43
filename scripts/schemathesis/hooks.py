"""Schemathesis hooks for the Storefront Catalog Service.

A list cursor is a token the server issues and signs; no schema can describe which strings are
valid ones, so a made-up string cursor is rightly refused (400 INVALID_CURSOR) even though it is
schema-valid. This hook keeps schemathesis from sending *made-up string* cursors, in every phase;
cursors of the wrong type still go through (and must get 400), and every check stays on.

Likewise a search's `filter.open_at` must be a real calendar date (CONTRACT §12.1): its pattern
says `YYYY-MM-DDTHH:MM`, which no pattern can narrow to real dates short of spelling out the
calendar, so a pattern-valid string that is not a real date (2026-02-30) is replaced by a real one.
"""

import datetime
import re

import schemathesis


@schemathesis.hook
def before_call(ctx, case, kwargs):
    if case.operation.path not in ("/v1/categories/list", "/v1/location/list", "/v1/location/search") \
            or not isinstance(case.body, dict):
        return
    search_filter = case.body.get("filter")
    if case.operation.path == "/v1/location/search" and isinstance(search_filter, dict):
        at = search_filter.get("open_at")
        if isinstance(at, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}T([01]\d|2[0-3]):[0-5]\d", at):
            try:
                datetime.date.fromisoformat(at[:10])
            except ValueError:
                case.body = dict(case.body, filter=dict(search_filter, open_at="2026-11-28" + at[10:]))
    pagination = case.body.get("pagination")
    if isinstance(pagination, dict) and isinstance(pagination.get("cursor"), str) and pagination["cursor"]:
        pagination = dict(pagination)
        del pagination["cursor"]
        case.body = dict(case.body, pagination=pagination)
