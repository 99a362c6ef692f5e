//! `nest`: NEST (Lawall, Chhaya-Shailesh, Lozi, Lepers, Zwaenepoel,
//! Muller, "OS Scheduling with Nest: Keeping Tasks Close Together on Warm
//! Cores", EuroSys 2022), after the paper and its Linux 5.15 patch
//! (select_task_rq_fair's nest path, the expand and reserve masks).
//!
//! A **primary nest** of cores in use and a **reserve nest** of at most
//! `reserve_max` (5) cores recently used. Each task has an **attached**
//! core and a **patience**. Placement of a new or woken task, `prev`
//! being its previous CPU (a new task's: its parent's):
//!
//! 1. its attached core, if it is in the primary nest and idle;
//! 2. else, if it has no attached core, `prev` if it is idle and not in
//!    the primary nest: the task attaches there and `prev` joins the
//!    primary nest;
//! 3. else an idle primary core of `prev`'s LLC, then of the other LLCs,
//!    searched from `prev` upwards (wrapping); a primary core idle for
//!    `compact_ms` (two ticks) found on the way is compacted into the
//!    reserve instead. Taking `prev` itself attaches the task there.
//!    Each search that finds `prev` busy costs the task one unit of
//!    patience (INIT_PATIENCE = 2, one more for a new task); a task out of
//!    patience is **impatient** (its third such search, a new task's
//!    fourth): it skips the rest of the primary nest, and its patience
//!    starts again;
//! 4. else an idle reserve core (`prev`'s LLC first), searched from the
//!    nest's first core: it is promoted to the primary nest;
//! 5. else CFS's choice (the `linux` module), which joins the **reserve**
//!    nest (if it has room and the core is in neither nest), or the
//!    primary nest at once for an impatient task.
//!
//! A new process placed at exec stays where its fork put it (NEST does
//! not move a task at exec), so `Placement::New` takes the fork path
//! whether or not the task execs. When a task **exits** and leaves its
//! core idle, the core leaves the primary nest for the reserve at once.
//! Reserve cores are dropped only when the reserve is over `reserve_max`
//! (the patch's clear_reserve_mask), so in practice they stay. Periodic
//! and newly-idle balancing are CFS's; a core that receives a task from
//! them does not join a nest (the task attaches to it at its next wakeup,
//! step 2).
//!
//! Not modelled: NEST's idle spinning (a core that goes idle spins for two
//! ticks before entering an idle state, to keep its frequency up; the
//! model has no C-states and its frequency follows PELT utilisation,
//! which spinning does not change) and its changes to CFS's
//! select_idle_sibling (searching other LLCs when the target's has no
//! idle CPU). The payoff comes through the frequency model: fewer, busier
//! cores stay at high utilisation (schedutil) and leave boost headroom in
//! the package.

use super::linux::Linux;
use crate::engine::{CpuId, Placement, Scheduler, TaskId, TaskState, World};
use crate::machine::Machine;
use crate::params::Params;

/// A task's patience when it is attached or created (INIT_PATIENCE).
const INIT_PATIENCE: u32 = 2;

#[derive(Debug, Clone, Copy, Default)]
struct TaskNest {
    attached: Option<CpuId>,
    patience: u32,
    known: bool,
}

pub struct Nest {
    cfs: Linux,
    primary: Vec<bool>,
    reserve: Vec<bool>,
    reserve_max: usize,
    compact_ns: u64,
    /// Where reserve searches start (the nest's first core).
    start: Option<CpuId>,
    tasks: Vec<TaskNest>,
}

/// `nest`'s own parameters (numalab-scx's `nest` reads them with this
/// function too, then `linux`'s [`super::linux::Tunables`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NestParams {
    /// Largest reserve nest (cores).
    pub reserve_max: usize,
    /// Idle time after which a primary core leaves the nest.
    pub compact_ns: u64,
}

impl NestParams {
    pub fn read(p: &mut Params) -> Result<NestParams, crate::params::ParamError> {
        let reserve_max = p.u64("reserve_max", 5, "largest reserve nest (cores)")?;
        let compact_ms = p.f64(
            "compact_ms",
            2.0,
            "idle time after which a primary core leaves the nest",
        )?;
        if !(compact_ms.is_finite() && compact_ms >= 0.0) {
            return Err(crate::params::ParamError::Inconsistent(format!(
                "scheduler nest: compact_ms must be 0 or more, not {compact_ms}"
            )));
        }
        Ok(NestParams {
            reserve_max: reserve_max.min(usize::MAX as u64) as usize,
            compact_ns: (compact_ms * 1e6) as u64,
        })
    }
}

