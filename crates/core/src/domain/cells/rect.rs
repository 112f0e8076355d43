//! A cell's latitude/longitude rectangle and its least and greatest great-circle distances from
//! the point a covering is made around: exact, and bounded without trigonometry, so that most
//! cells are settled by their bounds as the exact distances would settle them.

use crate::domain::geo::{EARTH_RADIUS_M, Origin};

/// Slack on every distance decision, far above the floating-point error of the computation.
pub(super) const MARGIN_M: f64 = 1.0;

/// A latitude/longitude rectangle (never across the 180th meridian: cells do not cross it).
#[derive(Clone, Copy, Debug)]
pub(super) struct Rect {
    pub(super) south: f64,
    pub(super) north: f64,
    pub(super) west: f64,
    pub(super) east: f64,
}

/// `degrees` brought into [-180, 180), to the last bit as `(degrees + 180).rem_euclid(360) - 180`:
/// within a turn either side of the range (every difference of two longitudes) the remainder is
/// the sum itself, or it less or plus 360, computed exactly as `rem_euclid` computes it, without
/// its division (`fmod`), a slow call made for every cell a covering weighs.
pub(super) fn wrap(degrees: f64) -> f64 {
    let turned = degrees + 180.0;
    let wrapped = if (0.0..360.0).contains(&turned) {
        turned
    } else if (-360.0..0.0).contains(&turned) {
        turned + 360.0
    } else if (360.0..720.0).contains(&turned) {
        turned - 360.0
    } else {
        turned.rem_euclid(360.0)
    };
    wrapped - 180.0
}

impl Rect {
    fn holds_longitude(&self, longitude: f64) -> bool {
        (self.west..=self.east).contains(&longitude)
            || (self.west..=self.east).contains(&(longitude - 360.0))
            || (self.west..=self.east).contains(&(longitude + 360.0))
    }

    /// Bounds of `least_distance` and `greatest_distance` made without trigonometry, within a
    /// few metres of them for the cells of a search's rings: [`Rect::edge_bounds`], and above and
    /// below them a point of the rectangle bounds each (its distance is at least the least, a
    /// corner's at most the greatest): the point nearest in latitude and longitude, and the
    /// farthest corner.
    pub(super) fn distance_bounds(&self, from: &Seen) -> Bounds {
        let (latitude, longitude) = (from.origin.latitude, from.origin.longitude);
        let edges = self.edges(from);
        let (least_at_least, greatest_at_most) = self.bounds_of(from, &edges);
        let nearest = (
            latitude.clamp(self.south, self.north),
            match (edges.holds_longitude, edges.to_west <= edges.to_east) {
                (true, _) => longitude,
                (false, true) => self.west,
                (false, false) => self.east,
            },
        );
        let farthest = (
            if edges.to_south.abs() >= edges.to_north.abs() {
                self.south
            } else {
                self.north
            },
            if edges.to_west >= edges.to_east {
                self.west
            } else {
                self.east
            },
        );
        Bounds {
            least: (
                least_at_least,
                from.origin
                    .distance_within_m(nearest.0, nearest.1)
                    .map_or(f64::INFINITY, |(_, most)| most),
            ),
            greatest: (
                from.origin
                    .distance_within_m(farthest.0, farthest.1)
                    .map_or(0.0, |(least, _)| least),
                greatest_at_most,
            ),
        }
    }

    /// A bound below `least_distance` and one above `greatest_distance` (infinite when the
    /// rectangle holds the meridian opposite the point), made of the rectangle's edges alone
    /// without trigonometry. Haversine's `a` (the distance is `2R·asin(√a)`, growing with `a`) is
    /// `sin²(Δφ/2) + cos φ₁·cos φ₂·sin²(Δλ/2)`: each of its two terms is bounded over the
    /// rectangle by its own extremes (the differences of latitude and of longitude to the nearer
    /// and the farther edges; `cos φ₂` least at an edge, since it is concave, and greatest at the
    /// latitude nearest the equator), the sines and the cosine of the rectangle's latitudes by
    /// their Taylor polynomials (which bound them from either side), and `asin(y)` lies between
    /// `y` and `y/√(1−y²)`.
    pub(super) fn edge_bounds(&self, from: &Seen) -> (f64, f64) {
        self.bounds_of(from, &self.edges(from))
    }

    /// [`Rect::edge_bounds`], from its edges as seen from the point.
    fn bounds_of(&self, from: &Seen, edges: &Edges) -> (f64, f64) {
        // Far beyond the rounding of either computation, and far below the decisions' margin.
        const SLACK_M: f64 = 1e-3;
        const ROUNDING: f64 = 1e-9;
        let &Edges {
            to_south,
            to_north,
            to_west,
            to_east,
            holds_longitude,
        } = edges;
        let d_phi_least = if to_south > 0.0 {
            to_south
        } else if to_north < 0.0 {
            -to_north
        } else {
            0.0
        };
        let d_lambda_least = if holds_longitude { 0.0 } else { to_west.min(to_east) };
        let cos_least = from
            .origin
            .cos_near(to_south)
            .0
            .min(from.origin.cos_near(to_north).0)
            .max(0.0);
        let sin_least = |half: f64| (half - half.powi(3) / 6.0).max(0.0);
        let a_least = sin_least(d_phi_least / 2.0).powi(2)
            + from.origin.cos_latitude() * cos_least * sin_least(d_lambda_least / 2.0).powi(2);
        let least_at_least = 2.0 * EARTH_RADIUS_M * a_least.sqrt() * (1.0 - ROUNDING) - SLACK_M;
        if self.holds_longitude(wrap(from.origin.longitude + 180.0)) {
            return (least_at_least, f64::INFINITY);
        }
        let cos_most = if self.south <= 0.0 && self.north >= 0.0 {
            1.0
        } else {
            let nearest_equator = if self.south > 0.0 { to_south } else { to_north };
            from.origin.cos_near(nearest_equator).1.min(1.0)
        };
        let d_phi_most = to_south.abs().max(to_north.abs());
        let d_lambda_most = to_west.max(to_east);
        let a_most = (d_phi_most / 2.0).powi(2) + from.origin.cos_latitude() * cos_most * (d_lambda_most / 2.0).powi(2);
        if a_most >= 1.0 {
            return (least_at_least, f64::INFINITY);
        }
        let greatest_at_most = 2.0 * EARTH_RADIUS_M * (a_most / (1.0 - a_most)).sqrt() * (1.0 + ROUNDING) + SLACK_M;
        (least_at_least, greatest_at_most)
    }

