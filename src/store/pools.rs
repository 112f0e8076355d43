//! How many database connections an instance opens: sized to the machine it runs on unless the
//! operator says otherwise (`--db-readers`, `--pg-pool-size`), and logged once at start.
//!
//! **SQLite's readers.** A read runs on a blocking thread with a connection of its own, and is
//! CPU work but for the pages it faults in from the file's map, which a large merchant's reads do
//! often (a million locations' search maps gigabytes): four per core keep every core busy while
//! some wait on a fault. Measured on 2 cores at a million locations, 4 readers served 0.90 of the
//! searches 8 did, pinned to one core the same. A fixed number left cores idle on a large machine
//! (eight readers stopped search scaling at eight cores).
//!
//! **PostgreSQL's pool.** PostgreSQL's own rule of thumb for a pool is about twice the database's
//! cores (plus its disks): more connections than that only contend for its CPU and locks, and
//! lengthen the tail (on 2 cores a pool of 16 gave the search a p99 of 137 ms, a pool of 4 9.4 ms).
//! The database's cores are not known here; an instance is sized by its own, which is right when
//! they share a machine and a fair start when they do not (the flag says otherwise).
//! Writers (the merchants' group commits) may hold at most half of the pool, so that reads always
//! find connections; the writers wait their turn in the pool's own fair queue, never behind an
//! endless stream of reads.

use std::num::NonZeroUsize;

/// The fewest connections of either kind: one slow statement never holds every one.
const FLOOR: usize = 4;
/// Read connections per core, SQLite's, and PostgreSQL's connections per core (see the module's
/// notes).
const READERS_PER_CORE: usize = 4;
const PG_PER_CORE: usize = 2;

/// The sizes of an instance's database pools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pools {
    /// SQLite: read connections, and so reads at once.
    pub readers: usize,
    /// PostgreSQL: connections to the primary (and to each replica).
    pub pg_connections: usize,
}

impl Pools {
    /// The sizes for a machine of `cores` cores.
    pub fn for_cores(cores: usize) -> Pools {
        let cores = cores.max(1);
        Pools {
            readers: cores.saturating_mul(READERS_PER_CORE).max(FLOOR),
            pg_connections: cores.saturating_mul(PG_PER_CORE).max(FLOOR),
        }
    }

    /// The sizes for this machine (the cores this process may run on: `taskset` and cgroup
    /// quotas count), each replaced by the operator's when given.
    pub fn of_machine(readers: Option<usize>, pg_connections: Option<usize>) -> Pools {
        let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        let sized = Pools::for_cores(cores);
        Pools {
            readers: readers.unwrap_or(sized.readers),
            pg_connections: pg_connections.unwrap_or(sized.pg_connections),
        }
    }

    /// How many of PostgreSQL's connections the merchants' group commits may hold at once: half,
    /// so that reads always find the other half.
    pub fn pg_writers(&self) -> usize {
        (self.pg_connections / 2).max(1)
    }

    /// How many of PostgreSQL's connections the merchants' heavy work (recoveries, imports) may
    /// hold at once: a quarter, so that the writes and reads of others always find theirs.
    pub fn pg_heavy(&self) -> usize {
        (self.pg_connections / 4).max(1)
    }
}

impl Default for Pools {
    fn default() -> Self {
        Pools::of_machine(None, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sized_per_core_and_never_fewer_than_four() {
        let sized = |cores| {
            let p = Pools::for_cores(cores);
            (p.readers, p.pg_connections)
        };
        assert_eq!(sized(0), (4, 4));
        assert_eq!(sized(1), (4, 4));
        assert_eq!(sized(2), (8, 4));
        assert_eq!(sized(12), (48, 24));
    }

    #[test]
    fn writers_hold_at_most_half() {
        assert_eq!(Pools::for_cores(2).pg_writers(), 2);
        assert_eq!(Pools::for_cores(16).pg_writers(), 16);
        let one = Pools {
            readers: 1,
            pg_connections: 1,
        };
        assert_eq!(one.pg_writers(), 1);
    }

    #[test]
    fn the_operator_decides_when_told() {
        let told = Pools::of_machine(Some(3), Some(50));
        assert_eq!((told.readers, told.pg_connections), (3, 50));
    }
}