pub fn build(p: &mut Params, m: &Machine) -> Result<Box<dyn Scheduler>, crate::params::ParamError> {
    let NestParams {
        reserve_max,
        compact_ns,
    } = NestParams::read(p)?;
    let cfs = Linux::new(p, m)?;
    Ok(Box::new(Nest::new(cfs, m.ncpus, reserve_max, compact_ns)))
}

impl Nest {
    fn new(cfs: Linux, ncpus: usize, reserve_max: usize, compact_ns: u64) -> Nest {
        Nest {
            cfs,
            primary: vec![false; ncpus],
            reserve: vec![false; ncpus],
            reserve_max,
            compact_ns,
            start: None,
            tasks: Vec::new(),
        }
    }

    fn reserve_len(&self) -> usize {
        self.reserve.iter().filter(|&&r| r).count()
    }

    /// Into the primary nest (leaving the reserve): set_expand_mask.
    fn promote(&mut self, c: CpuId) {
        self.primary[c] = true;
        self.reserve[c] = false;
    }

    /// Out of the primary nest, into the reserve if it has room:
    /// clear_expand_mask.
    fn compact(&mut self, c: CpuId) {
        self.primary[c] = false;
        if !self.reserve[c] && self.reserve_len() < self.reserve_max {
            self.reserve[c] = true;
        }
    }

    /// Into the reserve, if in neither nest and there is room:
    /// set_reserve_mask.
    fn join_reserve(&mut self, c: CpuId) {
        if !self.primary[c] && !self.reserve[c] && self.reserve_len() < self.reserve_max {
            self.reserve[c] = true;
        }
    }

    fn state(&mut self, t: TaskId) -> &mut TaskNest {
        if self.tasks.len() <= t {
            self.tasks.resize(t + 1, TaskNest::default());
        }
        &mut self.tasks[t]
    }

    fn usable(w: &World, t: TaskId, c: CpuId) -> bool {
        w.allowed(t, c) && w.cpus[c].is_idle()
    }

    /// CPUs in the order the patch's for_each_cpu_wrap visits them.
    fn wrap(n: usize, from: CpuId) -> impl Iterator<Item = CpuId> {
        (0..n).map(move |i| (from + i) % n)
    }

    /// The nest path of select_task_rq_fair; `None`: fall back to CFS
    /// (with whether the task is impatient).
    fn nest_select(&mut self, w: &World, t: TaskId, prev: CpuId) -> Result<CpuId, bool> {
        let n = w.m.ncpus;
        let llc = w.m.cpu_llc[prev];
        let st = *self.state(t);
        // 1. The attached core.
        if let Some(a) = st.attached {
            if self.primary[a] && Self::usable(w, t, a) {
                if a == prev {
                    self.state(t).patience = INIT_PATIENCE;
                }
                return Ok(a);
            }
            if a != prev || !self.primary[a] {
                self.state(t).attached = None;
            }
        } else if !self.primary[prev] && Self::usable(w, t, prev) {
            // 2. An idle previous core outside the nest: attach there.
            let s = self.state(t);
            s.attached = Some(prev);
            s.patience = INIT_PATIENCE;
            self.promote(prev);
            return Ok(prev);
        }
        // 3. The primary nest, prev's LLC first.
        let mut impatient = false;
        'search: for same_llc in [true, false] {
            for c in Self::wrap(n, prev) {
                if !self.primary[c] || (w.m.cpu_llc[c] == llc) != same_llc {
                    continue;
                }
                if Self::usable(w, t, c) {
                    if w.now.saturating_sub(w.cpus[c].idle_since) >= self.compact_ns {
                        // Idle too long: compacted, not used.
                        self.compact(c);
                        continue;
                    }
                    if c == prev {
                        let s = self.state(t);
                        s.attached = Some(c);
                        s.patience = INIT_PATIENCE;
                    }
                    return Ok(c);
                }
                if same_llc && c == prev {
                    let s = self.state(t);
                    if s.patience > 0 {
                        s.patience -= 1;
                    } else {
                        s.patience = INIT_PATIENCE;
                        impatient = true;
                        break 'search;
                    }
                }
            }
        }
        // 4. The reserve nest, prev's LLC first, from the nest's start.
        let from = self.start.unwrap_or(prev);
        for same_llc in [true, false] {
            for c in Self::wrap(n, from) {
                if self.reserve[c] && (w.m.cpu_llc[c] == llc) == same_llc && Self::usable(w, t, c) {
                    if c == prev {
                        let s = self.state(t);
                        s.attached = Some(c);
                        s.patience = INIT_PATIENCE;
                    }
                    self.promote(c);
                    return Ok(c);
                }
            }
        }
        Err(impatient)
    }
}

