//! From a plan to its runs: every combination of the varied values, each repeated.

use super::settings::RunSettings;
use super::{Plan, TraceSource};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// One run of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// Position among the plan's runs, from 0.
    pub index: usize,
    /// The run's name and folder: `001-proto=tcp+rtt_ms=20-r1` (number from 1, the varied
    /// values, the repeat), made of letters, digits and `.+=_-` only, the same every time the
    /// plan is read.
    pub id: String,
    /// Which repeat of its combination, from 1.
    pub repeat: u32,
    /// The varied keys and their values as `summary.csv` shows them, in `[vary]` order.
    pub varied: Vec<(String, String)>,
    /// Everything the run is made of.
    pub settings: RunSettings,
}

impl Plan {
    /// Every run, the first `[vary]` key the outermost loop and the repeats the innermost.
    pub fn runs(&self) -> Vec<RunSpec> {
        let combinations = self.combinations();
        let total = combinations.len() * self.repeat as usize;
        let width = total.to_string().len().max(3);
        let mut runs = Vec::with_capacity(total);
        for combination in &combinations {
            let settings = self.settings_of(combination);
            let varied: Vec<(String, String)> = self
                .vary
                .iter()
                .zip(combination)
                .map(|(d, &i)| (d.key.name().to_string(), d.values[i].label.clone()))
                .collect();
            for repeat in 1..=self.repeat {
                let index = runs.len();
                let mut id = format!("{:0width$}", index + 1);
                if !varied.is_empty() {
                    id.push('-');
                    id.push_str(&safe(&self.varied_text(combination, "+")));
                }
                write!(id, "-r{repeat}").expect("writing to a String cannot fail");
                runs.push(RunSpec {
                    index,
                    id,
                    repeat,
                    varied: varied.clone(),
                    settings: settings.clone(),
                });
            }
        }
        runs
    }

    /// Every combination of varied values, as the index of each dimension's value, the
    /// first dimension changing slowest. One empty combination when nothing is varied.
    pub(super) fn combinations(&self) -> Vec<Vec<usize>> {
        let mut all = vec![Vec::new()];
        for d in &self.vary {
            all = all
                .into_iter()
                .flat_map(|c| {
                    (0..d.values.len()).map(move |i| {
                        let mut c = c.clone();
                        c.push(i);
                        c
                    })
                })
                .collect();
        }
        all
    }

    /// The settings of the run with these value indices.
    pub(super) fn settings_of(&self, combination: &[usize]) -> RunSettings {
        let mut s = self.base.clone();
        for (d, &i) in self.vary.iter().zip(combination) {
            d.values[i].setting.apply(&mut s, self.client_idle_follows);
        }
        if self.server_tls.is_none() {
            s.server.tls = self.base.server.tls && s.server.kind.supports_tls();
        }
        s
    }

    /// `proto=tcp+rtt_ms=20` for a combination, joined by `separator`.
    pub(super) fn varied_text(&self, combination: &[usize], separator: &str) -> String {
        self.vary
            .iter()
            .zip(combination)
            .map(|(d, &i)| format!("{}={}", d.key, d.values[i].label))
            .collect::<Vec<_>>()
            .join(separator)
    }

    /// What `ldplayer experiment --check` prints: one line per run (its name and how long
    /// its trace lasts), then the totals. A trace file is read once to learn its length.
    pub fn describe_runs(&self) -> String {
        let runs = self.runs();
        let file_s = match &self.base.trace.source {
            TraceSource::File(path) => crate::model::trace_duration_s(path).ok(),
            TraceSource::Synth(_) => None,
        };
        let mut out = String::new();
        let mut total_s = Some(0.0);
        for run in &runs {
            let trace_s = match run.settings.client.ramp {
                // A ramp lasts its length, whatever the trace's times.
                Some(ramp) => Some(ramp.ramp_s),
                None => run
                    .settings
                    .trace
                    .expected_duration_s()
                    .or_else(|| file_s.map(|d| d * run.settings.trace.time_factor())),
            };
            let _ = match trace_s {
                Some(d) => writeln!(out, "{}\t{d:.0} s", run.id),
                None => writeln!(out, "{}\tlength unknown", run.id),
            };
            total_s = total_s
                .zip(trace_s)
                .map(|(t, d)| t + d + run.settings.cooldown_s);
        }
        let combinations = runs.len() / self.repeat.max(1) as usize;
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let _ = write!(
            out,
            "{} ({} × {})",
            plural(runs.len(), "run", "runs"),
            plural(combinations, "combination", "combinations"),
            plural(self.repeat as usize, "repeat", "repeats")
        );
        let _ = match total_s {
            Some(t) => writeln!(out, ", about {} of replay", human_duration(t)),
            None => writeln!(out),
        };
        out
    }
}

/// `2 h 5 min`, `3 min 20 s`, `42 s`.
fn human_duration(s: f64) -> String {
    let s = s.round() as u64;
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, sec) => format!("{sec} s"),
        (0, min, sec) => format!("{min} min {sec} s"),
        (h, min, _) => format!("{h} h {min} min"),
    }
}

/// `text` with every character that is not a letter, digit or one of `.+=_-` made `_`.
fn safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || ".+=_-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}
