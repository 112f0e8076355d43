//! Distances and the neighbour search behind quarantine (CONTRACT §4.5).
//!
//! The stores find a point's stored neighbours on the search index (`cells::neighbour_ranges`: a
//! few key ranges whose cells hold the 50 m disk), so its cost depends on how many points are
//! near, not on how many the merchant has. A batch's own new locations are kept in memory by
//! *latitude band*, `floor(latitude / 0.001°)`, about 111 m, wider than the radius: points within
//! it lie in a location's band or the adjacent ones, inside a longitude window that widens with
//! latitude (`search_box`, `Buckets`).

use super::location::{Status, TypeSet};

pub const EARTH_RADIUS_M: f64 = 6_371_008.8;
pub const QUARANTINE_RADIUS_M: f64 = 50.0;
/// CONTRACT §17 (density): the most other live locations (`ACTIVE` or `QUARANTINE`, whatever
/// their types) a merchant may have within `QUARANTINE_RADIUS_M` of a location it stores. It also
/// bounds what deciding a location costs: the stored neighbours a decision reads are those within
/// the search box, which the limit keeps to a few thousand however many the merchant has.
pub const DENSITY_LIMIT: usize = 100;
const BANDS_PER_DEGREE: f64 = 1000.0;

/// Great-circle distance in metres (haversine).
pub fn haversine_m(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let (phi1, phi2) = (lat1.to_radians(), lat2.to_radians());
    let d_phi = (lat2 - lat1).to_radians();
    let d_lambda = (lon2 - lon1).to_radians();
    let a = (d_phi / 2.0).sin().powi(2) + phi1.cos() * phi2.cos() * (d_lambda / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_M * a.sqrt().min(1.0).asin()
}

/// The latitude band a point is stored under.
pub fn band(latitude: f64) -> i64 {
    (latitude * BANDS_PER_DEGREE).floor() as i64
}

/// What to scan for points within `radius_m` of a point: a range of bands and one or two
/// longitude intervals (two when the window crosses the antimeridian).
#[derive(Clone, Debug, PartialEq)]
pub struct SearchBox {
    pub bands: (i64, i64),
    pub longitudes: Vec<(f64, f64)>,
}

pub fn search_box(latitude: f64, longitude: f64, radius_m: f64) -> SearchBox {
    // A small margin keeps points exactly on the radius inside the box despite rounding.
    let d_lat = (radius_m / EARTH_RADIUS_M).to_degrees() * 1.01 + 1e-9;
    let (south, north) = ((latitude - d_lat).max(-90.0), (latitude + d_lat).min(90.0));
    let bands = (band(south), band(north));
    let widest = south.abs().max(north.abs());
    if widest >= 89.9 {
        return SearchBox {
            bands,
            longitudes: vec![(-180.0, 180.0)],
        };
    }
    let d_lon = d_lat / widest.to_radians().cos();
    let (west, east) = (longitude - d_lon, longitude + d_lon);
    let longitudes = if west < -180.0 {
        vec![(-180.0, east), (west + 360.0, 180.0)]
    } else if east > 180.0 {
        vec![(west, 180.0), (-180.0, east - 360.0)]
    } else {
        vec![(west, east)]
    };
    SearchBox { bands, longitudes }
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

/// Locations kept by latitude band, so that those near a point are found without looking at
/// every one (a batch's own new locations, as neighbours of its later items).
#[derive(Debug, Default)]
pub struct Buckets {
    bands: std::collections::HashMap<i64, Vec<Neighbour>>,
}

impl Buckets {
    pub fn insert(&mut self, n: Neighbour) {
        self.bands.entry(band(n.latitude)).or_default().push(n);
    }

    /// The locations in the search box around a point: every one within the radius, and a few more.
    pub fn around(&self, latitude: f64, longitude: f64) -> impl Iterator<Item = &Neighbour> {
        let search = search_box(latitude, longitude, QUARANTINE_RADIUS_M);
        (search.bands.0..=search.bands.1)
            .filter_map(|b| self.bands.get(&b))
            .flatten()
            .filter(move |n| search.longitudes.iter().any(|(w, e)| (*w..=*e).contains(&n.longitude)))
    }
}

/// Whether a location created `seq`-th at (`latitude`, `longitude`) would have more than
/// `DENSITY_LIMIT` other live locations within the radius among `candidates` (CONTRACT §17). Stops
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
/// `longitude`) (CONTRACT §4.5, §10.4): the nearest other location within the radius that shares a
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
    use proptest::prelude::*;

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

    #[test]
    fn box_splits_at_the_antimeridian() {
        let b = search_box(10.0, 179.9999, 50.0);
        assert_eq!(b.longitudes.len(), 2);
        let b = search_box(89.9999, 0.0, 50.0);
        assert_eq!(b.longitudes, vec![(-180.0, 180.0)]);
    }

    fn inside(b: &SearchBox, lat: f64, lon: f64) -> bool {
        (b.bands.0..=b.bands.1).contains(&band(lat)) && b.longitudes.iter().any(|(w, e)| (*w..=*e).contains(&lon))
    }

    proptest! {
        /// Every point within the radius lies in the search box.
        #[test]
        fn box_covers_the_radius(lat in -89.9f64..89.9, lon in -180.0f64..180.0, bearing in 0.0f64..360.0, dist in 0.0f64..50.0) {
            let (phi, lambda, theta) = (lat.to_radians(), lon.to_radians(), bearing.to_radians());
            let delta = dist / EARTH_RADIUS_M;
            let phi2 = (phi.sin() * delta.cos() + phi.cos() * delta.sin() * theta.cos()).asin();
            let lambda2 = lambda + (theta.sin() * delta.sin() * phi.cos()).atan2(delta.cos() - phi.sin() * phi2.sin());
            let (lat2, mut lon2) = (phi2.to_degrees(), lambda2.to_degrees());
            if lon2 > 180.0 { lon2 -= 360.0 }
            if lon2 < -180.0 { lon2 += 360.0 }
            prop_assume!(haversine_m(lat, lon, lat2, lon2) <= 50.0);
            prop_assert!(inside(&search_box(lat, lon, 50.0), lat2, lon2));
        }
    }
}
