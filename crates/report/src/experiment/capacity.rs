//! The capacity of an experiment's ramp runs (`[client] mode = "ramp"`): a table of each run's
//! capacity, UDP's against TCP's and DoT's where the protocol is varied (the shares of the
//! capacity example), and for each server (each combination of the other varied values) its
//! answers and latency against the offered rate, one curve per protocol, with the knees.

use super::layout::{num, Input, Inputs};
use super::RunData;
use crate::figure::{Figure, Table};
use crate::html::Section;
use ldplayer_results::CapacityReport;

/// The runs' ramps, grouped by everything varied but the protocol, in plan order.
type Groups<'a> = Vec<(
    String,
    Vec<(&'a Input<'a>, &'a RunData, &'a CapacityReport)>,
)>;

/// The section, `None` when no run is a ramp.
pub(super) fn section(inputs: &Inputs<'_>) -> Option<Section> {
    let ramps: Vec<(&Input<'_>, &RunData, &CapacityReport)> = inputs
        .runs()
        .filter_map(|(input, run)| Some((input, run, run.capacity.as_ref()?)))
        .collect();
    if ramps.is_empty() {
        return None;
    }
    let mut section = Section {
        title: "Capacity".into(),
        ..Section::default()
    };
    section.paragraphs.push(
        "Each ramp run offered a load rising linearly from 0 (resperf's method); its capacity \
         is the highest answer rate of the seconds before the first one over its bounds (the \
         knee), as resperf computes its maximum throughput."
            .into(),
    );
    let mut table = inputs.run_table(&[
        "capacity (answers/s)",
        "offered there (q/s)",
        "lost there",
        "knee (q/s offered)",
        "limited by",
    ]);
    for (input, run, c) in &ramps {
        let mut row = inputs.run_cells(input, run);
        row.extend([
            num(c.capacity_qps),
            num(c.offered_qps),
            format!("{:.2}%", c.loss_pct),
            c.knee_offered_qps.map_or("–".into(), num),
            c.limited_by.to_string(),
        ]);
        table.push(row);
    }
    section
        .tables
        .push(("Capacity of each ramp run".into(), table));
    let groups = groups(inputs, &ramps);
    if let Some(shares) = shares(&groups) {
        section.tables.push((
            "TCP and DoT capacity as a share of UDP's, for each server (each combination of the \
             other varied values)"
                .into(),
            shares,
        ));
    }
    for (n, (name, runs)) in groups.iter().enumerate() {
        let reports: Vec<(String, CapacityReport)> = runs
            .iter()
            .map(|(_, run, c)| (run.proto().to_string(), (*c).clone()))
            .collect();
        let labelled: Vec<(&str, CapacityReport)> = reports
            .iter()
            .map(|(label, c)| (label.as_str(), c.clone()))
            .collect();
        let suffix = if name.is_empty() {
            String::new()
        } else {
            format!(", {name}")
        };
        let several = labelled.len() > 1;
        let by_proto = |label: &str, what: &str| {
            if several {
                format!("{label} {what}")
            } else {
                what.to_string()
            }
        };
        let rename = |mut f: Figure, id: &str, title: &str| {
            f.id = format!("exp-capacity-{id}-{}", n + 1);
            f.title = format!("{title}{suffix}");
            f
        };
        section.figures.push(rename(
            crate::replay::ramp_answered(&labelled, &by_proto),
            "answered",
            "Answers against the offered rate",
        ));
        section.figures.push(rename(
            crate::replay::ramp_latency(&labelled, &by_proto, &[("p95", |s| s.latency_p95_ms)]),
            "latency",
            "Latency p95 against the offered rate",
        ));
    }
    Some(section)
}

/// The runs grouped by their varied values other than `proto` (and their input).
fn groups<'a>(
    inputs: &Inputs<'_>,
    ramps: &[(&'a Input<'a>, &'a RunData, &'a CapacityReport)],
) -> Groups<'a> {
    let mut groups: Groups<'a> = Vec::new();
    for &(input, run, c) in ramps {
        let mut name: Vec<String> = Vec::new();
        if inputs.several() {
            name.push(input.label.to_string());
        }
        for (k, v) in &run.record.varied {
            if k != "proto" {
                name.push(format!("{k}={v}"));
            }
        }
        if run.repeat > 1 {
            name.push(format!("r{}", run.repeat));
        }
        let name = name.join(" ");
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, runs)) => runs.push((input, run, c)),
            None => groups.push((name, vec![(input, run, c)])),
        }
    }
    groups
}

/// Per group with a UDP run: its capacity, and the other protocols' as a share of it.
fn shares(groups: &Groups<'_>) -> Option<Table> {
    let protos: Vec<&str> = {
        let mut p: Vec<&str> = Vec::new();
        for (_, runs) in groups {
            for (_, run, _) in runs {
                if run.proto() != "udp" && !p.contains(&run.proto()) {
                    p.push(run.proto());
                }
            }
        }
        p
    };
    if protos.is_empty() {
        return None;
    }
    let mut columns = vec!["server".to_string(), "udp (answers/s)".to_string()];
    columns.extend(protos.iter().map(|p| format!("{p} / udp")));
    let mut table = Table::new(columns);
    for (name, runs) in groups {
        let capacity = |proto: &str| {
            runs.iter()
                .find(|(_, run, _)| run.proto() == proto)
                .map(|(_, _, c)| c.capacity_qps)
        };
        let Some(udp) = capacity("udp").filter(|&u| u > 0.0) else {
            continue;
        };
        let mut row = vec![
            if name.is_empty() {
                "all".into()
            } else {
                name.clone()
            },
            num(udp),
        ];
        row.extend(
            protos
                .iter()
                .map(|p| capacity(p).map_or("–".into(), |c| format!("{:.0}%", c / udp * 100.0))),
        );
        table.push(row);
    }
    (!table.rows.is_empty()).then_some(table)
}
