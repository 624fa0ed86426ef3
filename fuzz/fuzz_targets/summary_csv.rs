//! An experiment's `summary.csv` as `report` and `compare` read it: any bytes are read without
//! panicking; a table that reads has rows as wide as its header's varied keys, and a refusal
//! names its line.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match ldplayer_report::summary_csv::parse_summary(data) {
        Ok(table) => {
            for row in &table.rows {
                assert_eq!(row.varied.len(), table.keys.len());
            }
        }
        Err(why) => assert!(why.contains("line ") || why.contains("empty"), "{why}"),
    }
});
