//! Every code the service answers with, in one catalogue: the field codes (inside
//! an item's `errors`), and the request-level codes with the HTTP status and the
//! `error_type` each is answered with. Each wire word is written here once, by
//! `wire_enum!`; the domain takes `FieldCode` from here, the HTTP layer `ErrorCode`.

use crate::wire_enum;

wire_enum! {
    /// The validation codes, the only codes a field error may carry.
    pub enum FieldCode {
        Required => "REQUIRED",
        InvalidType => "INVALID_TYPE",
        InvalidFormat => "INVALID_FORMAT",
        InvalidEnum => "INVALID_ENUM",
        RequiredOneOf => "REQUIRED_ONE_OF",
        ConditionallyRequired => "CONDITIONALLY_REQUIRED",
        InvalidTime => "INVALID_TIME",
        InvalidTimeRange => "INVALID_TIME_RANGE",
        InvalidAddressFormat => "INVALID_ADDRESS_FORMAT",
        InvalidLatitude => "INVALID_LATITUDE",
        InvalidLongitude => "INVALID_LONGITUDE",
        SchemaMismatch => "SCHEMA_MISMATCH",
        MinValue => "MIN_VALUE",
        MaxValue => "MAX_VALUE",
        NegativeValue => "NEGATIVE_VALUE",
        TooManyItems => "TOO_MANY_ITEMS",
        NotFound => "NOT_FOUND",
        Conflict => "CONFLICT",
        StorefrontRuleViolation => "STOREFRONT_RULE_VIOLATION",
    }
}

wire_enum! {
    /// The `error_type` of an answer that is not a 200.
    pub enum ErrorType {
        Unspecified => "ERROR_TYPE_UNSPECIFIED",
        Unauthorized => "ERROR_TYPE_UNAUTHORIZED",
        RateLimit => "ERROR_TYPE_RATE_LIMIT",
        Internal => "ERROR_TYPE_INTERNAL",
        BadRequest => "ERROR_TYPE_BAD_REQUEST",
    }
}

wire_enum! {
    /// Request-level `code`s. `TOO_MANY_ITEMS` is the same word as the field code of the same name
    /// (a test keeps them equal).
    pub enum ErrorCode {
        UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
        PayloadTooLarge => "PAYLOAD_TOO_LARGE",
        MalformedJson => "MALFORMED_JSON",
        InvalidRequest => "INVALID_REQUEST",
        TooManyItems => "TOO_MANY_ITEMS",
        InvalidFilter => "INVALID_FILTER",
        InvalidPagination => "INVALID_PAGINATION",
        InvalidCursor => "INVALID_CURSOR",
        CursorExpired => "CURSOR_EXPIRED",
        Unauthenticated => "UNAUTHENTICATED",
        InvalidApiKey => "INVALID_API_KEY",
        RateLimited => "RATE_LIMITED",
        Internal => "INTERNAL",
        RequestTimeout => "REQUEST_TIMEOUT",
        OutcomeUnknown => "OUTCOME_UNKNOWN",
        Forbidden => "FORBIDDEN",
        NotFound => "NOT_FOUND",
        MethodNotAllowed => "METHOD_NOT_ALLOWED",
    }
}

impl ErrorCode {
    /// The HTTP status the code is answered with.
    pub const fn status(self) -> u16 {
        use ErrorCode::*;
        match self {
            UnsupportedMediaType | PayloadTooLarge | MalformedJson | InvalidRequest | TooManyItems | InvalidFilter
            | InvalidPagination | InvalidCursor | CursorExpired => 400,
            RequestTimeout => 408,
            Unauthenticated | InvalidApiKey => 401,
            Forbidden => 403,
            OutcomeUnknown => 503,
            RateLimited => 429,
            Internal => 500,
            NotFound => 404,
            MethodNotAllowed => 405,
        }
    }

    /// Its `error_type`, by its status.
    pub const fn error_type(self) -> ErrorType {
        ErrorType::of_status(self.status())
    }
}

impl ErrorType {
    /// The `error_type` of an answer with this status.
    pub const fn of_status(status: u16) -> ErrorType {
        match status {
            400 | 408 => ErrorType::BadRequest,
            401 | 403 => ErrorType::Unauthorized,
            429 => ErrorType::RateLimit,
            500 | 503 => ErrorType::Internal,
            _ => ErrorType::Unspecified,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_level_too_many_items_is_the_field_word() {
        assert_eq!(ErrorCode::TooManyItems.as_str(), FieldCode::TooManyItems.as_str());
    }

    #[test]
    fn every_code_has_its_error_type() {
        assert_eq!(ErrorCode::MalformedJson.error_type(), ErrorType::BadRequest);
        assert_eq!(ErrorCode::InvalidApiKey.error_type(), ErrorType::Unauthorized);
        assert_eq!(ErrorCode::RateLimited.error_type(), ErrorType::RateLimit);
        assert_eq!(ErrorCode::Internal.error_type(), ErrorType::Internal);
        assert_eq!(ErrorCode::NotFound.error_type(), ErrorType::Unspecified);
        assert_eq!(ErrorCode::MethodNotAllowed.error_type(), ErrorType::Unspecified);
    }
}
