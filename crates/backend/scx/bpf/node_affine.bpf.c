/* numalab_node_affine: Erich Focht's node affine scheduler (LKML 2002,
 * 2003; the simulator's `node-affine`) as a sched_ext scheduler.
 *
 * Every task has a homenode. A task queues on its homenode's queue (one
 * dispatch queue per node, allocated on that node) and runs on the
 * node's CPUs; an idle CPU takes from its own node's queue first. A CPU
 * with nothing of its own node to run steals from another node only once
 * that node's oldest waiter has waited `delay_ns` per 10 units of
 * distance beyond local, and then takes first a task homed on its own
 * node (it goes home), preferring the node whose queue is longest per
 * CPU plus `bonus` per task of ours queued there. A task running off its
 * homenode is sent home (its slice cut, an idle home CPU woken) as soon
 * as a CPU of its homenode is idle.
 *
 * With `initial`, a task that execs is given the node with the fewest
 * tasks homed on it per CPU (node-aware initial balancing); otherwise it
 * keeps its parent's node. Its memory follows first touch on its
 * homenode's CPUs (BPF cannot set a memory policy).
 *
 * Idle CPUs do not poll: the CPUs that are busy check at each tick
 * whether their node's oldest waiter has waited long enough for a
 * remote idle CPU, and wake one.
 */
#include "numalab_scx.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Powers of two: an index into an array is masked with MAX - 1 (behind
 * a compiler barrier, so that clang cannot drop the mask as redundant
 * after a bounds check whose outcome the verifier would not follow). */
#define MAX_NODES 64
#define MAX_CPUS 1024
#define NODE(n) nl_mask((u32)(n), MAX_NODES - 1)
#define CPU(c) nl_mask((u32)(c), MAX_CPUS - 1)

static __always_inline u32 nl_mask(u32 v, u32 mask)
{
	asm volatile("" : "+r"(v));
	return v & mask;
}

/* Set by the loader before loading. */
const volatile u32 nr_nodes = 1;
const volatile u32 nr_cpus = 1;
const volatile u64 slice_ns = 100000000;
const volatile u64 delay_ns = 2000000;
/* bonus x 1000 */
const volatile u64 bonus_milli = 1000;
const volatile bool initial = true;
const volatile u32 cpu_node[MAX_CPUS];
const volatile u32 node_ncpus[MAX_NODES];
const volatile u8 dist[MAX_NODES * MAX_NODES];

struct nl_exit nl_exit_rec SEC(".data");

/* Live tasks homed on each node by initial balancing (the tasks of
 * programs started while the scheduler runs, as in the simulator, where
 * every task is one; kernel threads and daemons do not count). */
s64 homed[MAX_NODES];

/* Scratch count for dispatch, in a map so that the verifier does not
 * follow every value of it through the queue walk (it would explore one
 * state per count). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} own_count SEC(".maps");

struct task_home {
	s32 home;
	/* Placed by initial balancing: counted in homed[]. */
	bool placed;
	u64 enq_at;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_home);
} homes SEC(".maps");

static __always_inline u32 node_of(s32 cpu)
{
	if (cpu < 0 || cpu >= MAX_CPUS)
		return 0;
	return cpu_node[CPU(cpu)];
}

static __always_inline u64 distance(u32 a, u32 b)
{
	if (a >= MAX_NODES || b >= MAX_NODES)
		return 10;
	return dist[NODE(a) * MAX_NODES + NODE(b)];
}

/* The wait after which a CPU of node `to` may take a task queued on
 * node `from`. */
static __always_inline u64 steal_delay(u32 to, u32 from)
{
	u64 d = distance(to, from);

	return d > 10 ? delay_ns * (d - 10) / 10 : 0;
}

static __always_inline struct task_home *home_of(struct task_struct *p)
{
	return bpf_task_storage_get(&homes, p, 0, 0);
}

