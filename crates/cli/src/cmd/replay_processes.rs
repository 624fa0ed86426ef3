//! `ldplayer replay --processes N`: the replay's shards as N child processes on this host, each
//! with its own open-file limit (and, with `--pin`, its own core), merged into one result.
//!
//! Each child is this program run again with the same command line less what the parent
//! handles itself (`--processes`, `--results`, `--report`, `--json`, `--pin`...), plus its
//! `--shard I/N`, one shared `--start-at` and its own results file. So a child is exactly
//! the replay a user could start by hand or through an orchestrator, and every replay option
//! reaches it unchanged. Starting, waiting and merging are
//! [`ldplayer_replay::processes`]'; this module translates the arguments and prints.

use crate::args::ReplayArgs;
use crate::progress::interrupted;
use anyhow::{bail, Context, Result};
use ldplayer_replay::processes::{summarize, Scratch, ShardExit, ShardProcesses};
use ldplayer_results::fidelity::Fidelity;
use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

/// Flags the parent takes for itself, with the values they are followed by.
const PARENT_FLAGS_WITH_VALUE: &[&str] = &[
    "--processes",
    "--results",
    "--report",
    "--shard",
    "--shards",
    "--start-at",
    "--pin",
];
/// Flags without a value the parent takes for itself.
const PARENT_SWITCHES: &[&str] = &["--json", "--quiet", "-q"];

/// Runs `args` as `processes` child shards and merges their results.
pub fn run(args: &ReplayArgs, processes: u32) -> Result<()> {
    if args.shard.is_some() {
        bail!("--processes splits the replay into shards itself: leave out --shard");
    }
    let argv: Vec<OsString> = std::env::args_os().skip(1).collect();
    let child_args = strip_parent_flags(&argv);
    let given_start = args
        .start_at
        .as_deref()
        .map(|t| super::replay_config::parse_instant_ns(t, "--start-at"))
        .transpose()?;
    // The children get the start as given, or the one chosen for them in Unix seconds.
    let start_arg = |ns: i64| {
        args.start_at.clone().unwrap_or_else(|| {
            format!(
                "{}.{:09}",
                ns.div_euclid(1_000_000_000),
                ns.rem_euclid(1_000_000_000)
            )
        })
    };
    let ramp = super::replay::ramp_spec(args)?;
    let results = args.results.clone();
    let inside = results
        .as_deref()
        .and_then(Path::parent)
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let stop = interrupted(); // Ctrl-C reaches the children; the parent waits for them.
    let exe = std::env::current_exe().context("finding this program")?;
    let done = ShardProcesses::new(processes, Scratch::Temporary(inside))
        .start_ns(given_start)
        .run(&stop, |c| {
            let mut cmd = Command::new(&exe);
            cmd.args(&child_args)
                .arg("--shard")
                .arg(c.shard.to_string())
                .arg("--start-at")
                .arg(start_arg(c.start_ns))
                .arg("--results")
                .arg(c.results)
                .args(["--json", "-q"]);
            if !args.pin.is_empty() {
                let pin = args.pin[c.shard.index as usize % args.pin.len()];
                cmd.arg("--pin").arg(pin.to_string());
            }
            Ok(cmd)
        })?;
    let shards = told(done.exits(), processes, args.json || args.quiet);
    // Complete only when every shard finished: marked so at the end, as a single replay is.
    // A ramp's start is the shared one, as the children read it: the merged file keeps both,
    // for its capacity.
    let info = ldplayer_results::RunInfo {
        closed_loop: Some(args.fast),
        answers: args.keep_answers.then_some(true),
        targets: Some(args.server.clone()),
        ramp,
        start_ns: match ramp {
            Some(_) => Some(super::replay_config::parse_instant_ns(
                &start_arg(done.start_ns()),
                "--start-at",
            )?),
            None => None,
        },
        ..Default::default()
    };
    let merged = done.merge(results.as_deref(), &info)?;
    // A child that began after the shared start (a host too busy to start it in time) did not
    // send what was due before it began: said, whatever the output.
    for warning in &merged.late {
        eprintln!("ldplayer: {warning}");
    }
    let (summary, capacity) = summarize(&merged.path)?;
    if let (Some(html), Some(res)) = (&args.report, &results) {
        super::report::write(std::slice::from_ref(res), html, None)
            .context("drawing the report")?;
    }
    if args.json {
        let mut json = serde_json::to_value(&summary)?;
        if let Some(obj) = json.as_object_mut() {
            obj.insert("processes".into(), serde_json::Value::Array(shards.json));
            obj.insert("merged".into(), merged.report.merged.into());
            if !args.fast {
                obj.insert(
                    "fidelity".into(),
                    serde_json::to_value(Fidelity::of(&summary, false))?,
                );
            }
            if let Some(c) = &capacity {
                obj.insert("ramp".into(), serde_json::to_value(c)?);
            }
        }
        println!("{json}");
    } else if !args.quiet {
        print!("{summary}");
        if !args.fast {
            println!("{}", Fidelity::of(&summary, false));
        }
        if let Some(c) = &capacity {
            print!("{c}");
        }
        if let Some(p) = &results {
            println!(
                "results: {} (merged from {processes} processes)",
                p.display()
            );
        }
    }
    if shards.failed > 0 {
        bail!(
            "{} of {processes} shard processes failed (their error is above); the results of \
             the others are merged",
            shards.failed
        );
    }
    Ok(())
}

