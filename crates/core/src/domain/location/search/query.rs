//! What a search asks, normalised: the buyer's point, the radius, the filter and
//! what the index tests of it, the page's size and where it continues; and the digest a cursor is
//! bound to.

use sha2::{Digest, Sha256};

use super::super::{PaymentMethod, PickupPointType, PickupService, TypeSet, Weekday};
use super::key::{self, TYPE_BITS, payment_bit, pickup_point_type_bit, returns_bit, service_bit, sorted_sides};

/// Default `radius_m`.
pub const DEFAULT_RADIUS_M: u32 = 5000;
/// Largest `radius_m`.
pub const MAX_RADIUS_M: u32 = 50_000;
/// `pagination.limit` when `pagination` is not sent.
pub const DEFAULT_LIMIT: usize = 20;
/// A larger `pagination.limit` is served as this.
pub const MAX_LIMIT: usize = 100;
/// Key ranges per ring at most.
pub const RING_CELLS: usize = 24;
/// Rings per walk at most (each at least doubles the area read, so a walk reaches 50 km well
/// before this).
pub const MAX_RINGS: u32 = 40;

/// A parcel: its sides from longest to shortest, and its weight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Parcel {
    pub sides: [f64; 3],
    pub weight: f64,
}

impl Parcel {
    pub fn new(length: f64, width: f64, height: f64, weight: f64) -> Parcel {
        Parcel {
            sides: sorted_sides([length, width, height]),
            weight,
        }
    }
}

/// A local date and time (`open_at`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalTime {
    /// `YYYYMMDD`.
    pub date: u32,
    pub weekday: Weekday,
    pub minute: u16,
}

impl LocalTime {
    /// `YYYY-MM-DDTHH:MM`: a real date, `HH` 00–23, `MM` 00–59.
    pub fn parse(s: &str) -> Option<LocalTime> {
        let (date, time) = s.split_once('T')?;
        if !crate::domain::schedule::is_calendar_date(date) {
            return None;
        }
        let minute = crate::domain::schedule::TimeOfDay::parse(time, false)?.minutes();
        let (year, month, day) = (
            date[0..4].parse().ok()?,
            date[5..7].parse::<u8>().ok()?,
            date[8..10].parse().ok()?,
        );
        let calendar = time::Date::from_calendar_date(year, time::Month::try_from(month).ok()?, day).ok()?;
        let weekday = Weekday::ALL[usize::from(calendar.weekday().number_days_from_monday())];
        Some(LocalTime {
            date: key::hours::date_number(date),
            weekday,
            minute,
        })
    }
}

/// A search's filter, normalised: absent conditions `None` (or `false`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchFilter {
    pub types: Option<TypeSet>,
    pub pickup_point_type: Option<PickupPointType>,
    pub payment_method: Option<PaymentMethod>,
    /// Services every match offers (a set of flag bits).
    pub services: Vec<PickupService>,
    pub accepts_returns: Option<bool>,
    pub parcel: Option<Parcel>,
    pub open_at: Option<LocalTime>,
    /// Only what a buyer may see (a storefront key's search): locations that are a
    /// pickup point or a click-and-collect point, never a warehouse alone.
    pub buyers_only: bool,
}

/// What the index scan tests of each entry: `flags & any != 0`, `flags & visible != 0`,
/// `flags & all == all`, and each sorted limit `≥` the parcel's (zeros when no parcel is asked
/// for). `visible` is a second set of types (a buyer's: pickup or click-and-collect), apart from
/// the filter's `any`: `["WAREHOUSE", "PICKUP_POINT"]` for a buyer is neither mask alone.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IndexTest {
    pub any: i64,
    pub visible: i64,
    pub all: i64,
    pub fit: [f64; 4],
}

impl IndexTest {
    /// Whether `visible` excludes some type (a buyer's search): otherwise every entry passes it,
    /// and the engines leave the test out of the scan.
    pub fn hides_types(&self) -> bool {
        self.visible != TYPE_BITS
    }
}

/// The types a buyer may see: a pickup point or a click-and-collect point.
pub const BUYER_TYPES: TypeSet = TypeSet::PICKUP_POINT.union(TypeSet::CLICK_AND_COLLECT);

