//! `ldplayer`: DNS experimentation at scale.
//!
//! This crate is the thin command-line layer: it parses arguments, opens inputs and outputs,
//! connects the library crates (trace formats, capture reader, synthesizer, mutator, inspector)
//! and prints summaries. Everything it does is available from those crates.

#![forbid(unsafe_code)]

mod args;
mod cmd;
mod guard;
mod io;
mod progress;
mod values;

use clap::Parser;

#[global_allocator]
static ALLOCATOR: ldplayer_system::allocator::Allocator = ldplayer_system::allocator::Allocator;

fn main() {
    ldplayer_system::process::restore_default_sigpipe();
    // The lab's server side and the sides of an experiment's run: this program started again
    // in namespaces of their own, told so in the environment, not on the command line.
    match ldplayer_lab::run_side_if_asked(cmd::lab::report_meta_server) {
        Ok(false) => {}
        done => return exit_on_error(done.map(drop).map_err(anyhow::Error::from)),
    }
    match ldplayer_experiment::run_side_if_asked() {
        Ok(false) => {}
        done => return exit_on_error(done.map(drop).map_err(anyhow::Error::from)),
    }
    let args = args::Cli::parse();
    exit_on_error(guard::claim(&args.command));
    let result = match args.command {
        args::Command::Convert(a) => cmd::convert::run(a),
        args::Command::Inspect(a) => cmd::inspect::run(a),
        args::Command::Synth(a) => cmd::synth::run(a),
        args::Command::Mutate(a) => cmd::mutate::run(a),
        args::Command::Replay(a) => cmd::replay::run(*a),
        args::Command::Results(c) => cmd::results::run(c),
        args::Command::Zones(c) => cmd::zones::run(c),
        args::Command::Lab(a) => cmd::lab::run(a),
        args::Command::Experiment(a) => cmd::experiment::run(a),
        args::Command::Report(a) => cmd::report::run(a),
        args::Command::Serve(a) => cmd::serve::run(a),
        args::Command::Demo(a) => cmd::demo::run(a),
        args::Command::Compare(a) => cmd::compare::run(a),
        args::Command::Diff(a) => cmd::diff::run(a),
        args::Command::Population(c) => cmd::population::run(c),
        args::Command::Dnstap(c) => cmd::dnstap::run(c),
    };
    exit_on_error(result);
}

/// Reports an error and exits with status 1.
fn exit_on_error(result: anyhow::Result<()>) {
    if let Err(e) = result {
        eprintln!("ldplayer: {}", error_chain(&e));
        std::process::exit(1);
    }
}

/// The error and its causes, `: `-separated as `{:#}` writes them, without the causes whose
/// message the one before already says: an error type that puts its source into its own
/// message (`#[error("{path}: {source}")]`) and also returns it from `source()` would otherwise
/// print it twice (`t.bin: not a results file (bad magic): not a results file (bad magic)`).
fn error_chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    let mut last: Option<String> = None;
    for cause in e.chain() {
        let message = cause.to_string();
        if last.as_deref().is_some_and(|l| l.contains(&message)) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&message);
        last = Some(message);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::error_chain;

    use std::fmt;

    /// A results-file error as `report` met it: its message embeds its source, which it also
    /// returns as its source.
    #[derive(Debug)]
    struct Embeds {
        path: &'static str,
        source: Inner,
    }

    impl fmt::Display for Embeds {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "{}: {}", self.path, self.source)
        }
    }

    impl std::error::Error for Embeds {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.source)
        }
    }

    #[derive(Debug)]
    struct Inner;

    impl fmt::Display for Inner {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("not an ldplayer results file (bad magic)")
        }
    }

    impl std::error::Error for Inner {}

    #[test]
    fn a_cause_the_message_already_says_is_printed_once() {
        let e = anyhow::Error::new(Embeds {
            path: "t.bin",
            source: Inner,
        })
        .context("reading the inputs");
        assert_eq!(
            error_chain(&e),
            "reading the inputs: t.bin: not an ldplayer results file (bad magic)"
        );
        assert_eq!(format!("{e:#}").matches("bad magic").count(), 2);
        // Causes the message does not say are all printed, as `{:#}` does.
        let e = anyhow::anyhow!("bad magic").context("reading t.bin");
        assert_eq!(error_chain(&e), format!("{e:#}"));
    }
}
