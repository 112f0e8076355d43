//! Distances and the rules of the 50 m neighbourhood: quarantine and
//! density.
//!
//! Neighbours are found by one geometry, the search index's cells (`cells::neighbour_ranges`: a
//! few key ranges whose cells hold the 50 m disk): the stores read those ranges of their index,
//! and a batch's own new locations are kept in memory by the same keys (`cells::Nearby`), so the
//! cost depends on how many points are near, not on how many the merchant has.

use super::location::{Status, TypeSet};

pub const EARTH_RADIUS_M: f64 = 6_371_008.8;
pub const QUARANTINE_RADIUS_M: f64 = 50.0;
/// Density: the most other live locations (`ACTIVE` or `QUARANTINE`, whatever
/// their types) a merchant may have within `QUARANTINE_RADIUS_M` of a location it stores. It also
/// bounds what deciding a location costs: the stored neighbours a decision reads are those within
/// the search box, which the limit keeps to a few thousand however many the merchant has.
pub const DENSITY_LIMIT: usize = 100;

/// Great-circle distance in metres (haversine).
pub fn haversine_m(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    Origin::new(lat1, lon1).distance_m(lat2, lon2)
}

/// A point that many distances are measured from (a search's `near`): what depends on it alone
/// is computed once, not again for each of the hundreds of cells and candidates a search weighs.
/// Its distances are `haversine_m`'s to the last bit (the same operations on the same values).
#[derive(Clone, Copy, Debug)]
pub struct Origin {
    pub latitude: f64,
    pub longitude: f64,
    cos_phi: f64,
    sin_phi: f64,
}

impl Origin {
    pub fn new(latitude: f64, longitude: f64) -> Origin {
        let (sin_phi, cos_phi) = latitude.to_radians().sin_cos();
        Origin {
            latitude,
            longitude,
            cos_phi,
            sin_phi,
        }
    }

    /// The cosine of its latitude.
    pub fn cos_latitude(&self) -> f64 {
        self.cos_phi
    }

    /// Bounds of the cosine of the latitude `delta` radians from this point's, without
    /// trigonometry: `cos φ·cos δ − sin φ·sin δ`, with `cos δ` between `1 − δ²/2` and
    /// `1 − δ²/2 + δ⁴/24`, and `sin δ` within `|δ|³/6` of `δ`.
    pub fn cos_near(&self, delta: f64) -> (f64, f64) {
        let square = delta * delta;
        let middle = self.cos_phi * (1.0 - square / 2.0) - self.sin_phi * delta;
        let spread = self.sin_phi.abs() * square * delta.abs() / 6.0;
        (middle - spread, middle + spread + self.cos_phi * square * square / 24.0)
    }

    /// `distance_m(lat2, lon2).round()`, told without trigonometry when the bounds of
    /// [`Origin::distance_within_m`] round alike (nearly always: they are a few millimetres apart
    /// within a few hundred kilometres), else measured.
    pub fn rounded_distance_m(&self, lat2: f64, lon2: f64) -> f64 {
        if let Some((least, most)) = self.distance_within_m(lat2, lon2) {
            let rounded = least.round();
            if rounded == most.round() {
                return rounded;
            }
        }
        self.distance_m(lat2, lon2).round()
    }

    /// Bounds of `distance_m(lat2, lon2)` without trigonometry, a few millimetres apart within a
    /// few hundred kilometres (`None` beyond about 6,000 km, where they would be far apart).
    /// Haversine's `a` is bounded with the sines' Taylor polynomials (for `0 ≤ x ≤ ½`, `sin x` lies
    /// between `x − x³/6` and `x − x³/6 + x⁵/120`), the cosine of the other latitude as
    /// [`Origin::cos_near`] bounds it, and `asin(y)` between `y + y³/6` and `y + y³/6 + (3/40)·y⁵/(1 − y²)`
    /// (its series' terms are positive and the later coefficients smaller).
    pub fn distance_within_m(&self, lat2: f64, lon2: f64) -> Option<(f64, f64)> {
        // Far beyond the rounding of either computation.
        const SLACK_M: f64 = 1e-6;
        const ROUNDING: f64 = 1e-9;
        let d_phi = (lat2 - self.latitude).to_radians();
        let d_lon = (lon2 - self.longitude).abs();
        let d_lambda = (if d_lon > 180.0 { 360.0 - d_lon } else { d_lon }).to_radians();
        let (x, y) = (d_phi.abs() / 2.0, d_lambda / 2.0);
        if x.max(y) >= 0.5 {
            return None;
        }
        let sin_low = |t: f64| t - t.powi(3) / 6.0;
        let sin_high = |t: f64| t - t.powi(3) / 6.0 + t.powi(5) / 120.0;
        let (cos_low, cos_high) = self.cos_near(d_phi);
        let (cos_low, cos_high) = (cos_low.max(0.0), cos_high.min(1.0));
        let a_low = sin_low(x).powi(2) + self.cos_phi * cos_low * sin_low(y).powi(2);
        let a_high = sin_high(x).powi(2) + self.cos_phi * cos_high * sin_high(y).powi(2);
        let (r_low, r_high) = (a_low.sqrt(), a_high.sqrt());
        let asin_low = r_low + r_low.powi(3) / 6.0;
        let asin_high = r_high + r_high.powi(3) / 6.0 + 0.075 * r_high.powi(5) / (1.0 - a_high);
        Some((
            2.0 * EARTH_RADIUS_M * asin_low * (1.0 - ROUNDING) - SLACK_M,
            2.0 * EARTH_RADIUS_M * asin_high * (1.0 + ROUNDING) + SLACK_M,
        ))
    }

