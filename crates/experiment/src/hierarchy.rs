//! A plan's synthetic hierarchy (`[server] hierarchy`): made once per experiment, signed if
//! asked, in the layout of `ldplayer zones build`, and shared by every run that asks for the
//! same one.

use std::path::{Path, PathBuf};

use ldplayer_zonebuild::{sign, synthetic};

use crate::error::ExperimentError;
use crate::plan::{SignChoice, SynthHierarchy};

/// The root zone file of the hierarchy whose manifest is `manifest` (`zones build`'s layout).
pub fn root_zone(manifest: &Path) -> PathBuf {
    manifest.with_file_name("root.zone")
}

/// Writes the hierarchy `h` into a folder of `dir` named after its shape, unless an earlier
/// run made it (the manifest is written after the zone files); returns the manifest.
pub fn prepare_hierarchy(h: &SynthHierarchy, dir: &Path) -> Result<PathBuf, ExperimentError> {
    let sign = match h.sign {
        SignChoice::None => "unsigned",
        SignChoice::Nsec => "nsec",
        SignChoice::Nsec3 => "nsec3",
    };
    let out = dir.join(format!(
        "{}tlds-{}slds-{}providers-{sign}",
        h.tlds, h.slds, h.providers
    ));
    let manifest = out.join("manifest");
    if manifest.exists() {
        return Ok(manifest);
    }
    let shape = synthetic::Shape {
        tlds: h.tlds,
        slds: h.slds,
        providers: h.providers,
    };
    let mut hierarchy = synthetic::hierarchy(&shape)
        .map_err(|e| ExperimentError::Input(format!("server.hierarchy: {e}")))?;
    if h.sign != SignChoice::None {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let options = sign::SignOptions::around(now, h.sign == SignChoice::Nsec3);
        sign::sign_hierarchy(&mut hierarchy, &out.join("keys"), &options)
            .map_err(|e| ExperimentError::Input(format!("signing the hierarchy: {e}")))?;
    }
    let written = hierarchy
        .write(&out)
        .map_err(|e| ExperimentError::io(&out, e))?;
    Ok(written.manifest)
}
