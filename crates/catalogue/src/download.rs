//! One file of a voice: downloaded into `PATH.part` (resumed from its length with a Range
//! request when a try was cut off), checked for the catalogue's size and MD5, then renamed
//! to `PATH`. A file that is already whole and right is not downloaded again.

use super::{CatalogueError, VoiceFile, is_remote};
use md5::{Digest, Md5};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// What a download reports as it goes (a bar in the CLI, events in the app).
pub trait Progress {
    /// The whole install will move `total` bytes.
    fn begin(&mut self, _total: u64) {}
    /// `done` of them are here (including what a resumed file already had).
    fn advance(&mut self, _done: u64) {}
}

/// Nothing reported.
impl Progress for () {}

const CHUNK: usize = 64 << 10;

/// Downloads `file` from `url` into `dest`; `before` is what earlier files of the install
/// moved (for `progress`).
pub fn download(
    agent: &ureq::Agent,
    url: &str,
    file: &VoiceFile,
    dest: &Path,
    before: u64,
    progress: &mut dyn Progress,
) -> Result<(), CatalogueError> {
    if dest.exists() && check(dest, file).is_ok() {
        progress.advance(before + file.size);
        return Ok(());
    }
    let part = part_path(dest);
    if is_remote(url) {
        fetch(agent, url, file, &part, before, progress)?;
    } else {
        // A catalogue on disk (a mirror): its files are beside it.
        let src = url.strip_prefix("file://").unwrap_or(url);
        std::fs::copy(src, &part).map_err(|e| CatalogueError::Download {
            url: url.to_string(),
            reason: e.to_string(),
        })?;
        progress.advance(before + file.size);
    }
    if let Err(reason) = check(&part, file) {
        let _ = std::fs::remove_file(&part);
        return Err(CatalogueError::Corrupt {
            file: file.path.clone(),
            reason,
        });
    }
    std::fs::rename(&part, dest)?;
    Ok(())
}

fn part_path(dest: &Path) -> PathBuf {
    let mut p = dest.as_os_str().to_owned();
    p.push(".part");
    PathBuf::from(p)
}

/// Into `part`, from where an earlier try stopped.
fn fetch(
    agent: &ureq::Agent,
    url: &str,
    file: &VoiceFile,
    part: &Path,
    before: u64,
    progress: &mut dyn Progress,
) -> Result<(), CatalogueError> {
    let failed = |reason: String| CatalogueError::Download {
        url: url.to_string(),
        reason,
    };
    let mut out = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(part)?;
    let mut have = out.metadata()?.len();
    if have > file.size {
        // Longer than the file can be: not a part of it.
        out.set_len(0)?;
        have = 0;
    }
    if have == file.size {
        return Ok(());
    }
    let mut request = agent.get(url);
    if have > 0 {
        request = request.header("Range", format!("bytes={have}-"));
    }
    let mut response = request.call().map_err(|e| failed(e.to_string()))?;
    match response.status().as_u16() {
        // The server resumed where the part ends.
        206 if have > 0 => {}
        // The whole file: start the part again.
        _ => {
            out.set_len(0)?;
            have = 0;
        }
    }
    out.seek(SeekFrom::Start(have))?;
    let mut body = response.body_mut().as_reader();
    let mut buf = vec![0u8; CHUNK];
    progress.advance(before + have);
    loop {
        let n = body.read(&mut buf).map_err(|e| failed(e.to_string()))?;
        if n == 0 {
            break;
        }
        have += n as u64;
        if have > file.size {
            return Err(failed(format!(
                "the server sent more than the {} bytes the catalogue says",
                file.size
            )));
        }
        out.write_all(&buf[..n])?;
        progress.advance(before + have);
    }
    out.sync_all()?;
    if have < file.size {
        return Err(failed(format!(
            "the connection ended after {have} of {} bytes (run it again to resume)",
            file.size
        )));
    }
    Ok(())
}

/// Whether `path` has the catalogue's size and MD5.
fn check(path: &Path, file: &VoiceFile) -> Result<(), String> {
    let len = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if len != file.size {
        return Err(format!("{len} bytes, not {}", file.size));
    }
    let mut f = File::open(path).map_err(|e| e.to_string())?;
    let mut hash = Md5::new();
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = f.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
    }
    let got: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    if got != file.md5 {
        return Err(format!("MD5 {got}, not {}", file.md5));
    }
    Ok(())
}