impl SearchFilter {
    pub fn index_test(&self) -> IndexTest {
        let mut all = self.pickup_point_type.map_or(0, pickup_point_type_bit);
        all |= self.payment_method.map_or(0, payment_bit);
        all |= self.services.iter().map(|s| service_bit(*s)).fold(0, |a, b| a | b);
        all |= self.accepts_returns.map_or(0, returns_bit);
        IndexTest {
            any: self.types.map_or(TYPE_BITS, |t| t.bits()),
            visible: if self.buyers_only {
                BUYER_TYPES.bits()
            } else {
                TYPE_BITS
            },
            all,
            fit: self
                .parcel
                .map_or([0.0; 4], |p| [p.sides[0], p.sides[1], p.sides[2], p.weight]),
        }
    }
}

/// A buyer's point: only ever a latitude from -90 to 90 and a longitude from -180 to 180.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Near {
    latitude: f64,
    longitude: f64,
}

/// Which coordinate of a point is missing or out of its range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    Latitude,
    Longitude,
}

impl Axis {
    /// Its name, and the largest magnitude it may have.
    pub fn name_and_bound(self) -> (&'static str, f64) {
        match self {
            Axis::Latitude => ("latitude", 90.0),
            Axis::Longitude => ("longitude", 180.0),
        }
    }
}

impl Near {
    /// The point, or the first coordinate (latitude, then longitude) that is missing or out of
    /// range.
    pub fn new(latitude: Option<f64>, longitude: Option<f64>) -> Result<Near, Axis> {
        let within = |v: Option<f64>, axis: Axis| {
            let bound = axis.name_and_bound().1;
            v.filter(|v| (-bound..=bound).contains(v)).ok_or(axis)
        };
        Ok(Near {
            latitude: within(latitude, Axis::Latitude)?,
            longitude: within(longitude, Axis::Longitude)?,
        })
    }

    pub fn latitude(self) -> f64 {
        self.latitude
    }

    pub fn longitude(self) -> f64 {
        self.longitude
    }
}

/// A search's radius: only ever a whole number of metres from 1 to [`MAX_RADIUS_M`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Radius(u32);

impl Radius {
    pub const DEFAULT: Radius = Radius(DEFAULT_RADIUS_M);

    /// The radius of `metres`, when it is a whole number within range.
    pub fn new(metres: f64) -> Option<Radius> {
        (metres.fract() == 0.0 && (1.0..=f64::from(MAX_RADIUS_M)).contains(&metres)).then_some(Radius(metres as u32))
    }

    pub fn metres(self) -> u32 {
        self.0
    }
}

/// Where a page ended: the last result's `distance_m` and creation order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Hit {
    pub distance_m: u32,
    pub seq: i64,
}

/// One page of a search, as a store reads it: built only from valid parts, its page size within
/// 1 to [`MAX_LIMIT`].
#[derive(Clone, Debug)]
pub struct SearchQuery {
    merchant_pk: i64,
    near: Near,
    radius: Radius,
    filter: SearchFilter,
    after: Option<Hit>,
    limit: usize,
}

impl SearchQuery {
    /// The first page of `limit` results (served as 1 to [`MAX_LIMIT`]).
    pub fn new(merchant_pk: i64, near: Near, radius: Radius, filter: SearchFilter, limit: usize) -> SearchQuery {
        SearchQuery {
            merchant_pk,
            near,
            radius,
            filter,
            after: None,
            limit: limit.clamp(1, MAX_LIMIT),
        }
    }

    /// The same question, the page after `after` (the first page: `None`).
    pub fn after(mut self, after: Option<Hit>) -> SearchQuery {
        self.after = after;
        self
    }

    pub fn merchant_pk(&self) -> i64 {
        self.merchant_pk
    }

    pub fn near(&self) -> Near {
        self.near
    }

    pub fn radius(&self) -> Radius {
        self.radius
    }

    pub fn filter(&self) -> &SearchFilter {
        &self.filter
    }

