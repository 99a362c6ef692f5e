//! # numalab-report: from records to something a person reads
//!
//! This crate reads only [`RunRecord`]s, never a live run, so a real run,
//! a guest run and a simulated run are presented by the same code. Text
//! output is plain ASCII within 80 columns, laid out like the tables in
//! the seed documents, so it can be pasted into a mailing-list post as is.
//!
//! The pieces, in the order data flows through them:
//!
//! * [`dataset`] selects records (`--filter`) and groups them into
//!   *cases* (benchmark + parameters) and *configurations* (label + host +
//!   backend, or the `--group-by` keys).
//! * [`compare`](mod@compare) computes, per metric, the summaries, ratios, tests and
//!   verdicts with [`numalab_stats`], and collects footnotes (too few runs,
//!   high variation, outliers, machine differences the labels do not name,
//!   failed runs). [`compare_render`] prints that as text, Markdown, CSV or
//!   JSON, in the full or the normalised (seed 003) layout.
//! * [`series`] pulls time series out of records (memory per node, pages
//!   migrated, progress); [`textplot`] draws them as ASCII charts within
//!   80×20 characters and [`svg`] as inline SVG.
//! * [`figures`] derives the seed-style charts over a whole set of runs
//!   from the comparison: a time metric against a benchmark's one
//!   numeric parameter (seed 000's N), or bars per case normalised to the
//!   baseline (seeds 002 and 003).
//! * [`show`] prints one run or a directory of runs the way the seeds do;
//!   [`html`] writes the self-contained HTML report; [`summary`] is what
//!   `numalab run` and `numalab sim` print after their runs.
//! * [`autonuma`] derives `position_between_bounds` from records (it is
//!   never read from one); [`work`] says when runs of one case did not do
//!   the same work (CPU time an order of magnitude apart).
//! * [`table`] is the one table model behind text, Markdown and HTML;
//!   [`num`] formats numbers the same way everywhere.
//!
//! No output uses colour or terminal control sequences, so `NO_COLOR` and
//! output to a pipe or file need no special handling.

#![forbid(unsafe_code)]

pub mod autonuma;
pub mod axis;
pub mod compare;
pub mod compare_render;
pub mod dataset;
pub mod export;
pub mod figures;
pub mod html;
pub mod num;
pub mod sched;
pub mod series;
pub mod show;
pub mod summary;
pub mod svg;
pub mod table;
pub mod text;
pub mod textplot;
pub mod work;

pub use compare::{compare, CompareError, CompareOptions, CompareReport, Regression};
pub use compare_render::Layout;
pub use dataset::{Dataset, DatasetError, DatasetOptions, Filter, Key};
pub use numalab_record::RunRecord;
