//! The free room of the filesystem that holds the database, which readiness weighs after a write
//! failed.
//!
//! A write that fails for want of room leaves the service unready until writes work again. A small
//! write committing is not proof of that on a full disk: after a checkpoint SQLite writes new WAL
//! frames over old ones in room the WAL file already holds, and a write that frees as many pages as
//! it fills (a probe replacing its own row) never needs the database file to grow, while creates
//! need both. So the room itself is asked for too.

use std::path::{Path, PathBuf};

use crate::store::api::StoreError;

/// The least free room that counts as room to write: a few batches of creates' pages.
const ENOUGH_BYTES: u64 = 1 << 20;

/// The directory of the database file, whose filesystem its WAL and journal files share.
pub(super) fn directory_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Bytes an unprivileged writer may still use on the filesystem holding `dir`.
fn free_bytes(dir: &Path) -> Result<u64, StoreError> {
    let stat = rustix::fs::statvfs(dir).map_err(StoreError::backend)?;
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// An error unless the filesystem holding `dir` has [`ENOUGH_BYTES`] free.
pub(super) fn require_room(dir: &Path) -> Result<(), StoreError> {
    let free = free_bytes(dir)?;
    if free < ENOUGH_BYTES {
        return Err(StoreError::Backend(
            format!("the database's filesystem has {free} bytes free, less than the {ENOUGH_BYTES} a write may need")
                .into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_file_name_is_in_the_working_directory() {
        assert_eq!(directory_of(Path::new("storefront.db")), PathBuf::from("."));
        assert_eq!(directory_of(Path::new("/var/lib/s/s.db")), PathBuf::from("/var/lib/s"));
    }

    #[test]
    fn a_filesystem_s_free_room_is_read() {
        let dir = tempfile::tempdir().unwrap();
        assert!(free_bytes(dir.path()).unwrap() > 0);
        assert!(free_bytes(&dir.path().join("missing")).is_err());
    }
}
