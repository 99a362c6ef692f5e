/* numalab_nest: NEST (Lawall et al., "OS Scheduling with Nest: Keeping
 * Tasks Close Together on Warm Cores", EuroSys 2022; the simulator's
 * `nest`) as a sched_ext scheduler.
 *
 * A primary nest of cores in use and a reserve nest of at most
 * `reserve_max` cores recently used. Each task has an attached core and
 * a patience. A new or waking task, `prev` being its previous CPU (a new
 * task's: its parent's), takes
 *
 *  1. its attached core, if that is in the primary nest and idle;
 *  2. else, with no attached core, `prev` if it is idle and outside the
 *     primary nest: the task attaches there and `prev` joins the nest;
 *  3. else an idle primary core of prev's LLC, then of the others, from
 *     prev upwards; a primary core idle for `compact_ns` is moved to the
 *     reserve instead of used. Each search that finds prev busy costs one
 *     unit of patience; out of patience, the task skips the rest of the
 *     primary nest (it is impatient) and its patience starts again;
 *  4. else an idle reserve core (prev's LLC first, from the nest's first
 *     core), promoted to the primary nest;
 *  5. else the kernel's default idle-CPU choice, which joins the reserve
 *     (the primary nest at once for an impatient task). A task that
 *     found no idle CPU waits in the global queue.
 *
 * A core that an exiting task leaves idle leaves the primary nest at
 * once. The nests are plain flags per CPU, read and written without
 * locks from every CPU, as the patch's cpumasks are.
 *
 * Only nest tasks take steps 1-5, as in the patch (5.15, 0001-NEST.patch,
 * as CachyOS/kernel-patches carries it), where a task takes them only with
 * `use_expand_mask` set (select_task_rq_fair). A task opts in by setting
 * its affinity to every CPU (the patch: the sched_setaffinity system call
 * with cpu_possible_mask sets use_expand_mask and resets the nests to the
 * task's core, reset_expand_mask); its children inherit it at fork (the
 * patch: a copied task_struct field). Kernel threads never are nest tasks
 * (do_set_cpus_allowed clears it). Every other task is placed by the
 * kernel's default idle choice (the patch: CFS's path) and touches neither
 * nest: a core's compaction clock starts only when a nest task leaves it
 * idle (prepare_task_switch: prev a nest task, next the idle task) and
 * stops when a nest task runs there again (next a nest task), so another
 * task's run in between neither restarts nor stops it, and a core leaves
 * the nest at an exit only for a nest task's (__schedule:
 * prev->use_expand_mask && TASK_DEAD).
 *
 * sched_ext tells the scheduler of an affinity change (ops.set_cpumask)
 * only when the mask changes, so a task already on every CPU opts in by
 * narrowing its affinity and widening it again (numalab's forkexec driver
 * does). The call that tells the scheduler the mask of a task that was
 * there when it was loaded (switching_to_scx) is not an opt-in. Unlike
 * the patch's, any widening of a user task's mask to every CPU counts,
 * the kernel's too (a cpuset change; migrate_enable after a preempted
 * migrate_disable section: p->migration_disabled, which would tell it,
 * was set in the driver's own sched_setaffinity calls too on 7.3.4).
 */
#include "numalab_scx.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define MAX_CPUS 1024
#define CPU(c) nl_mask((u32)(c), MAX_CPUS - 1)
/* include/linux/sched.h: the state of a task's last switch-out. */
#define TASK_DEAD 0x00000080
/* include/linux/sched.h: task_struct.flags of a kernel thread. */
#define PF_KTHREAD 0x00200000
/* A task's patience when it attaches or is created (INIT_PATIENCE). */
#define INIT_PATIENCE 2

static __always_inline u32 nl_mask(u32 v, u32 mask)
{
	asm volatile("" : "+r"(v));
	return v & mask;
}

/* Set by the loader before loading. */
const volatile u32 nr_cpus = 1;
const volatile u64 slice_ns = 20000000;
const volatile u64 compact_ns = 2000000;
const volatile u32 reserve_max = 5;
/* Each CPU's last-level cache (an index, the same for CPUs sharing it). */
const volatile u32 cpu_llc[MAX_CPUS];

struct nl_exit nl_exit_rec SEC(".data");

u8 primary[MAX_CPUS];
u8 reserve[MAX_CPUS];
/* When a nest task last left each CPU idle (the patch's drop_expand_ctr
 * set in prepare_task_switch), and whether that clock runs: stopped when
 * a nest task runs there (`next->use_expand_mask`). */
u64 idle_since[MAX_CPUS];
u8 armed[MAX_CPUS];
/* Whether the task a CPU ran last has exited (its last switch-out), and
 * whether it was a nest task. */
u8 exiting[MAX_CPUS];
u8 last_nest[MAX_CPUS];
/* Where reserve searches start: the first previous CPU seen. */
s32 start = -1;

/* How often each step placed a task (the loader prints them at exit):
 * attached core, previous core newly attached, primary core, reserve
 * core, the kernel's choice of an idle CPU, of a busy one; then primary
 * cores compacted in a search and at an exit. */