impl Scheduler for Nest {
    fn numa_imbalance_pct(&self) -> Option<f64> {
        self.cfs.numa_imbalance_pct()
    }
    fn select_cpu(&mut self, w: &mut World, t: TaskId, why: Placement) -> CpuId {
        let prev = match why {
            Placement::New { parent_cpu, .. } => {
                // wake_up_new_task: no attached core, one more patience.
                let s = self.state(t);
                s.attached = None;
                s.patience = INIT_PATIENCE + 1;
                s.known = true;
                parent_cpu
            }
            Placement::Wake { .. } => w.tasks[t].cpu,
        };
        if !self.state(t).known {
            let s = self.state(t);
            s.known = true;
            s.patience = INIT_PATIENCE + 1;
        }
        self.start.get_or_insert(prev);
        match self.nest_select(w, t, prev) {
            Ok(c) => c,
            Err(impatient) => {
                // CFS's fork path for a new task (NEST keeps it there at
                // exec), its wakeup path otherwise.
                let why = match why {
                    Placement::New { parent_cpu, .. } => Placement::New {
                        parent_cpu,
                        exec: false,
                    },
                    wake => wake,
                };
                let c = self.cfs.select(w, t, why);
                if impatient {
                    self.promote(c);
                } else {
                    self.join_reserve(c);
                }
                c
            }
        }
    }

    fn tick(&mut self, w: &mut World) {
        self.cfs.periodic(w);
    }

    fn idle(&mut self, w: &mut World, cpu: CpuId) {
        self.cfs.newidle(w, cpu);
    }

    fn slice_ns(&self, w: &World, cpu: CpuId) -> u64 {
        self.cfs.slice(w, cpu)
    }

