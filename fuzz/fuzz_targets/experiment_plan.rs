//! The experiment plan (`ldplayer experiment PLAN.toml`): any text is read without panicking;
//! a plan that reads expands into runs with distinct, filesystem-safe names, each varied key
//! with a value, and a refused plan says where (a line and column inside the text).
#![no_main]
use std::path::Path;

use ldplayer_experiment::{Plan, PlanError};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Paths resolve against a folder that has no files: a plan naming a trace or a zone file
    // is refused for it, which exercises the same checks.
    match Plan::parse(text, Path::new("/nonexistent-fuzz-dir")) {
        Ok(plan) => {
            let runs = plan.runs();
            // A plan whose [vary] multiplies out too far is the user's to notice; keep the
            // fuzzer's memory bounded by checking names only on small ones.
            if runs.len() > 10_000 {
                return;
            }
            let keys = plan.varied_keys();
            let mut names = std::collections::HashSet::new();
            for run in &runs {
                assert!(names.insert(run.id.clone()), "run names are distinct: {}", run.id);
                assert!(
                    run.id.chars().all(|c| c.is_ascii_alphanumeric() || ".+=_-".contains(c)),
                    "{}",
                    run.id
                );
                assert_eq!(run.varied.len(), keys.len());
            }
        }
        Err(PlanError::Invalid { place, .. }) => {
            let lines = text.lines().count().max(1);
            assert!(place.line >= 1 && place.line <= lines + 1, "{place:?} in {lines} lines");
        }
        Err(_) => {}
    }
});