enum { ST_ATTACHED, ST_PREV, ST_PRIMARY, ST_RESERVE, ST_IDLE, ST_BUSY, ST_COMPACT, ST_EXIT, NR_ST };
u64 stats[NR_ST];

static __always_inline void count(u32 i)
{
	if (i < NR_ST)
		__sync_fetch_and_add(&stats[i], 1);
}

struct task_nest {
	s32 attached;
	u32 patience;
	/* The patch's use_expand_mask. */
	u8 nest;
	/* A task there when the scheduler was loaded: its first
	 * ops.set_cpumask is switching_to_scx()'s, not an opt-in. */
	u8 loading;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_nest);
} nests SEC(".maps");

static __always_inline bool valid(s32 cpu)
{
	return cpu >= 0 && cpu < MAX_CPUS && (u32)cpu < nr_cpus;
}

/* Cores in the reserve (kept with the flags; a race between CPUs may
 * let it be off by one for a moment, as the patch's cpumask weight is). */
s32 nr_reserve;

static __always_inline void set_reserve(s32 c, u8 v)
{
	if (reserve[CPU(c)] == v)
		return;
	reserve[CPU(c)] = v;
	__sync_fetch_and_add(&nr_reserve, v ? 1 : -1);
}

/* Into the primary nest, out of the reserve (set_expand_mask). */
static __always_inline void promote(s32 c)
{
	if (!valid(c))
		return;
	primary[CPU(c)] = 1;
	set_reserve(c, 0);
}

/* Out of the primary nest, into the reserve if it has room. */
static __always_inline void compact(s32 c)
{
	if (!valid(c))
		return;
	primary[CPU(c)] = 0;
	if (nr_reserve < (s32)reserve_max)
		set_reserve(c, 1);
}

/* Into the reserve, if in neither nest and there is room. */
static __always_inline void join_reserve(s32 c)
{
	if (!valid(c) || primary[CPU(c)] || reserve[CPU(c)])
		return;
	if (nr_reserve < (s32)reserve_max)
		set_reserve(c, 1);
}

static __always_inline bool idle_now(s32 c)
{
	const struct cpumask *idle = scx_bpf_get_idle_cpumask();
	bool r = bpf_cpumask_test_cpu(c, idle);

	scx_bpf_put_idle_cpumask(idle);
	return r;
}

static __always_inline void attach(struct task_nest *t, s32 c)
{
	t->attached = c;
	t->patience = INIT_PATIENCE;
}

/* Steps 1 to 4; -1: fall back (and `*impatient` says how). */
static s32 nest_select(struct task_struct *p, struct task_nest *t, s32 prev, bool *impatient)
{
	u32 llc = cpu_llc[CPU(prev)], i, n = nr_cpus;
	s32 a = t->attached, from, c;
	u64 now;

	if (valid(a)) {
		if (primary[CPU(a)] && bpf_cpumask_test_cpu(a, p->cpus_ptr) &&
		    scx_bpf_test_and_clear_cpu_idle(a)) {
			if (a == prev)
				t->patience = INIT_PATIENCE;
			count(ST_ATTACHED);
			return a;
		}
		if (a != prev || !primary[CPU(a)])
			t->attached = -1;
	} else if (!primary[CPU(prev)] && bpf_cpumask_test_cpu(prev, p->cpus_ptr) &&
		   scx_bpf_test_and_clear_cpu_idle(prev)) {
		attach(t, prev);
		promote(prev);
		count(ST_PREV);
		return prev;
	}
	now = scx_bpf_now();
	/* The primary nest: prev's LLC (i < n), then the others. */
	bpf_for(i, 0, 2 * n) {
		bool same_pass = i < n;

		c = (s32)((prev + i) % n);
		if (!valid(c) || !primary[CPU(c)] || (cpu_llc[CPU(c)] == llc) != same_pass)
			continue;
		if (bpf_cpumask_test_cpu(c, p->cpus_ptr) && idle_now(c)) {
			if (armed[CPU(c)] && now - idle_since[CPU(c)] >= compact_ns) {
				compact(c);
				count(ST_COMPACT);
				continue;
			}
			if (!scx_bpf_test_and_clear_cpu_idle(c))
				continue;
			if (c == prev)
				attach(t, c);
			count(ST_PRIMARY);
			return c;
		}
		if (same_pass && c == prev) {
			if (t->patience > 0) {
				t->patience--;
			} else {
				t->patience = INIT_PATIENCE;
				*impatient = true;
				break;
			}
		}
	}
	/* The reserve, prev's LLC first, from the nest's first core. */
	from = valid(start) ? start : prev;
	bpf_for(i, 0, 2 * n) {
		c = (s32)((from + i) % n);
		if (!valid(c) || !reserve[CPU(c)] || (cpu_llc[CPU(c)] == llc) != (i < n))
			continue;
		if (!bpf_cpumask_test_cpu(c, p->cpus_ptr) || !scx_bpf_test_and_clear_cpu_idle(c))
			continue;
		if (c == prev)
			attach(t, c);
		promote(c);
		count(ST_RESERVE);
		return c;
	}
	return -1;
}

