//! Where a read may be served, and where it was.

/// Where a read is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadFrom {
    /// The primary: the caller reads its own writes.
    Primary,
    /// A replica within the lag bound when there is one, else the primary.
    Replica,
}

/// Where a read was served, as `db_reads_total` counts it: every request answered
/// from the database (searches, location lists, feed and deliveries pages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadOn {
    Primary,
    Replica,
}

impl ReadOn {
    /// Counts one read served here.
    pub fn count(self) {
        let target = match self {
            ReadOn::Primary => "primary",
            ReadOn::Replica => "replica",
        };
        metrics::counter!("db_reads_total", "target" => target).increment(1);
    }
}
