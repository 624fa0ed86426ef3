//! A [`Figure`](crate::Figure) drawn with plotters, as SVG and PNG.