    /// Great-circle distance in metres to (`lat2`, `lon2`) (haversine).
    pub fn distance_m(&self, lat2: f64, lon2: f64) -> f64 {
        let (lat1, lon1) = (self.latitude, self.longitude);
        let phi2 = lat2.to_radians();
        let d_phi = (lat2 - lat1).to_radians();
        let d_lambda = (lon2 - lon1).to_radians();
        let a = (d_phi / 2.0).sin().powi(2) + self.cos_phi * phi2.cos() * (d_lambda / 2.0).sin().powi(2);
        2.0 * EARTH_RADIUS_M * a.sqrt().min(1.0).asin()
    }

    /// The greatest `distance_m` to the points at each of `latitudes` on each of `longitudes`, to
    /// the last bit, with each latitude's and each longitude's trigonometry done once (not once
    /// for every point) and one arcsine: the distance grows with haversine's `a`.
    pub fn farthest_m(&self, latitudes: &[f64], longitudes: &[f64]) -> f64 {
        let mut a = 0.0f64;
        for &lat2 in latitudes {
            let phi2 = lat2.to_radians();
            let d_phi = (lat2 - self.latitude).to_radians();
            let (along, across) = ((d_phi / 2.0).sin().powi(2), self.cos_phi * phi2.cos());
            for &lon2 in longitudes {
                let d_lambda = (lon2 - self.longitude).to_radians();
                a = a.max(along + across * (d_lambda / 2.0).sin().powi(2));
            }
        }
        2.0 * EARTH_RADIUS_M * a.sqrt().min(1.0).asin()
    }

    /// Bounds of `distance_m` to (`lat2`, `lon2`) made without trigonometry, each a metre wide of
    /// the truth (far beyond either computation's rounding): at least the arc of a meridian
    /// between the two latitudes, at most that arc plus the arc of this point's parallel between
    /// the two longitudes (a path from one point to the other, so no shorter than the great circle).
    pub fn distance_bounds_m(&self, lat2: f64, lon2: f64) -> (f64, f64) {
        const SLACK_M: f64 = 1.0;
        let meridian = (lat2 - self.latitude).abs().to_radians() * EARTH_RADIUS_M;
        let d_lon = (lon2 - self.longitude).abs();
        let d_lon = if d_lon > 180.0 { 360.0 - d_lon } else { d_lon };
        let parallel = d_lon.to_radians() * self.cos_phi * EARTH_RADIUS_M;
        (meridian - SLACK_M, meridian + parallel + SLACK_M)
    }
}

/// A stored location near a new one, as the store found it in the search box.
#[derive(Clone, Debug)]
pub struct Neighbour {
    pub location_id: String,
    pub latitude: f64,
    pub longitude: f64,
    pub types: TypeSet,
    /// Creation order: the smaller was created first.
    pub seq: i64,
    pub status: Status,
}

/// Whether a location created `seq`-th at (`latitude`, `longitude`) would have more than
/// `DENSITY_LIMIT` other live locations within the radius among `candidates`. Stops
/// counting at one past the limit.
pub fn too_dense<'a>(
    seq: i64,
    latitude: f64,
    longitude: f64,
    candidates: impl IntoIterator<Item = &'a Neighbour>,
) -> bool {
    candidates
        .into_iter()
        .filter(|n| n.seq != seq && n.status.is_live())
        .filter(|n| haversine_m(latitude, longitude, n.latitude, n.longitude) <= QUARANTINE_RADIUS_M)
        .take(DENSITY_LIMIT + 1)
        .count()
        > DENSITY_LIMIT
}

/// The `STOREFRONT_RULE_VIOLATION` message of an item refused by the density limit.
pub fn density_message() -> String {
    format!(
        "more than {DENSITY_LIMIT} other live locations of this merchant are within {QUARANTINE_RADIUS_M} m of this \
         point; a location may have at most {DENSITY_LIMIT} such neighbours"
    )
}