    fn task_left(&mut self, w: &mut World, t: TaskId, cpu: CpuId) {
        // A task that exits and leaves its core idle: the core leaves the
        // primary nest at once (__schedule, TASK_DEAD).
        if w.tasks[t].state == TaskState::Done && w.cpus[cpu].is_idle() && self.primary[cpu] {
            self.compact(cpu);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::World;
    use rand_core::SeedableRng;

    /// A sync wakeup by a task running on `waker_cpu`.
    fn woken_by(waker_cpu: CpuId) -> Placement {
        Placement::Wake {
            waker_cpu,
            sync: true,
        }
    }

    fn world(ncpus_preset: &str) -> World {
        let m = Machine::load(ncpus_preset).expect("preset");
        World::new(
            m,
            1_000_000,
            crate::CHUNK_BYTES,
            rand_chacha::ChaCha8Rng::seed_from_u64(1),
            false,
        )
    }

    fn nest(w: &World) -> Nest {
        let mut p = Params::new("nest", &Default::default());
        let cfs = Linux::new(&mut p, &w.m).expect("cfs");
        Nest::new(cfs, w.m.ncpus, 5, 2_000_000)
    }

    /// Tasks that spin forever, `n` of them, not yet placed.
    fn tasks(w: &mut World, n: usize) -> Vec<TaskId> {
        let _ = crate::workload::add_region(w, 0, 1);
        (0..n)
            .map(|i| {
                crate::workload::add_task(
                    w,
                    format!("t{i}"),
                    0,
                    crate::workload::spin_work(1.0),
                    u64::MAX,
                    crate::engine::Parent::Cpu(0),
                    true,
                    0,
                    true,
                )
            })
            .collect()
    }

    fn run_on(w: &mut World, t: TaskId, c: CpuId) {
        w.enqueue(t, c);
        w.cpus[c].queue.retain(|&x| x != t);
        w.cpus[c].curr = Some(t);
        w.tasks[t].state = TaskState::Running;
    }

    #[test]
    fn a_core_found_by_the_cfs_fallback_joins_the_reserve_not_the_primary_nest() {
        let mut w = world("epyc7642");
        let mut s = nest(&w);
        let ts = tasks(&mut w, 2);
        // The parent runs on CPU 0, which is primary.
        s.primary[0] = true;
        run_on(&mut w, ts[0], 0);
        // Its child: prev (0) is busy, no other primary or reserve core.
        let c = s.select_cpu(
            &mut w,
            ts[1],
            Placement::New {
                parent_cpu: 0,
                exec: true,
            },
        );
        assert_ne!(c, 0);
        assert!(s.reserve[c], "CFS's core {c} is in the reserve");
        assert!(!s.primary[c], "CFS's core {c} is not primary yet");
        // The next placement that finds it idle in the reserve promotes it.
        let ts2 = tasks(&mut w, 1);
        let c2 = s.select_cpu(
            &mut w,
            ts2[0],
            Placement::New {
                parent_cpu: 0,
                exec: true,
            },
        );
        assert_eq!(c2, c, "the reserve core is used before CFS is asked");
        assert!(s.primary[c] && !s.reserve[c]);
    }

    #[test]
    fn an_impatient_task_puts_the_cfs_core_straight_into_the_primary_nest() {
        let mut w = world("epyc7642");
        let mut s = nest(&w);
        let ts = tasks(&mut w, 3);
        s.primary[0] = true;
        run_on(&mut w, ts[0], 0);
        // The woken task last ran on 0 (busy, primary): each wakeup costs
        // it patience; the third is impatient.
        w.tasks[ts[1]].cpu = 0;
        w.tasks[ts[1]].placed = true;
        let st = s.state(ts[1]);
        st.known = true;
        st.patience = INIT_PATIENCE;
        let mut primary_at = Vec::new();
        for i in 0..6 {
            let c = s.select_cpu(&mut w, ts[1], woken_by(0));
            assert_ne!(c, 0);
            if s.primary[c] {
                primary_at.push(i);
            } else {
                assert!(s.reserve[c]);
            }
            // Forget the core, so that CFS decides every time.
            s.primary[c] = false;
            s.reserve[c] = false;
        }
        assert_eq!(primary_at, vec![2, 5], "impatient every third try");
    }

    #[test]
    fn the_attached_core_is_preferred_and_exit_compacts_its_core() {
        let mut w = world("epyc7642");
        let mut s = nest(&w);
        let ts = tasks(&mut w, 2);
        // A woken task whose previous core 7 is idle and outside the nest
        // attaches there and makes it primary.
        w.tasks[ts[0]].cpu = 7;
        w.tasks[ts[0]].placed = true;
        w.tasks[ts[0]].state = TaskState::Runnable;
        let c = s.select_cpu(&mut w, ts[0], woken_by(3));
        assert_eq!(c, 7);
        assert!(s.primary[7]);
        assert_eq!(s.tasks[ts[0]].attached, Some(7));
        // Another idle primary core nearer in the search does not win
        // over the attached one.
        s.primary[6] = true;
        w.cpus[6].idle_since = w.now;
        w.cpus[7].idle_since = w.now;
        let c = s.select_cpu(&mut w, ts[0], woken_by(6));
        assert_eq!(c, 7);
        // It runs there and exits: the idle core leaves the primary nest.
        run_on(&mut w, ts[0], 7);
        w.cpus[7].curr = None;
        w.tasks[ts[0]].state = TaskState::Done;
        s.task_left(&mut w, ts[0], 7);
        assert!(!s.primary[7] && s.reserve[7]);
    }

    #[test]
    fn a_primary_core_idle_too_long_is_compacted_when_found() {
        let mut w = world("epyc7642");
        let mut s = nest(&w);
        let ts = tasks(&mut w, 2);
        s.primary[0] = true;
        s.primary[1] = true;
        s.primary[2] = true;
        run_on(&mut w, ts[0], 0);
        w.now = 10_000_000;
        // CPU 1 idle since 0: 10 ms, more than 2 ms; CPU 2 for 1 ms.
        w.cpus[1].idle_since = 0;
        w.cpus[2].idle_since = w.now - 1_000_000;
        let c = s.select_cpu(
            &mut w,
            ts[1],
            Placement::New {
                parent_cpu: 0,
                exec: true,
            },
        );
        // The search met 1 first: compacted into the reserve; 2 taken.
        assert_eq!(c, 2);
        assert!(!s.primary[1] && s.reserve[1]);
        assert!(s.primary[2]);
        // Recently idle: used as it is.
        let mut s = nest(&w);
        s.primary[0] = true;
        s.primary[1] = true;
        w.cpus[1].idle_since = w.now - 1_000_000;
        let ts = tasks(&mut w, 1);
        let c = s.select_cpu(
            &mut w,
            ts[0],
            Placement::New {
                parent_cpu: 0,
                exec: true,
            },
        );
        assert_eq!(c, 1);
        assert!(s.primary[1] && !s.reserve[1]);
    }
}
