//! The serve manifest (`ldplayer serve --manifest`, `ldplayer lab --manifest`): any text is
//! read without panicking, and what reads is what `zones build` could have written: at least
//! one address, each once, in canonical form (no IPv4-mapped IPv6), each with zone files; and
//! writing it and reading that back gives the same manifest.
#![no_main]
use std::path::Path;

use ldplayer_zone::Manifest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Manifests are read as UTF-8 text (`Manifest::from_file`).
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(manifest) = Manifest::parse(text, "fuzz", Path::new("")) else {
        return;
    };
    assert!(!manifest.entries.is_empty(), "a manifest names an address");
    for (i, e) in manifest.entries.iter().enumerate() {
        assert!(!e.zones.is_empty(), "{} serves zone files", e.address);
        assert_eq!(ldplayer_zone::manifest::canonical(e.address), e.address);
        assert!(
            manifest.entries[..i].iter().all(|o| o.address != e.address),
            "{} appears once",
            e.address
        );
    }
    let mut written = Vec::new();
    manifest
        .write(&mut written, Path::new(""))
        .expect("writing to memory");
    let written = String::from_utf8(written).expect("a manifest is written as UTF-8");
    let again = Manifest::parse(&written, "written", Path::new(""))
        .unwrap_or_else(|e| panic!("the written manifest reads back ({e}):\n{written}"));
    assert_eq!(again, manifest, "written:\n{written}");
});
