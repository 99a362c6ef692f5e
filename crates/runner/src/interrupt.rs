//! Ctrl-C and SIGTERM: set a flag that the run loop polls, so children are
//! killed and reaped, and finished records stay, instead of dying midway.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Clone, Debug)]
pub struct Interrupt(Arc<AtomicBool>);

/// The run was interrupted by the user.
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "interrupted")
    }
}
impl std::error::Error for Interrupted {}

impl Interrupt {
    /// Install handlers for SIGINT and SIGTERM.
    pub fn install() -> std::io::Result<Interrupt> {
        let flag = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register(signal_hook::consts::SIGINT, flag.clone())?;
        signal_hook::flag::register(signal_hook::consts::SIGTERM, flag.clone())?;
        Ok(Interrupt(flag))
    }

    /// A flag no signal sets (tests).
    pub fn never() -> Interrupt {
        Interrupt(Arc::new(AtomicBool::new(false)))
    }

    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed)
    }
}
