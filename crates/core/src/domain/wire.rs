//! Closed sets of wire words (enumerations that cross the wire).

/// A closed set of wire words, declared with [`wire_enum!`](crate::wire_enum).
pub trait WireEnum: Copy + Ord + 'static {
    /// Every value, in declaration order.
    fn all() -> &'static [Self];
    /// Parses the exact (case-sensitive) wire word.
    fn parse_wire(s: &str) -> Option<Self>;
    /// The word on the wire.
    fn wire(self) -> &'static str;

    /// `A, B, C`, for messages.
    fn listing() -> String {
        Self::all().iter().map(|v| v.wire()).collect::<Vec<_>>().join(", ")
    }
}

/// Declares a closed set of wire words: the enum, its wire spelling (`as_str`), `ALL`, parsing
/// (`from_wire`), `Display`, `Serialize` and [`WireEnum`]. Every enumeration that crosses the wire
/// is declared with it, so each wire word is written exactly once in the code base.
#[macro_export]
macro_rules! wire_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($variant:ident => $wire:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name { $($variant),+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The word on the wire.
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $wire),+ }
            }

            /// Parses the exact (case-sensitive) wire word.
            pub fn from_wire(s: &str) -> Option<Self> {
                match s { $($wire => Some($name::$variant),)+ _ => None }
            }
        }

        impl $crate::domain::wire::WireEnum for $name {
            fn all() -> &'static [Self] { Self::ALL }
            fn parse_wire(s: &str) -> Option<Self> { Self::from_wire(s) }
            fn wire(self) -> &'static str { self.as_str() }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(d)?;
                Self::from_wire(&s).ok_or_else(|| ::serde::de::Error::custom(format!("unknown value {s:?}")))
            }
        }

        /// The OpenAPI schema: a string enumeration of exactly these wire words.
        impl ::utoipa::PartialSchema for $name {
            fn schema() -> ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema> {
                ::utoipa::openapi::ObjectBuilder::new()
                    .schema_type(::utoipa::openapi::schema::Type::String)
                    .enum_values(Some([$($wire),+]))
                    .into()
            }
        }

        impl ::utoipa::ToSchema for $name {}
    };
}

/// What a list answer says of how many match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Total {
    /// No `total` key (a search).
    Absent,
    /// `total`: the count, or `null` where counting would mean reading everything that matches.
    Of(Option<u64>),
}

/// The end of a list answer: `],"pagination":{"next_cursor":…,"has_next":…,"total":…}}`.
/// `next_cursor` is base64url: nothing in it needs escaping.
pub fn answer_tail(next_cursor: Option<&str>, total: Total) -> Vec<u8> {
    let mut tail = Vec::with_capacity(160);
    tail.extend_from_slice(br#"],"pagination":{"next_cursor":"#);
    match next_cursor {
        Some(cursor) => {
            tail.push(b'"');
            tail.extend_from_slice(cursor.as_bytes());
            tail.push(b'"');
        }
        None => tail.extend_from_slice(b"null"),
    }
    tail.extend_from_slice(br#","has_next":"#);
    tail.extend_from_slice(if next_cursor.is_some() { b"true" } else { b"false" });
    if let Total::Of(total) = total {
        tail.extend_from_slice(br#","total":"#);
        match total {
            Some(n) => tail.extend_from_slice(n.to_string().as_bytes()),
            None => tail.extend_from_slice(b"null"),
        }
    }
    tail.extend_from_slice(b"}}");
    tail
}

/// [`timestamp`] as text, the way every answer writes a time.
pub fn timestamp_text(ms: i64) -> String {
    String::from_utf8_lossy(&timestamp(ms)).into_owned()
}

/// Unix milliseconds as RFC 3339 UTC with milliseconds: `2026-11-22T09:30:00.123Z`.
pub fn timestamp(ms: i64) -> [u8; 24] {
    const DAY_MS: i64 = 86_400_000;
    /// The Julian day number of 1970-01-01.
    const UNIX_EPOCH_DAY: i64 = 2_440_588;
    let mut out = *b"1970-01-01T00:00:00.000Z";
    let date = i32::try_from(ms.div_euclid(DAY_MS) + UNIX_EPOCH_DAY)
        .ok()
        .and_then(|day| time::Date::from_julian_day(day).ok());
    let Some(date) = date else {
        return out;
    };
    let mut put = |at: usize, width: usize, mut n: u32| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    let (year, month, day) = date.to_calendar_date();
    put(0, 4, year.clamp(0, 9999).unsigned_abs());
    put(5, 2, u32::from(u8::from(month)));
    put(8, 2, u32::from(day));
    // Within a day: below 86,400,000, so it fits.
    let in_day = u32::try_from(ms.rem_euclid(DAY_MS)).unwrap_or(0);
    put(11, 2, in_day / 3_600_000);
    put(14, 2, in_day / 60_000 % 60);
    put(17, 2, in_day / 1000 % 60);
    put(20, 3, in_day % 1000);
    out
}

/// An RFC 3339 time with an offset (`2026-11-22T09:30:00Z`, `2026-11-22T12:30:00+03:00`) as
/// Unix milliseconds; none for anything else.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    let at = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).ok()
}

/// The first 16 bytes of a SHA-256: the digest a cursor carries of the question it was issued for
/// (its merchant and filter), so that it is bound to them.
pub fn digest16(h: sha2::Sha256) -> [u8; 16] {
    use sha2::Digest;
    let full = h.finalize();
    let mut digest = [0u8; 16];
    digest.copy_from_slice(&full[..16]);
    digest
}
