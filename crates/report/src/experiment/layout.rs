//! Where a run goes in a figure: its category on the x axis (the varied key other than the
//! protocol), its series (the protocol, or the keys left), and the names that say which input
//! it comes from when several are shown side by side.

use super::{ExperimentData, RunData};
use crate::figure::Table;

/// The inputs of a report, each with its layout.
pub(super) struct Inputs<'a> {
    /// In the order given.
    pub list: Vec<Input<'a>>,
}

/// One experiment of a report and how its runs are placed.
pub(super) struct Input<'a> {
    /// Its label in the report.
    pub label: &'a str,
    /// What it holds.
    pub data: &'a ExperimentData,
    /// The varied key on the x axis: the first one other than `proto`, else `proto`; `None`
    /// when nothing is varied.
    pub x_key: Option<String>,
    /// The varied keys that tell series apart (the rest).
    pub series_keys: Vec<String>,
    /// Whether some combination ran more than once (each repeat is then its own series).
    pub repeats: bool,
    /// Whether names carry the label (several inputs).
    prefixed: bool,
}

impl<'a> Inputs<'a> {
    pub fn new(inputs: &[(&'a str, &'a ExperimentData)]) -> Inputs<'a> {
        let prefixed = inputs.len() > 1;
        let list = inputs
            .iter()
            .map(|&(label, data)| {
                let keys = data.varied_keys();
                let x_key = keys
                    .iter()
                    .find(|k| *k != "proto")
                    .or_else(|| keys.first())
                    .cloned();
                let series_keys = keys
                    .iter()
                    .filter(|k| Some(*k) != x_key.as_ref())
                    .cloned()
                    .collect();
                Input {
                    label,
                    data,
                    x_key,
                    series_keys,
                    repeats: data.runs().iter().any(|r| r.repeat > 1),
                    prefixed,
                }
            })
            .collect();
        Inputs { list }
    }

    /// Whether names carry their input's label.
    pub fn several(&self) -> bool {
        self.list.len() > 1
    }

    /// Every run of every input, in order.
    pub fn runs(&self) -> impl Iterator<Item = (&Input<'a>, &'a RunData)> {
        self.list
            .iter()
            .flat_map(|input| input.data.runs().iter().map(move |run| (input, run)))
    }

    /// The x axis's label: the x keys of the inputs (each once).
    pub fn x_label(&self) -> String {
        let mut keys: Vec<&str> = Vec::new();
        for input in &self.list {
            let key = input.x_key.as_deref().map_or("all runs", axis_label);
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        keys.join(" / ")
    }

    /// The varied keys of every input (each once), for the columns of a table.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = Vec::new();
        for input in &self.list {
            for key in input.data.varied_keys() {
                if !keys.contains(key) {
                    keys.push(key.clone());
                }
            }
        }
        keys
    }

    /// A table whose first columns say which run a row is about (the input when there are
    /// several, the run, its varied values), then `columns`.
    pub fn run_table(&self, columns: &[&str]) -> Table {
        let mut head: Vec<String> = Vec::new();
        if self.several() {
            head.push("input".into());
        }
        head.push("run".into());
        head.extend(self.keys());
        head.extend(columns.iter().map(|c| c.to_string()));
        Table::new(head)
    }

    /// The first cells of `run`'s row in a [`run_table`](Self::run_table).
    pub fn run_cells(&self, input: &Input<'_>, run: &RunData) -> Vec<String> {
        let mut cells = Vec::new();
        if self.several() {
            cells.push(input.label.to_string());
        }
        cells.push(run.id().to_string());
        for key in self.keys() {
            cells.push(run.varied(&key).unwrap_or("").to_string());
        }
        cells
    }
}

