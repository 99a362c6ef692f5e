//! # numalab-protocol: running cases on a machine numalab drives
//!
//! The executor ([`op`]) answers one request on the machine that runs
//! it: `numalab __guest-op REQUEST.json` reads the request, has the host
//! backend do the work there and answers on standard output in the
//! agent's protocol lines. It lives here, not in the binary, so that
//! every machine numalab drives runs the same code.
#![forbid(unsafe_code)]

pub mod op;
