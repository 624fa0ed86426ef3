//! Two replays or experiments of one trace, metric by metric, with regression bounds.
