//! # numalab-report: from records to something a person reads
//!
//! This crate reads only [`RunRecord`]s, never a live run, so a real run,
//! a guest run and a simulated run are presented by the same code. Text
//! output is plain ASCII within 80 columns, laid out like the tables in
//! the seed documents, so it can be pasted into a mailing-list post as is.

pub mod text;

pub use numalab_record::RunRecord;
