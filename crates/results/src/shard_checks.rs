//! What a merge of results files should say about its inputs as shards of one replay: shards
//! missing, of other splits, given twice, late to the shared schedule, and clocks less certain
//! than the timing they report. `ldplayer results merge` and `ldplayer replay --processes`
//! print these after [`merge`](crate::merge::merge).

use crate::fidelity::MAX_P99_LATE_US;
use crate::merge::{InputReport, MergeReport};
use crate::run_info::ShardId;
use std::path::Path;

/// The shards of the inputs' split that no input holds, when every input says it is a shard
/// of the same split; none otherwise.
pub fn missing_shards(report: &MergeReport) -> Vec<ShardId> {
    let shards: Vec<Option<ShardId>> = report.inputs.iter().map(shard).collect();
    let Some(Some(first)) = shards.first() else {
        return Vec::new();
    };
    if shards
        .iter()
        .any(|s| s.is_none_or(|s| s.count != first.count))
    {
        return Vec::new();
    }
    (0..first.count)
        .filter(|&index| !shards.iter().flatten().any(|s| s.index == index))
        .map(|index| ShardId {
            index,
            count: first.count,
        })
        .collect()
}

/// Warnings, in words, about the inputs of `report` (read from `files`, in the same order) as
/// shards of one replay: inputs that are no shard beside some that are, shards of different
/// splits or given twice, late inputs ([`late_warning`]), missing shards ([`missing_shards`]),
/// and, across hosts, clocks not synchronised or less precise than the timing error they
/// report.
pub fn shard_warnings<P: AsRef<Path>>(files: &[P], report: &MergeReport) -> Vec<String> {
    let name = |i: usize| files.get(i).map_or(String::new(), display);
    let mut warnings = Vec::new();
    let shards: Vec<(usize, ShardId)> = report
        .inputs
        .iter()
        .enumerate()
        .filter_map(|(i, input)| Some((i, shard(input)?)))
        .collect();
    if !shards.is_empty() && shards.len() < files.len() {
        warnings.push(format!(
            "{} of {} inputs are not shards of a split replay (no --shard): merging them as given",
            files.len() - shards.len(),
            files.len()
        ));
    }
    if let Some(&(_, first)) = shards.first() {
        if shards.iter().any(|(_, s)| s.count != first.count) {
            let list: Vec<String> = shards
                .iter()
                .map(|(i, s)| format!("{} is {s}", name(*i)))
                .collect();
            warnings.push(format!(
                "the inputs are shards of different splits ({}): their clients overlap",
                list.join(", ")
            ));
        }
        for (n, (i, s)) in shards.iter().enumerate() {
            if let Some((j, _)) = shards[..n].iter().find(|(_, t)| t == s) {
                warnings.push(format!("{} and {} are both shard {s}", name(*j), name(*i)));
            }
        }
    }
    for (file, input) in files.iter().zip(&report.inputs) {
        if input.late() {
            warnings.push(late_warning(file.as_ref(), input));
        }
    }
    let missing = missing_shards(report);
    if let Some(first) = missing.first() {
        let list: Vec<String> = missing.iter().map(|s| s.to_string()).collect();
        warnings.push(format!(
            "shard{} {} {} missing: merged {} of {} shards (the result covers only their \
             clients)",
            if missing.len() == 1 { "" } else { "s" },
            list.join(", "),
            if missing.len() == 1 { "is" } else { "are" },
            first.count as usize - missing.len(),
            first.count
        ));
    }
    warnings.extend(clock_warnings(files, report));
    warnings
}

/// Clocks matter between hosts (shards of one host share its clock): an input whose host's
/// clock was not synchronised, or whose clock error is over the timing error it reports.
fn clock_warnings<P: AsRef<Path>>(files: &[P], report: &MergeReport) -> Vec<String> {
    let mut hosts: Vec<&str> = report
        .inputs
        .iter()
        .filter_map(|i| i.run_info.as_ref()?.host.as_deref())
        .collect();
    hosts.sort_unstable();
    hosts.dedup();
    if hosts.len() < 2 {
        return Vec::new();
    }
    let mut warnings = Vec::new();
    for (file, input) in files.iter().zip(&report.inputs) {
        let Some(clock) = input.run_info.as_ref().and_then(|r| r.clock) else {
            continue;
        };
        if !clock.synchronized {
            warnings.push(format!(
                "{}: its host's clock was not synchronised (no NTP/PTP discipline): its send \
                 times may be off those of other hosts by any amount",
                display(file)
            ));
        } else if let Some(p50) = input.timing_error_p50_us {
            if clock.est_error_us as f64 > p50 {
                warnings.push(format!(
                    "{}: its host's clock error ({} µs, as estimated by the kernel) is larger \
                     than the median timing error it reports ({p50} µs): across hosts, timing \
                     is only as good as the clocks",
                    display(file),
                    clock.est_error_us
                ));
            }
        }
    }
    warnings
}

