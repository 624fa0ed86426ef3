//! DNSSEC signing of a hierarchy's root and TLD zones with Debian's ldnsutils
//! (`ldns-keygen`, `ldns-signzone`), bottom-up: each TLD is signed first and its DS goes into
//! the root, which is signed last, so one chain of trust leads from the root's key (the trust
//! anchor, e.g. `lab --trust-anchor auto`) to every TLD. Zones below the TLDs stay unsigned:
//! their delegations are insecure, which the signed TLD proves (no DS, denied by NSEC or
//! NSEC3).
//!
//! One ECDSA P-256 key per zone, generated with the SEP flag (`ldns-keygen -k`) and used for
//! everything (a combined signing key: ldns-signzone signs the DNSKEY set and the zone's data
//! with it). The signed zones are read back into the hierarchy's zones, so that
//! [`Hierarchy::write`] writes them like any other.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use thiserror::Error;

use crate::from_files::{ZoneFile, ZoneFileError};
use crate::hierarchy::{rrsig_time, Hierarchy};

/// Why signing failed.
#[derive(Debug, Error)]
pub enum SignError {
    /// An ldns tool is not installed.
    #[error("{tool} not found: it comes with Debian's ldnsutils (apt-get install ldnsutils)")]
    ToolMissing {
        /// The program.
        tool: &'static str,
    },
    /// An ldns tool could not be run or failed.
    #[error("{tool} for zone {zone} failed: {message}")]
    ToolFailed {
        /// The program.
        tool: &'static str,
        /// The zone it worked on.
        zone: String,
        /// Its standard error, or why it could not run.
        message: String,
    },
    /// A file of the keys directory could not be written or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: io::Error,
    },
    /// A signed zone could not be read back.
    #[error("reading the signed zone back: {0}")]
    Load(#[from] ZoneFileError),
}

/// How to sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignOptions {
    /// Deny with NSEC3 (no salt, no extra iterations, no opt-out) instead of NSEC.
    pub nsec3: bool,
    /// Signatures valid from (Unix seconds).
    pub inception: u32,
    /// Signatures valid until (Unix seconds).
    pub expiration: u32,
}

impl SignOptions {
    /// Signatures valid from one day before `now` (Unix seconds; a clock a little behind
    /// still validates) to ten years after it.
    pub fn around(now: u64, nsec3: bool) -> SignOptions {
        let clamp = |t: u64| u32::try_from(t).unwrap_or(u32::MAX);
        SignOptions {
            nsec3,
            inception: clamp(now.saturating_sub(86_400)),
            expiration: clamp(now.saturating_add(3_652 * 86_400)),
        }
    }
}

/// What was signed.
#[derive(Debug, Clone, Default)]
pub struct Signed {
    /// The signed zones' apexes, the TLDs first, the root last.
    pub zones: Vec<String>,
    /// The key files written (`K<zone>.+013+<tag>.key`, `.private`, `.ds`).
    pub key_files: Vec<PathBuf>,
}

/// Runs an ldns tool in `dir`; its standard output.
fn tool(dir: &Path, tool: &'static str, zone: &str, args: &[&str]) -> Result<String, SignError> {
    let out = Command::new(tool)
        .current_dir(dir)
        .args(args)
        .output()
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => SignError::ToolMissing { tool },
            _ => SignError::ToolFailed {
                tool,
                zone: zone.to_string(),
                message: e.to_string(),
            },
        })?;
    if !out.status.success() {
        return Err(SignError::ToolFailed {
            tool,
            zone: zone.to_string(),
            message: format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> SignError + '_ {
    move |source| SignError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Signs the root and every TLD zone of `h` in place, keys (and the zones' working copies,
/// removed once read back) in `keys_dir` (created if missing). TLDs are zones one label below
/// the root; the DS of each signed TLD is added to the root before the root is signed.
pub fn sign_hierarchy(
    h: &mut Hierarchy,
    keys_dir: &Path,
    options: &SignOptions,
) -> Result<Signed, SignError> {
    std::fs::create_dir_all(keys_dir).map_err(io_error(keys_dir))?;
    let keys_dir = keys_dir.canonicalize().map_err(io_error(keys_dir))?;
    let files = h.file_names();
    let mut order: Vec<usize> = (0..h.zones.len())
        .filter(|&i| h.zones[i].apex.label_count() == 2)
        .collect();
    order.extend((0..h.zones.len()).filter(|&i| h.zones[i].apex.is_root()));
    let inception = rrsig_time(options.inception);
    let expiration = rrsig_time(options.expiration);
    let mut signed = Signed::default();
    let mut ds_records = String::new();
    for i in order {
        let zone = &h.zones[i];
        let apex = zone.name();
        let is_root = zone.apex.is_root();
        let file = keys_dir.join(&files[i]);
        let mut text = zone.to_text();
        if is_root {
            text.push_str(&ds_records);
        }
        ldplayer_output::write(&file, text).map_err(|e| io_error(&file)(e.into()))?;
        let key = tool(
            &keys_dir,
            "ldns-keygen",
            &apex,
            &["-a", "ECDSAP256SHA256", "-k", &apex],
        )?;
        for ext in ["key", "private", "ds"] {
            signed.key_files.push(keys_dir.join(format!("{key}.{ext}")));
        }
        if !is_root {
            let ds_file = keys_dir.join(format!("{key}.ds"));
            let ds = std::fs::read_to_string(&ds_file).map_err(io_error(&ds_file))?;
            ds_records.push_str(ds.trim_end());
            ds_records.push('\n');
        }
        let signed_file = keys_dir.join(format!("{}.signed", files[i]));
        let file_arg = file.to_string_lossy().into_owned();
        let out_arg = signed_file.to_string_lossy().into_owned();
        let mut args = vec!["-i", &inception, "-e", &expiration, "-f", &out_arg];
        if options.nsec3 {
            args.extend(["-n", "-t", "0"]);
        }
        args.extend(["-o", &apex, &file_arg, &key]);
        tool(&keys_dir, "ldns-signzone", &apex, &args)?;
        let read = ZoneFile::read(&signed_file, None)?;
        h.zones[i].records = read.records;
        for f in [&file, &signed_file] {
            std::fs::remove_file(f).map_err(io_error(f))?;
        }
        signed.zones.push(apex);
    }
    h.report.records = h.zones.iter().map(|z| z.records.len() as u64).sum();
    Ok(signed)
}
