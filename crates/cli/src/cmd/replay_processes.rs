//! `ldplayer replay --processes N`: the replay's shards as N child processes on this host, each
//! with its own open-file limit (and, with `--pin`, its own core), merged into one result.
//!
//! Each child is this program run again with the same command line less what the parent
//! handles itself (`--processes`, `--results`, `--report`, `--json`, `--pin`...), plus its
//! `--shard I/N`, one shared `--start-at` and its own results file. So a child is exactly
//! the replay a user could start by hand or through an orchestrator, and every replay option
//! reaches it unchanged.

use crate::args::ReplayArgs;
use crate::progress::interrupted;
use anyhow::{bail, Context, Result};
use ldplayer_results::fidelity::Fidelity;
use ldplayer_results::{
    merge, Capacity, InputReport, ResultsReader, ResultsWriter, Summary, MERGE_WINDOW,
};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

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
/// How far ahead of now the shared start is set when none was given: time enough for every
/// child to start and read its first queries.
const START_AHEAD_S: f64 = 2.0;

/// Runs `args` as `processes` child shards and merges their results.
pub fn run(args: &ReplayArgs, processes: u32) -> Result<()> {
    if args.shard.is_some() {
        bail!("--processes splits the replay into shards itself: leave out --shard");
    }
    let argv: Vec<OsString> = std::env::args_os().skip(1).collect();
    let child_args = strip_parent_flags(&argv);
    let start = match &args.start_at {
        Some(t) => t.clone(),
        None => format!("{:.3}", unix_now() + START_AHEAD_S),
    };
    let results = args.results.clone();
    let scratch = tempfile::Builder::new()
        .prefix("ldplayer-shards-")
        .tempdir_in(
            results
                .as_deref()
                .and_then(Path::parent)
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new(".")),
        )
        .context("creating a folder for the shards' results")?;
    let files: Vec<PathBuf> = (0..processes)
        .map(|i| scratch.path().join(format!("shard-{i}.res")))
        .collect();
    let _ctrl_c = interrupted(); // Ctrl-C reaches the children; the parent waits for them.
    let exe = std::env::current_exe().context("finding this program")?;
    let mut children = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let mut cmd = Command::new(&exe);
        cmd.args(&child_args)
            .arg("--shard")
            .arg(format!("{i}/{processes}"))
            .arg("--start-at")
            .arg(&start)
            .arg("--results")
            .arg(file)
            .args(["--json", "-q"]);
        if !args.pin.is_empty() {
            cmd.arg("--pin")
                .arg(args.pin[i % args.pin.len()].to_string());
        }
        let child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting shard {i}/{processes}"))?;
        children.push(child);
    }
    let shards = wait_for(children, processes, args.json || args.quiet);
    let merged = match &results {
        Some(p) => p.clone(),
        None => scratch.path().join("merged.res"),
    };
    let readers = files
        .iter()
        .filter(|f| f.exists())
        .map(|f| ResultsReader::open(f).with_context(|| format!("reading {}", f.display())))
        .collect::<Result<Vec<_>>>()?;
    // Complete only when every shard finished: marked so at the end, as a single replay is.
    // A ramp's start is the shared one: the merged file keeps both, for its capacity.
    let ramp = super::replay::ramp_spec(args)?;
    let unfinished_run = ldplayer_results::RunInfo {
        complete: Some(false),
        closed_loop: Some(args.fast),
        answers: args.keep_answers.then_some(true),
        targets: Some(args.server.clone()),
        ramp,
        start_ns: match ramp {
            Some(_) => Some(super::replay_config::parse_instant_ns(
                &start,
                "--start-at",
            )?),
            None => None,
        },
        ..Default::default()
    };
    let mut out = ResultsWriter::create_with_run_info(&merged, &unfinished_run)
        .with_context(|| format!("cannot create {}", merged.display()))?;
    let report = merge(readers, &mut out, MERGE_WINDOW)?;
    // A child that began after the shared start (a host too busy to start it in time) did not
    // send what was due before it began: said, whatever the output.
    for (file, input) in files.iter().zip(&report.inputs) {
        if input.late_start > 0 {
            eprintln!(
                "ldplayer: {}",
                ldplayer_results::shard_checks::late_warning(file, input)
            );
        }
    }
    out.into_inner()
        .with_context(|| format!("writing {}", merged.display()))?;
    let unfinished = report.inputs.iter().any(InputReport::unfinished);
    if shards.failed == 0 && !unfinished {
        ldplayer_results::mark_complete(&merged)
            .with_context(|| format!("marking {} complete", merged.display()))?;
    }
    let mut reader =
        ResultsReader::open(&merged).with_context(|| format!("reading {}", merged.display()))?;
    let mut capacity = Capacity::for_run(reader.run_info());
    let mut summary = Summary::new();
    for r in &mut reader {
        let r = r?;
        summary.add(&r);
        if let Some(c) = &mut capacity {
            c.add(&r);
        }
    }
    let summary = summary.report();
    let capacity = capacity.map(|c| c.report());
    if let (Some(html), Some(res)) = (&args.report, &results) {
        super::report::write(std::slice::from_ref(res), html, None)
            .context("drawing the report")?;
    }
    if args.json {
        let mut json = serde_json::to_value(&summary)?;
        if let Some(obj) = json.as_object_mut() {
            obj.insert("processes".into(), serde_json::Value::Array(shards.json));
            obj.insert("merged".into(), report.merged.into());
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

/// Waits for every child; repeats each one's warnings and errors, prefixed with its shard.
fn wait_for(children: Vec<Child>, processes: u32, quiet: bool) -> Shards {
    let mut shards = Shards {
        json: Vec::new(),
        failed: 0,
    };
    for (i, child) in children.into_iter().enumerate() {
        let out = match child.wait_with_output() {
            Ok(out) => out,
            Err(e) => {
                eprintln!("ldplayer replay: shard {i}/{processes}: {e}");
                shards.failed += 1;
                shards.json.push(serde_json::Value::Null);
                continue;
            }
        };
        for line in String::from_utf8_lossy(&out.stderr).lines() {
            eprintln!("shard {i}/{processes}: {line}");
        }
        let json: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
        if !out.status.success() {
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

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
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
