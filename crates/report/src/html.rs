//! A report as one self-contained HTML file, every figure also written beside it.

use crate::figure::{Figure, Table};

/// A whole report: a header of facts, then sections of figures and tables.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The page's title (`ldplayer report: quick-study`).
    pub title: String,
    /// Facts shown first, as a two-column table: inputs, plan, versions, machine.
    pub header: Vec<(String, String)>,
    /// The sections, in order.
    pub sections: Vec<Section>,
}

/// One section of a report: a heading, some sentences, figures and tables.
#[derive(Debug, Clone, Default)]
pub struct Section {
    /// The section's heading.
    pub title: String,
    /// Paragraphs of plain text shown under the heading (findings, what could not be read).
    pub paragraphs: Vec<String>,
    /// The figures, each followed by its table.
    pub figures: Vec<Figure>,
    /// Further tables, each with a caption, after the figures.
    pub tables: Vec<(String, Table)>,
}
