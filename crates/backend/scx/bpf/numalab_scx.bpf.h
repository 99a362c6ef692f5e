/* numalab's sched_ext schedulers: what every one of them shares.
 *
 * Written for numalab (MIT OR Apache-2.0); compiled against the running
 * kernel's own vmlinux.h (Debian's linux-bpf-dev of the same version),
 * which declares every type, enum and kfunc used here.
 */
#ifndef NUMALAB_SCX_BPF_H
#define NUMALAB_SCX_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

/* A struct_ops callback `name` with typed arguments. */
#define NL_OPS(name, args...) SEC("struct_ops/" #name) BPF_PROG(name, ##args)
/* The same, for callbacks the kernel calls where they may sleep (init). */
#define NL_OPS_SLEEPABLE(name, args...) SEC("struct_ops.s/" #name) BPF_PROG(name, ##args)

/* How the scheduler ended, copied out of the kernel's scx_exit_info in
 * ops.exit for the loader to print. `kind` is written last: user space
 * reads the rest once it is non-zero. */
struct nl_exit {
	s32 kind;
	s64 code;
	char reason[128];
	char msg[1024];
};

/* The iterator of the innermost bpf_for_each() (for scx_bpf_dsq_move). */
#define BPF_FOR_EACH_ITER (&___it)

/* Define in each scheduler: struct nl_exit nl_exit_rec SEC(".data"); */
extern struct nl_exit nl_exit_rec;

static __always_inline void nl_record_exit(struct scx_exit_info *ei)
{
	bpf_probe_read_kernel_str(nl_exit_rec.reason, sizeof(nl_exit_rec.reason), ei->reason);
	bpf_probe_read_kernel_str(nl_exit_rec.msg, sizeof(nl_exit_rec.msg), ei->msg);
	nl_exit_rec.code = ei->exit_code;
	__sync_val_compare_and_swap(&nl_exit_rec.kind, 0, ei->kind);
}

#endif
