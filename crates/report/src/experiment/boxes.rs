//! Boxplots of p5/p25/p50/p75/p95 per varied value, one figure per metric, from
//! `summary.csv`, as the paper's Figures 10, 11, 13, 14 and 15.

use super::layout::{first_seen, num, Inputs};
use crate::figure::{BoxChart, BoxGroup, BoxStat, Figure, Plot, Scale, Table};
use crate::html::Section;

/// A metric drawn as boxplots.
struct BoxMetric {
    /// Its name in `summary.csv`.
    metric: &'static str,
    /// The figure's id.
    id: &'static str,
    /// The figure's title.
    title: &'static str,
    /// The y axis's label.
    y_label: &'static str,
    /// The paper's figure it mirrors.
    paper: &'static str,
    /// Whether its values are per query (else per second).
    per_query: bool,
}

const BOX_METRICS: [BoxMetric; 7] = [
    BoxMetric {
        metric: "response_bytes_per_s",
        id: "exp-response-bandwidth",
        title: "Response bandwidth",
        y_label: "bytes/s, server to clients",
        paper: "Figure 10",
        per_query: false,
    },
    BoxMetric {
        metric: "server_cpu_pct",
        id: "exp-server-cpu",
        title: "Server CPU",
        y_label: "CPU (% of one core)",
        paper: "Figure 11",
        per_query: false,
    },
    BoxMetric {
        metric: "server_rss_mib",
        id: "exp-server-memory",
        title: "Server memory",
        y_label: "resident memory (MiB)",
        paper: "Figure 13",
        per_query: false,
    },
    BoxMetric {
        metric: "tcp_established",
        id: "exp-tcp-established",
        title: "Established TCP connections",
        y_label: "connections",
        paper: "Figure 14",
        per_query: false,
    },
    BoxMetric {
        metric: "tcp_time_wait",
        id: "exp-tcp-time-wait",
        title: "TCP connections in TIME_WAIT",
        y_label: "connections",
        paper: "Figure 14",
        per_query: false,
    },
    BoxMetric {
        metric: "latency_ms",
        id: "exp-latency",
        title: "Query latency, all clients",
        y_label: "latency (ms)",
        paper: "Figure 15",
        per_query: true,
    },
    BoxMetric {
        metric: "latency_ms_nonbusy",
        id: "exp-latency-nonbusy",
        title: "Query latency, non-busy clients",
        y_label: "latency (ms)",
        paper: "Figure 15",
        per_query: true,
    },
];

/// The section of boxplots, one figure per metric that some run has.
pub(super) fn section(inputs: &Inputs<'_>) -> Section {
    let mut section = Section {
        title: "Distributions per varied value".into(),
        ..Section::default()
    };
    for m in &BOX_METRICS {
        match figure(inputs, m) {
            Some(f) if m.metric == "latency_ms_nonbusy" => {
                section.figures.push(match nonbusy_are_all(inputs) {
                    Some(text) => Figure {
                        plot: Plot::Note { text },
                        table: Table::default(),
                        ..f
                    },
                    None => f,
                });
            }
            Some(f) => section.figures.push(f),
            None => section.paragraphs.push(format!(
                "No run has values of {} in summary.csv, so its boxplot (the paper's {}) is \
                 left out.",
                m.metric, m.paper
            )),
        }
    }
    section
}

/// The sentence saying that no client is busy, when it is so in every run that has both
/// latencies: its non-busy clients' latencies are all its latencies, the same numbers, which
/// a second figure would draw again.
fn nonbusy_are_all(inputs: &Inputs<'_>) -> Option<String> {
    let mut limits = Vec::new();
    let mut runs = 0;
    for (_, run) in inputs.runs() {
        let (Some(all), Some(nonbusy)) =
            (run.metric("latency_ms"), run.metric("latency_ms_nonbusy"))
        else {
            continue;
        };
        // The non-busy clients' queries are some of all the queries: as many means the same.
        if nonbusy.n != all.n {
            return None;
        }
        runs += 1;
        limits.push(run.record.settings.trace.nonbusy_max_queries);
    }
    if runs == 0 {
        return None;
    }
    let limits: Vec<String> = first_seen(limits).iter().map(u64::to_string).collect();
    Some(format!(
        "No client is busy: none sent {} queries or more (trace.nonbusy_max_queries), so the \
         non-busy clients are all the clients, in every run. Their latency is that of \
         \"Query latency, all clients\" above, not drawn twice.",
        limits.join(" or ")
    ))
}

fn figure(inputs: &Inputs<'_>, m: &BoxMetric) -> Option<Figure> {
    let placed: Vec<_> = inputs
        .runs()
        .filter_map(|(input, run)| {
            let d = run.metric(m.metric)?;
            Some((input, run, input.x_value(run), input.series(run), d))
        })
        .collect();
    if placed.is_empty() {
        return None;
    }
    let groups: Vec<BoxGroup> = first_seen(placed.iter().map(|p| p.2.clone()))
        .into_iter()
        .map(|label| BoxGroup {
            boxes: placed
                .iter()
                .filter(|p| p.2 == label)
                .map(|(_, _, _, series, d)| BoxStat {
                    series: series.clone(),
                    p5: d.p5,
                    p25: d.p25,
                    p50: d.p50,
                    p75: d.p75,
                    p95: d.p95,
                })
                .collect(),
            label,
        })
        .collect();
    let mut table = inputs.run_table(&["p5", "p25", "p50", "p75", "p95", "mean", "n"]);
    for (input, run) in inputs.runs() {
        let mut cells = inputs.run_cells(input, run);
        match run.metrics.get(m.metric) {
            Some(d) => cells.extend(
                [d.p5, d.p25, d.p50, d.p75, d.p95, d.mean]
                    .map(num)
                    .into_iter()
                    .chain([d.n.to_string()]),
            ),
            None => cells.push("not in summary.csv".into()),
        }
        table.push(cells);
    }
    let (lo, hi) = placed.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), p| {
        (lo.min(p.4.p5), hi.max(p.4.p95))
    });
    let y_scale = if m.per_query && lo > 0.0 && hi / lo > 50.0 {
        Scale::Log
    } else {
        Scale::Linear
    };
    let over = if m.per_query {
        "the answered queries due after warm-up"
    } else {
        "the seconds after warm-up"
    };
    let repeats = if inputs.list.iter().any(|i| i.repeats) {
        " Each repeat of a combination is its own box (r1, r2, …): percentiles of separate \
         runs are not pooled."
    } else {
        ""
    };
    let series = if inputs.list.iter().all(|i| i.series_keys.is_empty()) {
        String::new()
    } else {
        let keys = first_seen(
            inputs
                .list
                .iter()
                .flat_map(|i| i.series_keys.iter().map(String::as_str)),
        );
        format!(" and {} (colour)", keys.join(", "))
    };
    let plot = Plot::Boxes(BoxChart {
        x_label: inputs.x_label(),
        y_label: m.y_label.into(),
        y_scale,
        groups,
    });
    let plot = if plot.all_zero() {
        Plot::Note {
            text: format!(
                "{}: every run measured 0 over {over} (p5 to p95): there is nothing to draw, \
                 and the table gives the numbers.",
                m.title
            ),
        }
    } else {
        plot
    };
    Some(Figure {
        id: m.id.into(),
        title: m.title.into(),
        caption: format!(
            "{} ({}): whiskers at p5 and p95, the box from p25 to p75, a line at the median, \
             over {over}, per {} (x){series}. As the paper's {}.{repeats} Numbers from \
             summary.csv.",
            m.title,
            m.metric,
            inputs.x_label(),
            m.paper
        ),
        plot,
        table,
    })
}