/// The neighbour that quarantines the location created `seq`-th, of `types` at (`latitude`,
/// `longitude`): the nearest other location within the radius that shares a
/// type and is `ACTIVE`, or `QUARANTINE` and created before it; on a tie, the one created first.
pub fn quarantining_neighbour(
    seq: i64,
    latitude: f64,
    longitude: f64,
    types: TypeSet,
    candidates: impl IntoIterator<Item = Neighbour>,
) -> Option<Neighbour> {
    candidates
        .into_iter()
        .filter(|n| n.seq != seq && n.types.intersects(types))
        .filter(|n| n.status == Status::Active || (n.status == Status::Quarantine && n.seq < seq))
        .map(|n| (haversine_m(latitude, longitude, n.latitude, n.longitude), n))
        .filter(|(d, _)| *d <= QUARANTINE_RADIUS_M)
        .min_by(|(da, a), (db, b)| da.total_cmp(db).then(a.seq.cmp(&b.seq)))
        .map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn the_cheap_bounds_hold_the_distance(
            lat1 in -90.0f64..=90.0,
            lon1 in -180.0f64..180.0,
            lat2 in -90.0f64..=90.0,
            lon2 in -180.0f64..180.0,
            near in proptest::bool::ANY,
        ) {
            // Points near each other too, where a search's rings are.
            let (lat2, lon2) = if near {
                ((lat1 + (lat2 / 9000.0)).clamp(-90.0, 90.0), lon1 + lon2 / 9000.0)
            } else {
                (lat2, lon2)
            };
            let origin = Origin::new(lat1, lon1);
            let d = origin.distance_m(lat2, lon2);
            let (least, most) = origin.distance_bounds_m(lat2, lon2);
            proptest::prop_assert!(least < d && d < most, "{least} {d} {most}");
            proptest::prop_assert!(d - least > 0.5 && most - d > 0.5, "a bound within half a metre: {least} {d} {most}");
        }
    }

    proptest::proptest! {
        /// The distance rounded without trigonometry is the measured one rounded, for points near
        /// and far, and for points whose distance lies a hair from a half metre (where the bounds
        /// round apart and the distance is measured).
        #[test]
        fn the_rounded_distance_is_the_measured_one_rounded(
            lat1 in -90.0f64..=90.0,
            lon1 in -180.0f64..180.0,
            lat2 in -90.0f64..=90.0,
            lon2 in -180.0f64..180.0,
            near in proptest::bool::ANY,
            hair in -1e-6f64..1e-6,
        ) {
            let (lat2, lon2) = if near {
                ((lat1 + (lat2 / 900.0)).clamp(-90.0, 90.0), lon1 + lon2 / 900.0)
            } else {
                (lat2, lon2)
            };
            let origin = Origin::new(lat1, lon1);
            let d = origin.distance_m(lat2, lon2);
            proptest::prop_assert_eq!(origin.rounded_distance_m(lat2, lon2), d.round());
            // The same bearing at a distance of a whole metre and a half, give or take a hair.
            let half = d.floor() + 0.5 + hair;
            let scale = half / d.max(1e-9);
            let (lat3, lon3) = (lat1 + (lat2 - lat1) * scale, lon1 + (lon2 - lon1) * scale);
            if near && lat3.abs() <= 90.0 {
                let d3 = origin.distance_m(lat3, lon3);
                proptest::prop_assert_eq!(origin.rounded_distance_m(lat3, lon3), d3.round());
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn the_farthest_is_the_greatest_distance_to_the_last_bit(
            lat1 in -90.0f64..=90.0,
            lon1 in -180.0f64..180.0,
            latitudes in proptest::collection::vec(-90.0f64..=90.0, 1..3),
            longitudes in proptest::collection::vec(-180.0f64..180.0, 1..4),
        ) {
            let origin = Origin::new(lat1, lon1);
            let greatest = latitudes
                .iter()
                .flat_map(|&p| longitudes.iter().map(move |&m| (p, m)))
                .map(|(p, m)| origin.distance_m(p, m))
                .fold(0.0, f64::max);
            proptest::prop_assert_eq!(origin.farthest_m(&latitudes, &longitudes).to_bits(), greatest.to_bits());
        }
    }

    #[test]
    fn haversine_matches_known_distances() {
        // One degree of latitude on this sphere.
        let d = haversine_m(0.0, 0.0, 1.0, 0.0);
        assert!((d - 111_195.08).abs() < 0.1, "{d}");
        assert!(haversine_m(55.75, 37.61, 55.75, 37.61) == 0.0);
    }

    fn at(seq: i64, latitude: f64, status: Status) -> Neighbour {
        Neighbour {
            location_id: format!("l{seq}"),
            latitude,
            longitude: 37.6,
            types: TypeSet::default(),
            seq,
            status,
        }
    }

    #[test]
    fn density_counts_other_live_locations_within_the_radius_whatever_their_types() {
        // 0.0004° of latitude is about 44 m, 0.0005° about 56 m.
        let mut near: Vec<Neighbour> = (0..DENSITY_LIMIT as i64)
            .map(|i| at(i, 55.0004, Status::Active))
            .collect();
        assert!(!too_dense(1000, 55.0, 37.6, &near), "exactly the limit is allowed");
        near.push(at(500, 55.0005, Status::Active));
        near.push(at(501, 55.0, Status::Archived));
        near.push(at(1000, 55.0, Status::Active));
        assert!(
            !too_dense(1000, 55.0, 37.6, &near),
            "farther, archived and itself do not count"
        );
        near.push(at(502, 55.0001, Status::Quarantine));
        assert!(
            too_dense(1000, 55.0, 37.6, &near),
            "one more live neighbour is over the limit"
        );
    }
}