    /// The differences of latitude to its parallels and of longitude to its meridians (in
    /// radians, the latter both positive), and whether it holds the point's meridian.
    fn edges(&self, from: &Seen) -> Edges {
        let (latitude, longitude) = (from.origin.latitude, from.origin.longitude);
        Edges {
            to_south: (self.south - latitude).to_radians(),
            to_north: (self.north - latitude).to_radians(),
            to_west: wrap(self.west - longitude).abs().to_radians(),
            to_east: wrap(self.east - longitude).abs().to_radians(),
            holds_longitude: self.holds_longitude(longitude),
        }
    }

    /// The least great-circle distance from the point to the rectangle. Along a parallel the
    /// distance grows with the difference of longitude, so the nearest point lies on the
    /// point's own meridian (then it is the difference of latitude) or on the nearer meridian
    /// edge; along a meridian it has one minimum, where the meridian comes closest to the point
    /// (or at the pole on the point's side when the meridian is more than 90° away), clamped to
    /// the edge's latitudes.
    pub(super) fn least_distance(&self, from: &Seen) -> f64 {
        let (latitude, longitude) = (from.origin.latitude, from.origin.longitude);
        if self.holds_longitude(longitude) {
            let degrees = if latitude < self.south {
                self.south - latitude
            } else if latitude > self.north {
                latitude - self.north
            } else {
                0.0
            };
            return degrees.to_radians() * EARTH_RADIUS_M;
        }
        let (to_west, to_east) = (wrap(self.west - longitude).abs(), wrap(self.east - longitude).abs());
        let (edge, apart) = if to_west <= to_east {
            (self.west, to_west)
        } else {
            (self.east, to_east)
        };
        let cos_apart = apart.to_radians().cos();
        let closest = if cos_apart <= 0.0 {
            if latitude >= 0.0 { 90.0 } else { -90.0 }
        } else {
            (from.tan_latitude / cos_apart).atan().to_degrees()
        };
        from.origin.distance_m(closest.clamp(self.south, self.north), edge)
    }

    /// The greatest great-circle distance from the point to the rectangle: at a corner (by the
    /// same two monotonic directions), or on the meridian opposite the point when the rectangle
    /// holds it.
    pub(super) fn greatest_distance(&self, from: &Seen) -> f64 {
        let opposite = wrap(from.origin.longitude + 180.0);
        let meridians = [self.west, self.east, opposite];
        let n = if self.holds_longitude(opposite) { 3 } else { 2 };
        from.origin.farthest_m(&[self.south, self.north], &meridians[..n])
    }
}

/// A rectangle's edges seen from a point ([`Rect::edges`]).
struct Edges {
    to_south: f64,
    to_north: f64,
    to_west: f64,
    to_east: f64,
    holds_longitude: bool,
}

/// Bounds of a cell's least and greatest distances.
pub(super) struct Bounds {
    pub(super) least: (f64, f64),
    pub(super) greatest: (f64, f64),
}

/// What the exact distances would decide of a cell, when its bounds tell it (each test on a bound
/// implies the same test on the distance it bounds): `Some(None)` when it lies outside the ring,
/// `Some(Some(crosses))` when it does not, whether it crosses an edge.
pub(super) fn settle(bounds: Bounds, (inner, outer): (f64, f64)) -> Option<Option<bool>> {
    let Bounds { least, greatest } = bounds;
    if least.0 > outer + MARGIN_M || greatest.1 < inner - MARGIN_M {
        return Some(None);
    }
    if least.1 > outer + MARGIN_M || greatest.0 < inner - MARGIN_M {
        return None;
    }
    if greatest.0 > outer - MARGIN_M || least.1 < inner + MARGIN_M {
        return Some(Some(true));
    }
    if greatest.1 <= outer - MARGIN_M && least.0 >= inner + MARGIN_M {
        return Some(Some(false));
    }
    None
}

/// The point a covering is made around, with what every cell's distances need of it alone.
pub(super) struct Seen {
    origin: Origin,
    /// `tan` of its latitude: where a meridian comes closest to it.
    tan_latitude: f64,
}

impl Seen {
    pub(super) fn new(latitude: f64, longitude: f64) -> Seen {
        Seen {
            origin: Origin::new(latitude, longitude),
            tan_latitude: latitude.to_radians().tan(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::wrap;
    use proptest::prelude::*;

    proptest! {
        /// The same bits as the remainder's, whatever the angle (beyond a turn either side too).
        #[test]
        fn wrap_is_the_euclidean_remainder(degrees in prop_oneof![-540.0f64..540.0, -1e6f64..1e6, Just(-360.0), Just(180.0), Just(-180.0), Just(540.0)]) {
            let expected = (degrees + 180.0).rem_euclid(360.0) - 180.0;
            prop_assert_eq!(wrap(degrees).to_bits(), expected.to_bits());
        }
    }
}