/// What the children said.
struct Shards {
    /// Each child's `--json` summary (null for one that printed none).
    json: Vec<serde_json::Value>,
    /// Children that exited with an error.
    failed: usize,
}

/// Repeats each child's warnings and errors, prefixed with its shard, and reads its summary.
fn told(exits: &[ShardExit], processes: u32, quiet: bool) -> Shards {
    let mut shards = Shards {
        json: Vec::new(),
        failed: 0,
    };
    for (i, exit) in exits.iter().enumerate() {
        if let Err(e) = &exit.status {
            eprintln!("ldplayer replay: shard {i}/{processes}: {e}");
            shards.failed += 1;
            shards.json.push(serde_json::Value::Null);
            continue;
        }
        let stderr = read(&exit.log);
        for line in String::from_utf8_lossy(&stderr).lines() {
            eprintln!("shard {i}/{processes}: {line}");
        }
        let json: serde_json::Value =
            serde_json::from_slice(&read(&exit.stdout)).unwrap_or(serde_json::Value::Null);
        if !exit.success() {
            shards.failed += 1;
        } else if !quiet {
            eprintln!(
                "shard {i}/{processes}: sent {}, answered {}",
                json["sent"], json["answered"]
            );
        }
        shards.json.push(json);
    }
    shards
}

/// A child's output file, empty when it cannot be read.
fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

/// The command line less the flags the parent handles (in both `--flag value` and
/// `--flag=value` forms).
fn strip_parent_flags(argv: &[OsString]) -> Vec<OsString> {
    let mut out = Vec::with_capacity(argv.len());
    let mut skip_value = false;
    for arg in argv {
        if skip_value {
            skip_value = false;
            continue;
        }
        let s = arg.to_string_lossy();
        if PARENT_SWITCHES.contains(&s.as_ref()) {
            continue;
        }
        if PARENT_FLAGS_WITH_VALUE.contains(&s.as_ref()) {
            skip_value = true;
            continue;
        }
        if let Some((flag, _)) = s.split_once('=') {
            if PARENT_FLAGS_WITH_VALUE.contains(&flag) {
                continue;
            }
        }
        out.push(arg.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parents_flags_are_left_out_in_both_forms() {
        let argv: Vec<OsString> = [
            "replay",
            "t.bin",
            "--server",
            "127.0.0.1:53",
            "--processes",
            "3",
            "--results=r.res",
            "--pin",
            "0,1",
            "--json",
            "-q",
            "--speed",
            "2",
            "--report",
            "x.html",
        ]
        .into_iter()
        .map(OsString::from)
        .collect();
        let kept: Vec<String> = strip_parent_flags(&argv)
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            kept,
            [
                "replay",
                "t.bin",
                "--server",
                "127.0.0.1:53",
                "--speed",
                "2"
            ]
        );
    }
}
