/* numalab_fifo: one global first-in first-out queue, the plainest
 * sched_ext scheduler (the baseline beside numalab's NUMA policies).
 *
 * A waking task goes straight to an idle CPU when the kernel's default
 * idle search finds one (its local queue, no queueing); every other task
 * joins the global queue (SCX_DSQ_GLOBAL), which every CPU consumes in
 * order when its local queue is empty. Each run lasts at most `slice_ns`.
 */
#include "numalab_scx.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by the loader before loading (parameter slice_ms). */
const volatile u64 slice_ns = 20000000;

struct nl_exit nl_exit_rec SEC(".data");

s32 NL_OPS(fifo_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool idle = false;
	s32 cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);

	if (idle)
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
	return cpu;
}

void NL_OPS(fifo_enqueue, struct task_struct *p, u64 enq_flags)
{
	scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, slice_ns, enq_flags);
}

void NL_OPS(fifo_exit, struct scx_exit_info *ei)
{
	nl_record_exit(ei);
}

SEC(".struct_ops.link")
struct sched_ext_ops fifo_ops = {
	.select_cpu = (void *)fifo_select_cpu,
	.enqueue = (void *)fifo_enqueue,
	.exit = (void *)fifo_exit,
	.name = "numalab_fifo",
};