impl Input<'_> {
    /// `run`'s category on the x axis.
    pub fn x_value(&self, run: &RunData) -> String {
        match &self.x_key {
            Some(key) => run.varied(key).unwrap_or("?").to_string(),
            None => "all".to_string(),
        }
    }

    /// `run`'s series: its values of the series keys (the protocol plain, others as
    /// `key=value`), its repeat when combinations repeat, its input's label when there are
    /// several inputs; `runs` when nothing tells series apart.
    pub fn series(&self, run: &RunData) -> String {
        let name = self.series_or_empty(run);
        if name.is_empty() {
            "runs".into()
        } else {
            name
        }
    }

    /// `name` after `run`'s series (`tcp measured`), or alone when nothing tells series
    /// apart.
    pub fn series_with(&self, run: &RunData, name: &str) -> String {
        let series = self.series_or_empty(run);
        if series.is_empty() {
            name.to_string()
        } else {
            format!("{series} {name}")
        }
    }

    /// [`series`](Self::series), empty when nothing tells series apart.
    fn series_or_empty(&self, run: &RunData) -> String {
        let mut parts: Vec<String> = self
            .series_keys
            .iter()
            .map(|key| {
                let value = run.varied(key).unwrap_or("?");
                if key == "proto" {
                    value.to_string()
                } else {
                    format!("{key}={value}")
                }
            })
            .collect();
        if self.repeats {
            parts.push(format!("r{}", run.repeat));
        }
        self.named(&parts.join(" "))
    }

    /// `run`'s own curve, short enough for a legend: its varied values (`tcp idle 5 s`), its
    /// repeat when combinations repeat, its input's label when there are several inputs.
    pub fn run_name(&self, run: &RunData) -> String {
        let mut name = if run.record.varied.is_empty() {
            run.label()
        } else {
            run.record
                .varied
                .iter()
                .map(|(k, v)| short_value(k, v))
                .collect::<Vec<_>>()
                .join(" ")
        };
        if self.repeats && !run.record.varied.is_empty() {
            name.push_str(&format!(" r{}", run.repeat));
        }
        self.named(&name)
    }

    /// `name` with the input's label before it when there are several inputs.
    pub fn named(&self, name: &str) -> String {
        match (self.prefixed, name.is_empty()) {
            (false, _) => name.to_string(),
            (true, true) => self.label.to_string(),
            (true, false) => format!("{} {name}", self.label),
        }
    }
}

/// A number for a table: about four significant digits, empty for NaN.
pub(super) fn num(x: f64) -> String {
    if x.is_nan() {
        return String::new();
    }
    let a = x.abs();
    if a >= 1000.0 || a == 0.0 || x.fract() == 0.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 10.0 {
        format!("{x:.2}")
    } else if a >= 0.01 {
        format!("{x:.3}")
    } else {
        format!("{x:.2e}")
    }
}

/// Items in order of first appearance, each once.
pub(super) fn first_seen<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// A varied value as a legend shows it: a transport or server by itself, other values after a
/// short name and with their unit (`rtt 20 ms`).
fn short_value(key: &str, value: &str) -> String {
    let (name, unit) = match key {
        "proto" | "kind" => return value.to_string(),
        "idle_timeout_s" => ("idle", " s"),
        "rtt_ms" => ("rtt", " ms"),
        "jitter_ms" => ("jitter", " ms"),
        "bandwidth_mbps" => ("bw", " Mbit/s"),
        "queue_kb" => ("queue", " kB"),
        "burst_len" => ("burst", ""),
        "do_share" | "set_do" => ("do", ""),
        "rate_scale" => ("rate ×", ""),
        other => (other, ""),
    };
    format!("{name} {value}{unit}")
}

/// How a varied key reads under an axis: what it is, with its unit; unknown keys as they are.
fn axis_label(key: &str) -> &str {
    match key {
        "proto" => "transport",
        "idle_timeout_s" => "server's TCP idle timeout (s)",
        "rtt_ms" => "round-trip time (ms)",
        "loss" => "loss rate, each direction",
        "jitter_ms" => "jitter (ms)",
        "bandwidth_mbps" => "bandwidth (Mbit/s)",
        "queue_kb" => "link queue (kB)",
        "burst_len" => "mean loss burst (packets)",
        "do_share" => "share of queries with DO",
        "set_do" => "DO set on every query",
        "rate_scale" => "query rate (× the trace's)",
        "kind" => "server",
        "threads" => "server threads",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_about_four_digits() {
        assert_eq!(num(f64::NAN), "");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(12345.678), "12346");
        assert_eq!(num(123.456), "123.5");
        assert_eq!(num(20.3456), "20.35");
        assert_eq!(num(2.0), "2");
        assert_eq!(num(0.4567), "0.457");
        assert_eq!(num(0.000_12), "1.20e-4");
    }

    #[test]
    fn first_seen_keeps_order() {
        assert_eq!(first_seen(["b", "a", "b", "c", "a"]), vec!["b", "a", "c"]);
    }
}
