//! Figures, one-file HTML reports and comparisons of what ldplayer measured.
//!
//! The parts:
//! * [`figure`]: what a figure shows, independent of how it is drawn: line charts (CDFs,
//!   CCDFs, time series) and boxplots, each with the table of the numbers it draws;
//! * [`render`]: a [`Figure`] drawn with plotters, as SVG and PNG;
//! * [`html`]: a [`Report`] as one self-contained HTML file (inline SVG, no scripts, nothing
//!   fetched), with every figure also written beside it in `figures/`;
//! * [`replay`]: the figures of one replay's results file, read in one pass in bounded memory;
//! * [`experiment`]: the figures of an experiment directory (boxplots per varied value, time
//!   series per run, measured connections beside the model, latency CCDFs);
//! * [`compare`]: two replays or experiments of one trace, metric by metric, with regression
//!   bounds;
//! * [`differences`]: the answer differences of replays that kept their answers.

#![forbid(unsafe_code)]

pub mod compare;
pub mod differences;
pub mod error;
pub mod experiment;
pub mod figure;
pub mod html;
pub mod input;
pub mod render;
pub mod replay;
pub mod summary_csv;

pub use error::ReportError;
pub use figure::{
    BoxChart, BoxGroup, BoxStat, Figure, LineChart, Plot, Scale, Series, SeriesStyle, Table,
};
pub use html::{Report, Section, Written};
