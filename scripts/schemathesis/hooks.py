"""Schemathesis hooks for the Storefront Catalog Service.

A list cursor is a token the server issues and signs; no schema can describe which strings are
valid ones, so a made-up string cursor is rightly refused (400 INVALID_CURSOR) even though it is
schema-valid. This hook keeps schemathesis from sending *made-up string* cursors, in every phase;
cursors of the wrong type still go through (and must get 400), and every check stays on.
"""

import schemathesis


@schemathesis.hook
def before_call(ctx, case, kwargs):
    if case.operation.path not in ("/v1/categories/list", "/v1/location/list") or not isinstance(case.body, dict):
        return
    pagination = case.body.get("pagination")
    if isinstance(pagination, dict) and isinstance(pagination.get("cursor"), str) and pagination["cursor"]:
        pagination = dict(pagination)
        del pagination["cursor"]
        case.body = dict(case.body, pagination=pagination)
