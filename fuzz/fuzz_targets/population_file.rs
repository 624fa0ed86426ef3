//! A population file as `replay --population` reads it: any text is read without panicking; a
//! file that reads has shares adding up to 1, survives writing and reading again, and puts
//! every client in one of its groups.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ldplayer_population::Population;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(p) = Population::from_toml(text) else {
        return;
    };
    let total: f64 = p.groups.iter().map(|g| g.share).sum();
    assert!((total - 1.0).abs() <= 1e-6);
    let again = Population::from_toml(&p.to_toml()).expect("what was read writes back");
    assert_eq!(again.groups.len(), p.groups.len());
    for last in 0..=255u8 {
        let g = p.group_of(std::net::IpAddr::from([10, 0, 0, last]));
        assert!(g < p.groups.len());
    }
});