/* Whether `p` may run on some CPU of `node`. */
static bool allowed_on(struct task_struct *p, u32 node)
{
	s32 cpu;

	if (p->nr_cpus_allowed >= nr_cpus)
		return true;
	bpf_for(cpu, 0, nr_cpus) {
		if (cpu >= MAX_CPUS)
			break;
		if (cpu_node[CPU(cpu)] == node && bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			return true;
	}
	return false;
}

static void set_home(struct task_home *h, s32 node)
{
	if (h->placed && h->home >= 0 && h->home < MAX_NODES)
		__sync_fetch_and_sub(&homed[NODE(h->home)], 1);
	h->home = node;
	if (h->placed && node >= 0 && node < MAX_NODES)
		__sync_fetch_and_add(&homed[NODE(node)], 1);
}

/* A node `p` may run on: its home, else that of a CPU it may use. */
static s32 usable_home(struct task_struct *p, struct task_home *h)
{
	s32 cpu;

	if (h->home >= 0 && allowed_on(p, h->home))
		return h->home;
	cpu = bpf_cpumask_any_distribute(p->cpus_ptr);
	set_home(h, node_of(cpu));
	return h->home;
}

/* An idle CPU of `node` (not claimed), or -1. */
static s32 idle_cpu_of(u32 node)
{
	const struct cpumask *idle = scx_bpf_get_idle_cpumask_node(node);
	u32 cpu = bpf_cpumask_any_distribute(idle);

	scx_bpf_put_idle_cpumask(idle);
	return cpu < nr_cpus ? (s32)cpu : -1;
}

s32 NL_OPS(na_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	struct task_home *h;
	s32 home, cpu;

	if (p->nr_cpus_allowed == 1)
		return prev_cpu;
	h = home_of(p);
	if (!h)
		return prev_cpu;
	home = usable_home(p, h);
	if (node_of(prev_cpu) == home && scx_bpf_test_and_clear_cpu_idle(prev_cpu)) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
		return prev_cpu;
	}
	cpu = scx_bpf_pick_idle_cpu_node(p->cpus_ptr, home, SCX_PICK_IDLE_IN_NODE);
	if (cpu >= 0) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
		return cpu;
	}
	return prev_cpu;
}

void NL_OPS(na_enqueue, struct task_struct *p, u64 enq_flags)
{
	struct task_home *h;
	s32 home, cpu;

	/* Pinned tasks (per-CPU kthreads among them) never wait in a
	 * node's queue: they run where they are. */
	h = home_of(p);
	if (p->nr_cpus_allowed == 1 || !h) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, enq_flags);
		return;
	}
	home = usable_home(p, h);
	h->enq_at = scx_bpf_now();
	scx_bpf_dsq_insert(p, home, slice_ns, enq_flags);
	cpu = scx_bpf_pick_idle_cpu_node(p->cpus_ptr, home, SCX_PICK_IDLE_IN_NODE);
	if (cpu >= 0)
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
}

/* How long the oldest waiter of `node`'s queue has waited (0: none). */
static u64 oldest_wait(u32 node, u64 now)
{
	struct task_struct *q = scx_bpf_dsq_peek(node);
	struct task_home *h;

	if (!q)
		return 0;
	h = home_of(q);
	if (!h || now < h->enq_at)
		return 0;
	return now - h->enq_at;
}

void NL_OPS(na_dispatch, s32 cpu, struct task_struct *prev)
{
	u32 here = node_of(cpu), x, best = MAX_NODES;
	u64 now = scx_bpf_now(), best_w = 0, *own;
	struct task_struct *p;
	u32 zero = 0;

	if (scx_bpf_dsq_move_to_local(here))
		return;
	own = bpf_map_lookup_elem(&own_count, &zero);
	if (!own)
		return;
	/* Nothing of our own: a remote node whose oldest waiter has waited
	 * long enough, the longest queue per CPU first, with a bonus for
	 * each task of ours queued there. */
	bpf_for(x, 0, nr_nodes) {
		s32 queued;
		u64 w, ncpu;

		if (x == here || x >= MAX_NODES)
			continue;
		queued = scx_bpf_dsq_nr_queued(x);
		if (queued <= 0 || oldest_wait(x, now) < steal_delay(here, x))
			continue;
		*own = 0;
		bpf_for_each(scx_dsq, p, x, 0) {
			struct task_home *h = home_of(p);

			if (h && h->home == (s32)here)
				*own += 1;
		}
		ncpu = node_ncpus[NODE(x)] ? node_ncpus[NODE(x)] : 1;
		w = ((u64)queued * 1000 + bonus_milli * *own) * 1000 / ncpu + 1;
		if (w > best_w) {
			best_w = w;
			best = x;
		}
	}
	if (best >= MAX_NODES)
		return;
	/* First a task homed here: it goes home. */
	bpf_for_each(scx_dsq, p, best, 0) {
		struct task_home *h = home_of(p);

		if (h && h->home == (s32)here &&
		    scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0))
			return;
	}
	scx_bpf_dsq_move_to_local(best);
}

