//! Saving a file so that a failure loses nothing: the bytes go to a temporary file beside it
//! (mode 0600: settings and history are the user's), which then replaces the file by a
//! rename. A full disk or a read-only folder fails the write or the rename; the old file is
//! then untouched and the temporary one removed, and the caller tells the user.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Replaces `path` with `bytes`, or fails leaving it as it was.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with(path, bytes, write_temp)
}

/// [`write`] with the temporary file written by `fill` (tests make it fail as a full disk).
pub(crate) fn write_with(
    path: &Path,
    bytes: &[u8],
    fill: impl FnOnce(&Path, &[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = temp_path(path);
    let r = fill(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

/// Writes and syncs the temporary file (so the rename never exposes a half-written one).
fn write_temp(tmp: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    let mut f = o.open(tmp)?;
    f.write_all(bytes)?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENOSPC: i32 = 28;

    #[test]
    fn a_full_disk_leaves_the_old_file_and_no_temporary_one() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("settings.json");
        write(&p, b"old").unwrap();
        let full = |tmp: &Path, bytes: &[u8]| {
            // Half of it fits, then the disk is full.
            std::fs::write(tmp, &bytes[..bytes.len() / 2])?;
            Err(std::io::Error::from_raw_os_error(ENOSPC))
        };
        let e = write_with(&p, b"new contents", full).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(ENOSPC));
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        assert!(!temp_path(&p).exists());
        write(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
    }

    #[cfg(unix)]
    #[test]
    fn a_read_only_folder_leaves_the_old_file() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("history.json");
        write(&p, b"old").unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let mode = |m| std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(m));
        mode(0o500).unwrap();
        let r = write(&p, b"new");
        mode(0o700).unwrap();
        if r.is_ok() {
            // root writes anyway: the full-disk test above covers the failure then.
            eprintln!("skipped: running as root, a read-only folder is writable");
            return;
        }
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        assert!(!temp_path(&p).exists());
    }
}
