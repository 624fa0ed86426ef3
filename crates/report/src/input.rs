//! What `ldplayer report` is given: a replay's results file or an experiment directory, told
//! apart by their content, and the report made of several of them side by side.

use crate::error::ReportError;
use crate::experiment::{self, ExperimentData};
use crate::html::{Report, Section};
use crate::replay::{self, ReplayData};
use std::path::{Path, PathBuf};

/// One input of a report, read.
#[derive(Debug)]
pub enum Input {
    /// A replay's results file (`ldplayer replay --results`).
    Replay(Box<ReplayData>),
    /// An experiment directory (`ldplayer experiment -o DIR`).
    Experiment(Box<ExperimentData>),
}

/// An input with the label it is shown under (its file or directory name, made unique).
#[derive(Debug)]
pub struct Labelled {
    /// The label in legends and headings.
    pub label: String,
    /// Where it was read from.
    pub path: PathBuf,
    /// What was read.
    pub input: Input,
}

impl Input {
    /// Reads `path`: a directory is an experiment, a file a results file. Whatever can be read
    /// of a damaged input is kept, with notes saying what was lost; an input with nothing
    /// readable is an error.
    pub fn read(path: &Path) -> Result<Input, ReportError> {
        let meta = std::fs::metadata(path).map_err(|source| ReportError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if meta.is_dir() {
            ExperimentData::read(path).map(|e| Input::Experiment(Box::new(e)))
        } else {
            ReplayData::read(path).map(|r| Input::Replay(Box::new(r)))
        }
    }

    /// The warning that the run which wrote it did not finish, if it did not (replays only:
    /// an experiment's unfinished runs are left out, and said so in its notes).
    pub fn incomplete(&self) -> Option<&str> {
        match self {
            Input::Replay(r) => r.incomplete(),
            Input::Experiment(_) => None,
        }
    }

    /// What could not be read, in sentences.
    pub fn notes(&self) -> &[String] {
        match self {
            Input::Replay(r) => r.notes(),
            Input::Experiment(e) => e.notes(),
        }
    }
}

/// Reads every input, labelling each by its name (with a number when two share one).
pub fn read_all(paths: &[PathBuf]) -> Result<Vec<Labelled>, ReportError> {
    let mut inputs: Vec<Labelled> = Vec::with_capacity(paths.len());
    for path in paths {
        let input = Input::read(path)?;
        let name = path.file_stem().or_else(|| path.file_name()).map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let mut label = name.clone();
        let mut n = 1;
        while inputs.iter().any(|i| i.label == label) {
            n += 1;
            label = format!("{name}-{n}");
        }
        inputs.push(Labelled {
            label,
            path: path.clone(),
            input,
        });
    }
    Ok(inputs)
}

/// What could not be read of `inputs`, each sentence after its input's label.
pub fn notes(inputs: &[Labelled]) -> Vec<String> {
    inputs
        .iter()
        .flat_map(|i| {
            i.input
                .notes()
                .iter()
                .map(move |n| format!("{}: {n}", i.label))
        })
        .collect()
}

/// The report of `inputs`: replays overlaid in one section, experiments side by side in theirs,
/// and a section listing what could not be read.
pub fn report(title: &str, inputs: &[Labelled]) -> Report {
    let mut header: Vec<(String, String)> = Vec::new();
    for i in inputs {
        let kind = match i.input {
            Input::Replay(_) => "replay results",
            Input::Experiment(_) => "experiment",
        };
        header.push((
            format!("input {}", i.label),
            format!("{kind}: {}", i.path.display()),
        ));
    }
    let replays: Vec<(&str, &ReplayData)> = inputs
        .iter()
        .filter_map(|i| match &i.input {
            Input::Replay(r) => Some((i.label.as_str(), r.as_ref())),
            Input::Experiment(_) => None,
        })
        .collect();
    let experiments: Vec<(&str, &ExperimentData)> = inputs
        .iter()
        .filter_map(|i| match &i.input {
            Input::Experiment(e) => Some((i.label.as_str(), e.as_ref())),
            Input::Replay(_) => None,
        })
        .collect();
    for (label, e) in &experiments {
        for (key, value) in e.header() {
            let key = if experiments.len() > 1 {
                format!("{label}: {key}")
            } else {
                key
            };
            header.push((key, value));
        }
    }
    let mut sections = Vec::new();
    if !experiments.is_empty() {
        sections.extend(experiment::sections(&experiments));
    }
    if !replays.is_empty() {
        sections.push(replay::section(&replays));
    }
    let replay_files: Vec<(&str, PathBuf)> = inputs
        .iter()
        .filter(|i| matches!(i.input, Input::Replay(_)))
        .map(|i| (i.label.as_str(), i.path.clone()))
        .collect();
    sections.extend(crate::differences::section(&replay_files));
    let lost = notes(inputs);
    if !lost.is_empty() {
        sections.push(Section {
            title: "What could not be read".into(),
            paragraphs: lost,
            ..Section::default()
        });
    }
    Report {
        title: title.to_string(),
        header,
        warnings: inputs
            .iter()
            .filter_map(|i| i.input.incomplete().map(str::to_string))
            .collect(),
        sections,
    }
}