    pub fn last_seen(&self) -> Option<Hit> {
        self.after
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// A digest of the merchant and of everything a cursor is bound to: `near`,
    /// `radius_m` and the filter, normalised, so that questions that mean the same share it.
    pub fn digest(&self, merchant_id: &str) -> [u8; 16] {
        let mut h = Sha256::new();
        h.update(b"search/v1\0");
        h.update(merchant_id.as_bytes());
        h.update([0]);
        // `+ 0.0` makes -0 and 0 one question.
        for number in [self.near.latitude + 0.0, self.near.longitude + 0.0] {
            h.update(number.to_bits().to_be_bytes());
        }
        h.update(self.radius.metres().to_be_bytes());
        let f = &self.filter;
        let test = f.index_test();
        h.update(test.any.to_be_bytes());
        h.update(test.all.to_be_bytes());
        // Hashed only when it narrows: a full key's cursors stay what they were.
        if f.buyers_only {
            h.update(b"buyers");
            h.update(test.visible.to_be_bytes());
        }
        h.update([u8::from(f.parcel.is_some())]);
        for n in test.fit {
            h.update(n.to_bits().to_be_bytes());
        }
        match f.open_at {
            None => h.update([0]),
            Some(t) => {
                h.update([1]);
                h.update(t.date.to_be_bytes());
                h.update(t.minute.to_be_bytes());
            }
        }
        crate::domain::wire::digest16(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(filter: SearchFilter) -> SearchQuery {
        let near = Near::new(Some(55.75), Some(37.61)).unwrap_or_else(|_| unreachable!());
        SearchQuery::new(1, near, Radius::DEFAULT, filter, 20)
    }

    #[test]
    fn points_and_radii_are_built_valid_or_not_at_all() {
        assert!(Near::new(Some(90.0), Some(-180.0)).is_ok());
        assert_eq!(Near::new(None, Some(200.0)), Err(Axis::Latitude), "latitude first");
        assert_eq!(Near::new(Some(-90.5), Some(0.0)), Err(Axis::Latitude));
        assert_eq!(Near::new(Some(0.0), Some(180.01)), Err(Axis::Longitude));
        assert_eq!(Near::new(Some(0.0), Some(f64::NAN)), Err(Axis::Longitude));
        assert_eq!(Radius::new(1.0).map(Radius::metres), Some(1));
        assert_eq!(Radius::new(50_000.0).map(Radius::metres), Some(MAX_RADIUS_M));
        for bad in [0.0, 0.5, 50_001.0, -1.0, f64::INFINITY] {
            assert_eq!(Radius::new(bad), None, "{bad}");
        }
        let q = SearchQuery::new(
            1,
            Near::new(Some(0.0), Some(0.0)).unwrap_or_else(|_| unreachable!()),
            Radius::DEFAULT,
            SearchFilter::default(),
            1000,
        );
        assert_eq!(q.limit(), MAX_LIMIT);
    }

    #[test]
    fn open_at_parses_strictly() {
        let t = LocalTime::parse("2026-11-28T09:30").unwrap();
        assert_eq!((t.date, t.weekday, t.minute), (20261128, Weekday::Saturday, 570));
        for bad in [
            "2026-11-28 09:30",
            "2026-02-29T10:00",
            "2026-11-28T24:00",
            "2026-11-28T9:30",
            "2026-11-28T09:60",
            "2026-11-28",
            "2026-11-28T09:30:00",
        ] {
            assert_eq!(LocalTime::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn questions_that_mean_the_same_share_a_digest() {
        let a = query(SearchFilter {
            parcel: Some(Parcel::new(10.0, 30.0, 20.0, 1.0)),
            ..Default::default()
        });
        let b = query(SearchFilter {
            parcel: Some(Parcel::new(30.0, 20.0, 10.0, 1.0)),
            ..Default::default()
        });
        assert_eq!(a.digest("m"), b.digest("m"), "a turned parcel is the same parcel");
        assert_ne!(a.digest("m"), a.digest("n"));
        assert_ne!(a.digest("m"), query(SearchFilter::default()).digest("m"));
        let mut moved = query(SearchFilter::default());
        moved.near = Near::new(Some(55.7500001), Some(37.61)).unwrap_or_else(|_| unreachable!());
        assert_ne!(moved.digest("m"), query(SearchFilter::default()).digest("m"));
        let mut wider = query(SearchFilter::default());
        wider.radius = Radius::new(5001.0).unwrap_or(Radius::DEFAULT);
        assert_ne!(wider.digest("m"), query(SearchFilter::default()).digest("m"));
        let all_types = query(SearchFilter {
            types: Some(
                TypeSet::WAREHOUSE
                    .union(TypeSet::PICKUP_POINT)
                    .union(TypeSet::CLICK_AND_COLLECT),
            ),
            ..Default::default()
        });
        assert_eq!(
            all_types.digest("m"),
            query(SearchFilter::default()).digest("m"),
            "all three types is no type condition"
        );
    }
}
