//! The Deckard scenario reader (`.rpl`, read by `ldplayer zones build` and `zones
//! deckard-queries`): any text is read without panicking, and so is everything done with what
//! reads: the configuration's root hints, the queries and their expected answer lines, and the
//! recorded answers fed to the zone builder, whose hierarchy's root is then completed from the
//! hints, as `zones build` does.
#![no_main]
use ldplayer_zonebuild::deckard::{self, Scenario};
use ldplayer_zonebuild::ZoneBuilder;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // `Scenario::from_file` reads the bytes as UTF-8, replacing what is not.
    let Ok(scenario) = Scenario::parse(&String::from_utf8_lossy(data)) else {
        return;
    };
    let hints = scenario.stub_addrs();
    for query in scenario.queries() {
        let _ = query.entry.as_ref().and_then(|e| e.question.as_ref()).map(|q| q.text());
    }
    for check in scenario.checks() {
        let _ = check.expected_line();
        let _ = check.question_mismatch();
    }
    for (_, entry) in scenario.responses() {
        let _ = entry.matches_answer();
        let _ = entry.answer_lines(true);
    }
    let mut builder = ZoneBuilder::new();
    let fed = scenario.feed(&mut builder);
    assert_eq!(fed, scenario.responses().count() as u64, "every response is fed");
    let mut hierarchy = builder.build();
    let _ = deckard::complete_root(&mut hierarchy, &hints);
});
