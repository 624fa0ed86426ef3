//! The measured established connections beside the model (clients whose last query is less
//! than the idle timeout ago), for the runs over TCP and TLS.

use super::layout::{first_seen, num, Inputs};
use crate::figure::{BoxChart, BoxGroup, BoxStat, Figure, Plot, Scale};
use crate::html::Section;

/// The section: one figure, or a sentence saying why there is none.
pub(super) fn section(inputs: &Inputs<'_>) -> Section {
    let mut section = Section {
        title: "Connections against the model".into(),
        ..Section::default()
    };
    match figure(inputs) {
        Some(f) => section.figures.push(f),
        None => section.paragraphs.push(
            "No run is over TCP or TLS with model_connections in summary.csv, so there is no \
             model to put beside the measured connections."
                .into(),
        ),
    }
    section
}

fn figure(inputs: &Inputs<'_>) -> Option<Figure> {
    let placed: Vec<_> = inputs
        .runs()
        .filter_map(|(input, run)| {
            let model = run.metric("model_connections")?;
            let measured = run.metric("tcp_established")?;
            Some((input, run, input.x_value(run), measured, model))
        })
        .collect();
    if placed.is_empty() {
        return None;
    }
    let stat = |series: String, d: &ldplayer_study::Distribution| BoxStat {
        series,
        p5: d.p5,
        p25: d.p25,
        p50: d.p50,
        p75: d.p75,
        p95: d.p95,
    };
    let groups = first_seen(placed.iter().map(|p| p.2.clone()))
        .into_iter()
        .map(|label| BoxGroup {
            boxes: placed
                .iter()
                .filter(|p| p.2 == label)
                .flat_map(|(input, run, _, measured, model)| {
                    [
                        stat(input.series_with(run, "measured"), measured),
                        stat(input.series_with(run, "model"), model),
                    ]
                })
                .collect(),
            label,
        })
        .collect();
    let mut table = inputs.run_table(&[
        "measured mean",
        "model mean",
        "difference (%)",
        "measured p50",
        "model p50",
    ]);
    for (input, run, _, measured, model) in &placed {
        let mut cells = inputs.run_cells(input, run);
        let difference = if model.mean > 0.0 {
            format!("{:+.1}", (measured.mean - model.mean) / model.mean * 100.0)
        } else {
            String::new()
        };
        cells.extend([
            num(measured.mean),
            num(model.mean),
            difference,
            num(measured.p50),
            num(model.p50),
        ]);
        table.push(cells);
    }
    Some(Figure {
        id: "exp-connections-model".into(),
        title: "Established connections: measured and model".into(),
        caption: format!(
            "The server's established TCP connections, sampled each second after warm-up \
             (measured), beside the connections the trace alone predicts at each second \
             (model: clients whose last query is less than the idle timeout ago), per {} \
             (x); boxes from p25 to p75, whiskers at p5 and p95. The table gives the \
             difference of the means in % of the model. Runs over TCP and TLS only.",
            inputs.x_label()
        ),
        plot: Plot::Boxes(BoxChart {
            x_label: inputs.x_label(),
            y_label: "connections".into(),
            y_scale: Scale::Linear,
            groups,
        }),
        table,
    })
}
