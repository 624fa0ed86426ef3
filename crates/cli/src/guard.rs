//! Every command's inputs and outputs, given to the one output guard ([`ldplayer_output`])
//! before the command runs: its inputs are protected, and each output it names is claimed, so
//! that an output that is an input (by any name or link), or that two options both name, is
//! refused before anything is read or written. The libraries protect the further files they
//! open themselves (the zone files of a manifest, the trace of an experiment plan), and every
//! file is created through the guard, which checks it once more.

use crate::args::{Command, DnstapCommand, PopulationCommand, ResultsCommand, ZonesCommand};
use std::path::{Path, PathBuf};

/// The files a command reads and the outputs it names (each with the option naming it).
#[derive(Debug, Default)]
pub struct Files<'a> {
    /// Files read.
    pub inputs: Vec<&'a Path>,
    /// Files written, with the option that names them (`-o`, `--report`).
    pub outputs: Vec<(&'static str, &'a Path)>,
    /// Files read, named as `FILE@ORIGIN` (the origin left out) or found in what was named.
    pub owned_inputs: Vec<PathBuf>,
}

impl<'a> Files<'a> {
    fn input(mut self, p: &'a Path) -> Self {
        self.inputs.push(p);
        self
    }
    fn inputs(mut self, ps: impl IntoIterator<Item = &'a PathBuf>) -> Self {
        self.inputs.extend(ps.into_iter().map(PathBuf::as_path));
        self
    }
    fn maybe_input(self, p: Option<&'a PathBuf>) -> Self {
        self.inputs(p)
    }
    fn output(mut self, flag: &'static str, p: &'a Path) -> Self {
        self.outputs.push((flag, p));
        self
    }
    fn maybe_output(self, flag: &'static str, p: Option<&'a PathBuf>) -> Self {
        match p {
            Some(p) => self.output(flag, p),
            None => self,
        }
    }
}

/// The files `command` reads and writes. Folders it writes into (`zones build -o DIR`) are not
/// listed: each file written in them goes through the guard.
pub fn files(command: &Command) -> Files<'_> {
    let f = Files::default();
    match command {
        Command::Convert(a) => f.inputs(&a.inputs).output("-o", &a.write.output),
        Command::Inspect(a) => f.inputs(&a.inputs),
        Command::Synth(a) => f
            .maybe_input(a.population.as_ref())
            .output("-o", &a.write.output),
        Command::Mutate(a) => f.input(&a.input).output("-o", &a.write.output),
        Command::Replay(a) => f
            .input(&a.trace)
            .maybe_input(a.population.as_ref())
            .maybe_input(a.tls_ca.as_ref())
            .maybe_output("--results", a.results.as_ref())
            .maybe_output("--report", a.report.as_ref()),
        Command::Serve(a) => {
            let mut f = f;
            f.owned_inputs = a.zones.iter().map(|z| zone_file(z)).collect();
            f
        }
        .maybe_input(a.manifest.as_ref())
        .maybe_input(a.tls_cert.as_ref())
        .maybe_input(a.tls_key.as_ref())
        .maybe_output("--stats", a.stats.as_ref()),
        Command::Results(ResultsCommand::Export(a)) => f
            .input(&a.file)
            .maybe_input(a.with_trace.as_ref())
            .maybe_output("-o", a.output.as_ref()),
        Command::Results(ResultsCommand::Summary(a)) => f.input(&a.file),
        Command::Results(ResultsCommand::Merge(a)) => f.inputs(&a.files).output("-o", &a.output),
        Command::Zones(ZonesCommand::Build(a)) => {
            let mut f = f.inputs(&a.inputs);
            f.owned_inputs = a.zone.iter().map(|z| zone_file(Path::new(z))).collect();
            f
        }
        Command::Zones(ZonesCommand::DeckardQueries(a)) => f
            .input(&a.scenario)
            .maybe_output("-o", a.output.as_ref())
            .maybe_output("--lab-options", a.lab_options.as_ref()),
        Command::Zones(ZonesCommand::Synth(_)) => f,
        Command::Lab(a) => f
            .input(&a.manifest)
            .maybe_input(a.hints.as_ref())
            .maybe_input(a.names.as_ref())
            .maybe_input(a.trace.as_ref())
            .maybe_input(a.population.as_ref())
            .maybe_output("--answers", a.answers.as_ref())
            .maybe_output("--results", a.results.as_ref())
            .maybe_output("--capture", a.capture.as_ref())
            .maybe_output("--dnstap", a.dnstap.as_ref()),
        Command::Experiment(a) => f.input(&a.plan),
        Command::Report(a) => f.inputs(&a.inputs).output("-o", &a.output),
        Command::Demo(_) => f,
        Command::Compare(a) => f.input(&a.base).input(&a.new),
        Command::Diff(a) => f
            .inputs(&a.results)
            .maybe_input(a.criteria.as_ref())
            .maybe_input(a.trace.as_ref())
            .maybe_input(a.tls_ca.as_ref())
            .maybe_output("--csv", a.csv.as_ref()),
        Command::Population(PopulationCommand::Fit(a)) => f.input(&a.input).output("-o", &a.output),
        // The socket the collector makes is a file it writes too: never the output.
        Command::Dnstap(DnstapCommand::Listen(a)) => f
            .maybe_output("--unix", a.unix.as_ref())
            .output("-o", &a.write.output),
    }
}

/// The file of a zone file argument (`FILE` or `FILE@ORIGIN`).
fn zone_file(arg: &Path) -> PathBuf {
    ldplayer_zone::reader::file_and_origin(arg).0
}

/// Protects `command`'s inputs and claims its outputs: fails, naming both, when an output is
/// one of the inputs or two options name the same output.
pub fn claim(command: &Command) -> anyhow::Result<()> {
    ldplayer_output::enable();
    let files = files(command);
    // The zone files a manifest lists are inputs too (the manifest's reader protects them); a
    // manifest that cannot be read is reported by the command itself.
    if let Command::Serve(crate::args::ServeArgs {
        manifest: Some(m), ..
    })
    | Command::Lab(crate::args::LabArgs { manifest: m, .. }) = command
    {
        let _ = ldplayer_zone::Manifest::from_file(m);
    }
    for input in files
        .inputs
        .iter()
        .copied()
        .chain(files.owned_inputs.iter().map(PathBuf::as_path))
    {
        ldplayer_output::protect_input(input);
    }
    for (flag, output) in files.outputs {
        ldplayer_output::claim(output, flag)?;
    }
    Ok(())
}