s32 NL_OPS(nest_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	struct task_nest *t;
	bool impatient = false, idle = false;
	s32 cpu;

	t = bpf_task_storage_get(&nests, p, 0, 0);
	if (!t || !valid(prev_cpu) || p->nr_cpus_allowed == 1)
		return prev_cpu;
	if (!t->nest) {
		/* Not a nest task: the kernel's choice, no nest touched. */
		cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);
		if (idle)
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
		return cpu;
	}
	if (wake_flags & SCX_WAKE_FORK) {
		/* wake_up_new_task: no attached core, one more patience. */
		t->attached = -1;
		t->patience = INIT_PATIENCE + 1;
	}
	if (start < 0)
		__sync_val_compare_and_swap(&start, -1, prev_cpu);
	cpu = nest_select(p, t, prev_cpu, &impatient);
	if (cpu >= 0) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
		return cpu;
	}
	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);
	if (impatient)
		promote(cpu);
	else
		join_reserve(cpu);
	if (idle)
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
	count(idle ? ST_IDLE : ST_BUSY);
	return cpu;
}

void NL_OPS(nest_enqueue, struct task_struct *p, u64 enq_flags)
{
	scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, slice_ns, enq_flags);
}

static __always_inline bool is_nest_task(struct task_struct *p)
{
	struct task_nest *t = bpf_task_storage_get(&nests, p, 0, 0);

	return t && t->nest;
}

/* A nest task running stops its core's compaction clock. */
void NL_OPS(nest_running, struct task_struct *p)
{
	s32 cpu = scx_bpf_task_cpu(p);

	if (valid(cpu) && is_nest_task(p))
		armed[CPU(cpu)] = 0;
}

void NL_OPS(nest_stopping, struct task_struct *p, bool runnable)
{
	s32 cpu = scx_bpf_task_cpu(p);
	bool nest = is_nest_task(p);

	if (!valid(cpu))
		return;
	last_nest[CPU(cpu)] = nest;
	exiting[CPU(cpu)] = nest && !runnable && p->__state == TASK_DEAD;
}

/* A CPU going idle after a nest task: its compaction clock starts, and
 * it leaves the primary nest if that task exited (__schedule of a
 * TASK_DEAD task). After any other task, nothing changes. */
void NL_OPS(nest_update_idle, s32 cpu, bool idle)
{
	if (!valid(cpu) || !idle || !last_nest[CPU(cpu)])
		return;
	idle_since[CPU(cpu)] = scx_bpf_now();
	armed[CPU(cpu)] = 1;
	if (exiting[CPU(cpu)] && primary[CPU(cpu)]) {
		compact(cpu);
		count(ST_EXIT);
	}
	exiting[CPU(cpu)] = 0;
	last_nest[CPU(cpu)] = 0;
}

s32 NL_OPS(nest_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	struct task_nest *t = bpf_task_storage_get(&nests, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!t)
		return -12; /* -ENOMEM */
	t->attached = -1;
	t->patience = INIT_PATIENCE + 1;
	t->nest = 0;
	t->loading = !args->fork;
	if (args->fork && !(p->flags & PF_KTHREAD)) {
		/* Inherited from the parent, the task forking it. */
		struct task_nest *pt =
			bpf_task_storage_get(&nests, bpf_get_current_task_btf(), 0, 0);

		t->nest = pt && pt->nest;
	}
	return 0;
}

/* sched_setaffinity with every CPU: the task opts in and the nests start
 * again from its core (reset_expand_mask). */
void NL_OPS(nest_set_cpumask, struct task_struct *p, const struct cpumask *mask)
{
	struct task_nest *t = bpf_task_storage_get(&nests, p, 0, 0);
	s32 cpu = scx_bpf_task_cpu(p), c;
	u32 i;

	if (!t)
		return;
	if (t->loading) {
		t->loading = 0;
		return;
	}
	if ((p->flags & PF_KTHREAD) || !valid(cpu) ||
	    bpf_cpumask_weight(mask) != nr_cpus)
		return;
	t->nest = 1;
	bpf_for(i, 0, nr_cpus) {
		c = (s32)i;
		if (!valid(c))
			break;
		primary[CPU(c)] = c == cpu;
		set_reserve(c, 0);
	}
	start = cpu;
}

void NL_OPS(nest_exit, struct scx_exit_info *ei)
{
	nl_record_exit(ei);
}

SEC(".struct_ops.link")
struct sched_ext_ops nest_ops = {
	.select_cpu = (void *)nest_select_cpu,
	.enqueue = (void *)nest_enqueue,
	.set_cpumask = (void *)nest_set_cpumask,
	.running = (void *)nest_running,
	.stopping = (void *)nest_stopping,
	.update_idle = (void *)nest_update_idle,
	.init_task = (void *)nest_init_task,
	.exit = (void *)nest_exit,
	/* update_idle without this would turn off the kernel's idle
	 * tracking, which steps 1-5 use. */
	.flags = SCX_OPS_KEEP_BUILTIN_IDLE,
	.name = "numalab_nest",
};
