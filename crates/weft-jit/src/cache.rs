//! Cache entries that prove themselves whole before they are loaded.
//!
//! An entry is the shared object followed by a trailer: the SHA-256 of the object, its length
//! (u64, little-endian) and a magic string. The loader ignores bytes past the object's last
//! section, so the file loads as it is. A truncated, empty, foreign or damaged entry fails
//! [`verify`] (it is read, never mapped, so truncation cannot raise SIGBUS) and is rebuilt.
//!
//! Entries are written under a temporary name (`tmp-PID-...`) and renamed into place, so a reader
//! sees either no entry or a whole one; [`sweep_temporaries`] removes the temporaries of compiles
//! that were killed.

use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

const MAGIC: &[u8; 8] = b"WEFTSO01";
const TRAILER: usize = 32 + 8 + MAGIC.len();

/// Temporaries older than this are removed even when their process seems alive (its id may
/// have been reused, or belong to another PID namespace sharing the cache).
const STALE_AFTER: Duration = Duration::from_secs(24 * 3600);

/// Why an entry cannot be used.
#[derive(Debug, PartialEq, Eq)]
pub enum Invalid {
    Missing,
    Corrupt(String),
}

/// Append the trailer to the freshly compiled object at `path`.
pub fn seal(path: &Path) -> std::io::Result<()> {
    let body = std::fs::read(path)?;
    let mut f = std::fs::OpenOptions::new().append(true).open(path)?;
    f.write_all(&Sha256::digest(&body))?;
    f.write_all(&(body.len() as u64).to_le_bytes())?;
    f.write_all(MAGIC)?;
    f.sync_all()
}

/// Check that the entry at `path` is a whole sealed object.
pub fn verify(path: &Path) -> Result<(), Invalid> {
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Invalid::Missing),
        Err(e) => return Err(Invalid::Corrupt(format!("cannot read it: {e}"))),
    };
    if data.len() < TRAILER || &data[data.len() - MAGIC.len()..] != MAGIC {
        return Err(Invalid::Corrupt(format!(
            "{} bytes without a weft trailer (truncated or not written by weft)",
            data.len()
        )));
    }
    let body_len = data.len() - TRAILER;
    let mut len = [0u8; 8];
    len.copy_from_slice(&data[body_len + 32..body_len + 40]);
    if u64::from_le_bytes(len) != body_len as u64 {
        return Err(Invalid::Corrupt(format!(
            "the trailer records {} bytes, the file holds {body_len}",
            u64::from_le_bytes(len)
        )));
    }
    if Sha256::digest(&data[..body_len]).as_slice() != &data[body_len..body_len + 32] {
        return Err(Invalid::Corrupt(
            "its content does not match its hash".into(),
        ));
    }
    Ok(())
}

/// Whether process `pid` runs, where that can be told (Linux `/proc`); `true` when it cannot.
fn process_alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    !proc.join("self").exists() || proc.join(pid.to_string()).exists()
}

/// Remove the temporaries (`tmp-PID-...`) in `dir` that no compile is writing any more: their
/// process has ended, or they are older than a day. Errors are ignored: another process may
/// sweep or rename the same files at the same time.
pub fn sweep_temporaries(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("tmp-")) else {
            continue;
        };
        let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        let age = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .unwrap_or_default();
        let orphaned = pid.is_some_and(|p| p != std::process::id() && !process_alive(p));
        if orphaned || age > STALE_AFTER {
            let _ = std::fs::remove_file(e.path());
        }
    }
}
