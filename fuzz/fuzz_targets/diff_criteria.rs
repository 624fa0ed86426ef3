//! `diff --criteria` files: any text is read without panicking; what is accepted compares at
//! least one field, in the order of every field, and a bound's text is read the same way.
#![no_main]
use ldplayer_diff::{Bound, Criteria, Field};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(c) = Criteria::from_toml(text) {
        assert!(!c.fields.is_empty());
        let order: Vec<usize> = c.fields.iter().map(|f| f.index()).collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
        assert!(c.fields.iter().all(|f| Field::from_name(f.name()) == Some(*f)));
    }
    if let Ok(b) = Bound::parse(text) {
        assert!((0.0..=100.0).contains(&b.max_pct));
    }
});