/// How an input is named in a merge's report: its shard (`1/3`), or its file when it is not a
/// shard of a split replay.
pub fn input_name(file: &Path, input: &InputReport) -> String {
    match shard(input) {
        Some(shard) => shard.to_string(),
        None => file.display().to_string(),
    }
}

/// The warning for an input that kept the shared schedule badly ([`InputReport::late`]): which
/// shard, whether it began late and how many queries it then did not send, and its timing
/// error.
pub fn late_warning(file: &Path, input: &InputReport) -> String {
    let who = match shard(input) {
        Some(shard) => format!("shard {shard} ({})", file.display()),
        None => file.display().to_string(),
    };
    let timing = match (input.timing_error_p50_us, input.timing_error_p99_us) {
        (Some(p50), Some(p99)) => format!("timing error p50 {}, p99 {}", micros(p50), micros(p99)),
        _ => "it sent nothing".to_string(),
    };
    if input.late_start > 0 {
        let by = input
            .began_late_ns
            .map(|ns| format!(" at least {}", micros(ns as f64 / 1e3)))
            .unwrap_or_default();
        format!(
            "{who} began{by} after the shared start: the {} queries due before then were not \
             sent (late-start); {timing} over the queries it sent",
            input.late_start
        )
    } else {
        format!(
            "{who} sent late, it did not keep the shared schedule: {timing} (at most {} at \
             p99)",
            micros(MAX_P99_LATE_US)
        )
    }
}

/// The shard an input says it is.
fn shard(input: &InputReport) -> Option<ShardId> {
    input.run_info.as_ref().and_then(|r| r.shard)
}

fn display<P: AsRef<Path>>(file: P) -> String {
    file.as_ref().display().to_string()
}

/// A duration in µs, in the unit that reads best (µs, ms, s).
fn micros(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.2} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{us:.0} µs")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::Damage;
    use crate::run_info::RunInfo;

    fn input(shard: Option<(u32, u32)>) -> InputReport {
        InputReport {
            results: 10,
            damage: Damage::default(),
            cut_short: false,
            run_info: Some(RunInfo {
                shard: shard.map(|(index, count)| ShardId { index, count }),
                ..RunInfo::default()
            }),
            timing_error_p50_us: Some(10.0),
            timing_error_p99_us: Some(20.0),
            late_start: 0,
            began_late_ns: None,
        }
    }

    fn report(inputs: Vec<InputReport>) -> MergeReport {
        MergeReport {
            inputs,
            merged: 0,
            duplicates: 0,
            late: 0,
        }
    }

    #[test]
    fn missing_shards_of_one_split_are_named() {
        let r = report(vec![input(Some((0, 3))), input(Some((2, 3)))]);
        assert_eq!(missing_shards(&r), [ShardId { index: 1, count: 3 }]);
        let w = shard_warnings(&["a.res", "c.res"], &r);
        assert_eq!(
            w,
            ["shard 1/3 is missing: merged 2 of 3 shards (the result covers only their clients)"]
        );
        // Inputs that are no shard: nothing is missing.
        let r = report(vec![input(Some((0, 3))), input(None)]);
        assert!(missing_shards(&r).is_empty());
        assert!(shard_warnings(&["a.res", "b.res"], &r)[0].starts_with("1 of 2 inputs"));
    }

    #[test]
    fn shards_given_twice_or_of_other_splits_are_said() {
        let r = report(vec![
            input(Some((0, 2))),
            input(Some((0, 2))),
            input(Some((1, 3))),
        ]);
        let w = shard_warnings(&["a.res", "b.res", "c.res"], &r).join("\n");
        assert!(
            w.contains("shards of different splits (a.res is 0/2, b.res is 0/2, c.res is 1/3)"),
            "{w}"
        );
        assert!(w.contains("a.res and b.res are both shard 0/2"), "{w}");
    }

    #[test]
    fn a_late_shard_is_named_with_what_it_did_not_send() {
        let mut late = input(Some((1, 2)));
        late.late_start = 7;
        late.began_late_ns = Some(2_500_000);
        let w = late_warning(Path::new("b.res"), &late);
        assert!(
            w.starts_with(
                "shard 1/2 (b.res) began at least 2.50 ms after the shared start: the 7 queries"
            ),
            "{w}"
        );
        assert_eq!(input_name(Path::new("b.res"), &late), "1/2");
        assert_eq!(input_name(Path::new("b.res"), &input(None)), "b.res");
    }
}
