//! The latency CCDF per protocol, one curve per run, on log–log axes, as Jonglez et al. show
//! the tail of UDP, TCP and TLS under loss.

use super::latency::{at_least_ms, ccdf_ms, quantile_ms};
use super::layout::{first_seen, num, Input, Inputs};
use super::RunData;
use crate::figure::{Figure, LineChart, Plot, Series, SeriesStyle, Table};
use crate::html::Section;

/// Points per curve at most.
const MAX_POINTS: usize = 500;

/// A run of fewer answers than this is drawn as points, one per value, rather than as a curve.
const MIN_CURVE_VALUES: u64 = 20;

/// A figure whose every run has fewer answers than this is not drawn: its table says it all.
const MIN_DRAWN_VALUES: u64 = 3;

/// The section: one figure per protocol, or one for all when each protocol has one curve.
pub(super) fn section(inputs: &Inputs<'_>) -> Section {
    let mut section = Section {
        title: "Latency tail".into(),
        ..Section::default()
    };
    let curves: Vec<(&Input<'_>, &RunData)> = inputs
        .runs()
        .filter(|(_, run)| run.latency.as_ref().is_some_and(|h| !h.is_empty()))
        .collect();
    if curves.is_empty() {
        section.paragraphs.push(
            "No run has answered queries after warm-up in a results file that could be read, \
             so there is no latency CCDF."
                .into(),
        );
        return section;
    }
    let protos = first_seen(curves.iter().map(|(_, run)| run.proto()));
    let one_each = protos
        .iter()
        .all(|p| curves.iter().filter(|(_, r)| r.proto() == *p).count() == 1);
    if one_each {
        section.figures.push(figure(
            inputs,
            &curves,
            "exp-latency-ccdf",
            "Latency CCDF per protocol",
            |_, run| run.proto().to_string(),
        ));
    } else {
        for proto in protos {
            let of_proto: Vec<_> = curves
                .iter()
                .copied()
                .filter(|(_, r)| r.proto() == proto)
                .collect();
            section.figures.push(figure(
                inputs,
                &of_proto,
                &format!("exp-latency-ccdf-{proto}"),
                &format!("Latency CCDF, {proto}"),
                curve_name,
            ));
        }
    }
    section
}

/// A run's curve in its protocol's figure: its varied values but the protocol.
fn curve_name(input: &Input<'_>, run: &RunData) -> String {
    let mut name = run
        .record
        .varied
        .iter()
        .filter(|(k, _)| k != "proto")
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ");
    if input.repeats {
        name.push_str(&format!(" r{}", run.repeat));
    }
    let name = name.trim();
    if name.is_empty() {
        run.proto().to_string()
    } else {
        name.to_string()
    }
}

fn figure(
    inputs: &Inputs<'_>,
    curves: &[(&Input<'_>, &RunData)],
    id: &str,
    title: &str,
    name: fn(&Input<'_>, &RunData) -> String,
) -> Figure {
    let mut table = inputs.run_table(&[
        "answered",
        "p50 (ms)",
        "p90 (ms)",
        "p99 (ms)",
        "p99.9 (ms)",
        "max (ms)",
    ]);
    let mut series = Vec::new();
    let mut few = Vec::new();
    let mut samples = Vec::new();
    // Whether every run would be a lone dot: too few answers, or all of one latency.
    let mut lone = true;
    for &(input, run) in curves {
        let Some(hist) = &run.latency else { continue };
        let name = input.named(&name(input, run));
        let one_value = hist.iter_recorded().nth(1).is_none();
        lone &= hist.len() < MIN_DRAWN_VALUES || one_value;
        let equal = if one_value && hist.len() > 1 {
            ", all equal"
        } else {
            ""
        };
        samples.push(format!("{name}: {} answers{equal}", hist.len()));
        let (points, style) = if hist.len() < MIN_CURVE_VALUES {
            few.push(format!("{name}: {} answers", hist.len()));
            (at_least_ms(hist), SeriesStyle::Points)
        } else {
            (ccdf_ms(hist, MAX_POINTS), SeriesStyle::Step)
        };
        series.push(Series {
            name,
            points,
            style,
        });
        push_row(&mut table, inputs, input, run, hist);
    }
    let too_few = lone && !samples.is_empty();
    let plot = if too_few {
        Plot::Note {
            text: format!(
                "Too few values to draw a distribution ({}): the table gives them.",
                samples.join("; ")
            ),
        }
    } else {
        Plot::Lines(LineChart::latency_ccdf(series))
    };
    let points = if few.is_empty() || too_few {
        String::new()
    } else {
        format!(
            " Runs of fewer than {MIN_CURVE_VALUES} answers are drawn as points, one per \
             value, not as a curve ({}).",
            few.join("; ")
        )
    };
    Figure {
        id: id.into(),
        title: title.into(),
        caption: format!(
            "{title}: the share of answered queries slower than x, both axes logarithmic, one \
             curve per run, over the queries due after warm-up (a new connection's set-up \
             counted in the query that opened it, as latency_ms in summary.csv), as Jonglez \
             et al. show the tail under loss. Unanswered queries are not in it. Up to \
             {MAX_POINTS} points per curve; the table's quantiles are exact to 0.1%.{points}"
        ),
        plot,
        table,
    }
}

fn push_row(
    table: &mut Table,
    inputs: &Inputs<'_>,
    input: &Input<'_>,
    run: &RunData,
    hist: &hdrhistogram::Histogram<u64>,
) {
    let mut cells = inputs.run_cells(input, run);
    cells.push(hist.len().to_string());
    cells.extend([0.5, 0.9, 0.99, 0.999, 1.0].map(|q| num(quantile_ms(hist, q))));
    table.push(cells);
}