void NL_OPS(na_tick, struct task_struct *p)
{
	u32 here = node_of(scx_bpf_task_cpu(p)), y;
	struct task_home *h = home_of(p);
	u64 now, wait;
	s32 cpu;

	/* Off its homenode while a CPU there is idle: home. */
	if (h && h->home >= 0 && (u32)h->home != here && p->nr_cpus_allowed > 1) {
		cpu = scx_bpf_pick_idle_cpu_node(p->cpus_ptr, h->home, SCX_PICK_IDLE_IN_NODE);
		if (cpu >= 0) {
			scx_bpf_task_set_slice(p, 0);
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
			return;
		}
	}
	/* Waiters here that a remote idle CPU may take by now: wake it. */
	now = scx_bpf_now();
	wait = oldest_wait(here, now);
	if (!wait)
		return;
	bpf_for(y, 0, nr_nodes) {
		if (y == here || y >= MAX_NODES || wait < steal_delay(y, here))
			continue;
		cpu = idle_cpu_of(y);
		if (cpu >= 0) {
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
			return;
		}
	}
}

/* Homes of tasks that exist when the scheduler loads, and of new ones:
 * the node of the CPU they are on (a child: its parent's). */
s32 NL_OPS(na_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	struct task_home *h = bpf_task_storage_get(&homes, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!h)
		return -12; /* -ENOMEM */
	h->home = node_of(scx_bpf_task_cpu(p));
	h->placed = false;
	h->enq_at = 0;
	return 0;
}

void NL_OPS(na_exit_task, struct task_struct *p, struct scx_exit_task_args *args)
{
	struct task_home *h = home_of(p);

	if (h)
		set_home(h, -1);
}

/* Node-aware initial balancing: at exec, the node with the fewest tasks
 * homed on it per CPU among those the task may use (ties: the lower id). */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(na_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct task_home *h;
	u32 n, best = MAX_NODES;
	u64 best_load = ~0ULL;

	if (!initial)
		return 0;
	h = home_of(p);
	if (!h || p->nr_cpus_allowed == 1)
		return 0;
	bpf_for(n, 0, nr_nodes) {
		u64 ncpu, load;
		s64 count;

		if (n >= MAX_NODES || !node_ncpus[NODE(n)] || !allowed_on(p, n))
			continue;
		count = homed[NODE(n)] - (h->placed && h->home == (s32)n ? 1 : 0);
		ncpu = node_ncpus[NODE(n)];
		load = (u64)(count > 0 ? count : 0) * 1000000 / ncpu;
		if (load < best_load) {
			best_load = load;
			best = n;
		}
	}
	if (best >= MAX_NODES)
		return 0;
	if (!h->placed) {
		h->placed = true;
		h->home = -1;
	}
	set_home(h, best);
	return 0;
}

s32 NL_OPS_SLEEPABLE(na_init)
{
	u32 n;
	s32 r;

	bpf_for(n, 0, nr_nodes) {
		r = scx_bpf_create_dsq(n, n);
		if (r)
			return r;
	}
	return 0;
}

void NL_OPS(na_exit, struct scx_exit_info *ei)
{
	nl_record_exit(ei);
}

SEC(".struct_ops.link")
struct sched_ext_ops node_affine_ops = {
	.select_cpu = (void *)na_select_cpu,
	.enqueue = (void *)na_enqueue,
	.dispatch = (void *)na_dispatch,
	.tick = (void *)na_tick,
	.init_task = (void *)na_init_task,
	.exit_task = (void *)na_exit_task,
	.init = (void *)na_init,
	.exit = (void *)na_exit,
	.flags = SCX_OPS_BUILTIN_IDLE_PER_NODE,
	.name = "numalab_node_affine",
};
