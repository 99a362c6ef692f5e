//! # numalab-protocol: running cases on a machine numalab drives
//!
//! `numalab vm ... -- run` keeps the runner on the host and runs each
//! case on another machine, a QEMU guest. Everything about that which is
//! not QEMU lives here, so that a backend for another kind of machine (a
//! remote one over SSH, say) starts from the same protocol instead of
//! from a copy of the guest's.
//!
//! ## The layers
//!
//! - [`frame`]: a byte stream cut into frames (a header line with a kind,
//!   a name, a length and a CRC-32; the payload; an end line), decoded
//!   incrementally, a damaged or cut frame reported rather than stored,
//!   noise between frames skipped. The stream may be a serial port, a
//!   pipe or a socket: frames assume only that bytes arrive in order.
//! - [`request`]: the JSON of `request` and `reply` frames: what the host
//!   asks ([`request::Request`]: the machine, calibration figures,
//!   settings, a sched_ext scheduler, one run of a case, quit) and what
//!   it is answered ([`request::Reply`]).
//! - [`agent`]: the far side's loop ([`agent::serve`]): read request
//!   frames, answer settings, schedulers and quit itself (they outlive one
//!   request), run every other request as a child, `numalab __guest-op
//!   REQUEST.json`, so a crash takes only the child, and turn the child's
//!   `@@op` lines into `reply`, `progress`, `record` and `log` frames. Each
//!   answer ends with an `exit` frame.
//! - [`op`]: that child, the executor: the host backend does the work on
//!   the machine it runs on and the record is written there, then sent.
//! - [`client`]: the host's side: [`client::request`] sends a request over
//!   a [`client::Transport`] and collects the answer up to its `exit`
//!   frame; [`client::Answer`] decodes a value or checks a run's record
//!   (the run asked for, one record, side files named after it) before
//!   anything is written on the host.
//!
//! The wire format is the guest's, unchanged (docs/guest.md): the
//! `@@NUMALAB v1` frames, the tagged JSON requests, the `@@op` lines.
//!
//! ## Dependencies
//!
//! The executor needs the host backend and the runner (a run is the host
//! backend's run, on the far machine), so this crate depends on
//! numalab-host and numalab-runner; the guest (numalab-guest: QEMU,
//! kernels, the initramfs, its PID 1 and sessions) depends on this one,
//! never the other way. The binary only calls [`op::main`] for its hidden
//! `__guest-op` subcommand.
//!
//! ## A remote machine over SSH
//!
//! A remote backend would reuse every layer and add only its transport
//! and its start-up:
//!
//! 1. Start: copy (or find) the same numalab on the remote machine and
//!    run an agent there whose input and output are the SSH session's
//!    standard input and output: [`agent::serve`] reads any
//!    [`std::io::Read`] and writes through any [`agent::Sender`], so a hidden
//!    `numalab __agent` subcommand is a few lines. The executor's results
//!    directory ([`agent::RESULTS`]) and the request file are the guest's
//!    absolute paths; an unprivileged remote agent would make both
//!    per-session temporary paths.
//! 2. Transport: implement [`client::Transport`] over the session's pipes
//!    (send: [`frame::encode`] and write; next frame: read into a
//!    [`frame::Parser`]), its `End` saying how the connection ended.
//! 3. Backend: implement the runner's `Backend` as the guest's
//!    `GuestBackend` does, each method one [`client::request`] and one
//!    [`client::Answer`] decode, with `settings_site` and `scx_site` the
//!    backend's (the agent applies them on the remote machine).
//!
//! What stays the guest's: booting QEMU, the kernel, the initramfs, the
//! 9p root, the console, and rewriting records' `backend` with the guest's
//! accelerator and shape. A remote backend would tag its records with
//! its own (host name, kernel) the same way.
#![forbid(unsafe_code)]

pub mod agent;
pub mod client;
pub mod frame;
pub mod op;
pub mod request;
