#!/usr/bin/env bash
# Starts and stops a throwaway one-machine Slurm cluster on localhost, for
# numalab's tests of its Slurm support (Debian bookworm: Slurm 22.05, munge
# 0.5). No systemd, /etc/slurm or /etc/munge needed.
#
# Usage (as root):
#   eval "$(scripts/slurm-cluster.sh start DIR)"   # prints: export SLURM_CONF=DIR/slurm.conf
#   sbatch ...; squeue ...; scontrol ...; scancel ...
#   scripts/slurm-cluster.sh stop DIR
#
# start DIR
#   Installs slurmctld, slurmd, slurm-client and munge (apt-get install -y
#   --no-install-recommends, after apt-get update if that fails; a temporary
#   policy-rc.d keeps their init scripts from starting system-wide daemons)
#   when one of sbatch/squeue/sinfo/scontrol/slurmctld/slurmd/munged/munge is
#   missing. Creates everything under DIR (made absolute; no whitespace):
#     DIR/slurm.conf            the cluster's only configuration file
#     DIR/munge/                munge.key (own random key), munge.socket,
#                               munged.pid, munged.log, munged.seed
#     DIR/state/                StateSaveLocation  } wiped, with the logs and
#     DIR/spool/                SlurmdSpoolDir     } jobcomp.txt, on each start
#     DIR/log/                  slurmctld.log, slurmd.log
#     DIR/run/                  slurmctld.pid, slurmd.pid
#     DIR/jobcomp.txt           jobcomp/filetxt: one line per finished job
#     DIR/env                   a copy of what start prints
#     DIR/apt.log               apt-get's output, if it ran
#   Nothing in /etc/slurm, /etc/munge or /run/munge is read or written, and a
#   system-wide munged or Slurm is left alone: if something listens on port
#   6817/6818 the next free ports are taken. Concurrent starts queue on a
#   lock (/tmp/.slurm-cluster.lock). A cluster still running from DIR is
#   stopped first, so job ids start at 1 again.
#   The cluster: ClusterName=numalab, SlurmctldHost=localhost(127.0.0.1); one
#   node named after the short hostname (NodeAddr=127.0.0.1, so the name
#   needs no DNS) with CPUs=$(nproc) and RealMemory = 90% of MemTotal
#   (SlurmdParameters=config_overrides: slurmd does not check them); one
#   default partition "debug", MaxTime=INFINITE; select/cons_tres with
#   CR_CPU (a 1-CPU array task takes one CPU, so 2 CPUs run two tasks at
#   once; memory is not consumable; --exclusive gets the whole node);
#   proctrack/linuxproc and task/none (no cgroups); MinJobAge=3600 (finished
#   tasks stay in `scontrol show job` and `squeue -t all` for an hour);
#   ReturnToService=2. Daemons run as root; jobs as whoever submits them.
#   Waits (at most 60 s) for the node to be idle and the scheduler to have
#   run once, then prints to stdout exactly the lines to eval:
#     export SLURM_CONF=DIR/slurm.conf
#   That is all the clients need: sbatch/squeue/scancel/scontrol/sinfo find
#   munge's socket through AuthInfo=socket=... in slurm.conf. Errors go to
#   stderr as one line; a daemon that fails is named with its log.
#
# stop DIR
#   Cancels the cluster's jobs (if slurmctld answers), stops slurmd,
#   slurmctld and munged started from DIR (found by their pid files, and
#   only if the process's command line names DIR; SIGTERM, then SIGKILL
#   after 10 s), then SIGKILLs any slurmstepd still left from DIR (one with
#   a file open under DIR) together with its job processes. Succeeds when
#   nothing was running. Leaves DIR (logs, jobcomp.txt) in place.
#
# Exit status: 0 ok; 2 usage; 3 not root; 4 installing the packages failed;
# 5 a daemon did not come up (whatever had started is stopped again);
# 6 stop could not end a process.
#
# Accounting: AccountingStorageType=accounting_storage/none, so there is no
# job database, and in Slurm 22.05 `sacct` (any options) prints only
#   Slurm accounting storage is disabled
# on stderr and exits 1. Use `squeue -r` (pending/running/completing tasks),
# `squeue -r -t all` and `scontrol -o show job ID` (also finished tasks, for
# MinJobAge=3600 s) or DIR/jobcomp.txt instead.
#
# Scheduling: sched/builtin (FIFO). slurmctld queues most scheduling
# requests for its 1-second background loop, which also waits
# batch_sched_delay (default 3 s) between runs: SchedulerParameters=
# batch_sched_delay=0 makes a newly submitted array start within 1 s, and
# Epilog=/bin/true makes slurmd report each job's end with an
# epilog-complete message, on which slurmctld schedules at once, so the
# next array task starts within about 0.1 s of the previous one's end
# (measured: 6 one-second tasks on 2 CPUs take about 4 s, submit to last
# end).
#
# Optional environment: SLURM_CLUSTER_PORT (first port to try for
# slurmctld, default 6817; slurmd takes the next free one after it),
# SLURM_CLUSTER_DEBUG (SlurmctldDebug/SlurmdDebug, default info).
set -uo pipefail
export PATH="$PATH:/usr/sbin:/sbin"

me=slurm-cluster

die() { # status message...
    local rc=$1
    shift
    echo "$me: $*" >&2
    exit "$rc"
}

usage() {
    echo "usage: $0 start DIR | stop DIR" >&2
    exit 2
}

(($# == 2)) || usage
cmd=$1
dir=$2
case $cmd in start | stop) ;; *) usage ;; esac
[ "$(id -u)" -eq 0 ] || die 3 "not root: running as uid $(id -u), but '$cmd' needs root (the cluster's daemons run as root)"
case $dir in *[[:space:]]*) die 2 "DIR must not contain whitespace: '$dir'" ;; esac
[ -n "$dir" ] || usage
if ! [[ ${SLURM_CLUSTER_PORT:-6817} =~ ^[0-9]{1,5}$ ]] || ((${SLURM_CLUSTER_PORT:-6817} >= 65535)); then
    die 2 "SLURM_CLUSTER_PORT is not a port number: '${SLURM_CLUSTER_PORT:-}'"
fi

if [ "$cmd" = start ]; then
    mkdir -p "$dir" || die 5 "cannot create $dir"
fi
if [ -d "$dir" ]; then
    dir=$(cd "$dir" && pwd -P) || die 2 "cannot enter $dir"
elif [ "$cmd" = stop ]; then
    exit 0 # never started: nothing to stop
fi

conf=$dir/slurm.conf
mdir=$dir/munge
sock=$mdir/munge.socket
export SLURM_CONF=$conf

# pid_of NAME: the pid of the daemon NAME started from $dir, if it still runs
# (read from its pid file, and its command line must name $dir).
pid_of() {
    local f pid
    case $1 in
        munged) f=$mdir/munged.pid ;;
        *) f=$dir/run/$1.pid ;;
    esac
    [ -r "$f" ] || return 1
    read -r pid <"$f" 2>/dev/null || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    cmdline_has "$pid" "$dir/" && echo "$pid"
}

# The helpers below read /proc without forking: on a busy CI machine with
# hundreds of processes, a fork per process would take seconds.

# cmdline_has PID STRING: whether the live (non-zombie) process PID has
# STRING in its command line (arguments joined by spaces).
cmdline_has() {
    local args=()
    mapfile -d '' args 2>/dev/null <"/proc/$1/cmdline" || return 1
    ((${#args[@]})) && [[ "${args[*]}" == *"$2"* ]]
}

# stat_of PID: sets st (state letter) and pp (parent pid) of process PID.
stat_of() {
    local line rest
    read -r line 2>/dev/null <"/proc/$1/stat" || return 1
    read -r st pp rest <<<"${line##*) }"
}

# descendants PID...: every live descendant of the given pids.
descendants() {
    local -A kids=()
    local d p pp st
    for d in /proc/[0-9]*; do
        p=${d#/proc/}
        stat_of "$p" || continue
        kids[$pp]+=" $p"
    done
    local queue=("$@") out=()
    while ((${#queue[@]})); do
        p=${queue[0]}
        queue=("${queue[@]:1}")
        for pp in ${kids[$p]:-}; do
            out+=("$pp")
            queue+=("$pp")
        done
    done
    echo "${out[@]:-}"
}

# stray_stepds: slurmstepd processes forked by a slurmd from $dir (they keep
# slurmd's log file open and run in slurmd's working directory, under $dir).
stray_stepds() {
    local d p f
    for d in /proc/[0-9]*; do
        p=${d#/proc/}
        cmdline_has "$p" "slurmstepd:" || continue
        for f in "$d/cwd" "$d"/fd/*; do
            if [[ $(readlink "$f" 2>/dev/null) == "$dir"/* ]]; then
                echo "$p"
                break
            fi
        done
    done
}

# terminate PID...: SIGTERM, wait up to 10 s, then SIGKILL and wait.
terminate() {
    local pids=() p i
    for p in "$@"; do [ -d "/proc/$p" ] && pids+=("$p"); done
    ((${#pids[@]})) || return 0
    kill -TERM "${pids[@]}" 2>/dev/null
    for ((i = 0; i < 100; i++)); do
        alive "${pids[@]}" || return 0
        sleep 0.1
    done
    kill -KILL "${pids[@]}" 2>/dev/null
    for ((i = 0; i < 50; i++)); do
        alive "${pids[@]}" || return 0
        sleep 0.1
    done
    return 1
}

# alive PID...: whether any of them is still a live (non-zombie) process.
alive() {
    local p st pp
    for p in "$@"; do
        stat_of "$p" || continue
        [ "$st" != Z ] && return 0
    done
    return 1
}

stop_cluster() {
    local p i ctld slurmd munged left=()
    ctld=$(pid_of slurmctld)
    slurmd=$(pid_of slurmd)
    munged=$(pid_of munged)
    # Cancel every job while slurmctld still answers, so that slurmd's
    # slurmstepds end their job processes themselves.
    if [ -n "$ctld" ] && [ -n "$munged" ] && [ -r "$conf" ]; then
        if [ -n "$(timeout 10 squeue -h -o %i 2>/dev/null)" ]; then
            timeout 10 scancel --quiet --partition=debug >/dev/null 2>&1
            for ((i = 0; i < 50; i++)); do
                [ -z "$(timeout 10 squeue -h -t R,CG,S -o %i 2>/dev/null)" ] && break
                sleep 0.2
            done
        fi
    fi
    # slurmstepds (and their jobs) outlive slurmd; find them first.
    local steps
    steps=$(stray_stepds)
    [ -n "$slurmd" ] && { terminate "$slurmd" || left+=("slurmd:$slurmd"); }
    [ -n "$ctld" ] && { terminate "$ctld" || left+=("slurmctld:$ctld"); }
    steps="$steps $(stray_stepds)"
    if [ -n "${steps// /}" ]; then
        local tree
        # shellcheck disable=SC2086
        tree="$steps $(descendants $steps)"
        # shellcheck disable=SC2086
        kill -KILL $tree 2>/dev/null
        # shellcheck disable=SC2086
        terminate $tree || left+=("job processes:$tree")
    fi
    [ -n "$munged" ] && { terminate "$munged" || left+=("munged:$munged"); }
    rm -f "$dir/run/slurmctld.pid" "$dir/run/slurmd.pid" "$mdir/munged.pid"
    if ((${#left[@]})); then
        echo "$me: could not stop ${left[*]} (from $dir)" >&2
        return 6
    fi
    return 0
}

if [ "$cmd" = stop ]; then
    stop_cluster
    exit
fi

# ---- start ------------------------------------------------------------------

# Starts run one at a time (apt-get, and choosing free ports until the
# daemons hold them); the daemons must not inherit the lock (fd 9).
lock=/tmp/.slurm-cluster.lock
exec 9>>"$lock" || die 5 "cannot open $lock"
flock -w 600 9 || die 5 "another slurm-cluster.sh start held $lock for 600 s"

need_install=
for c in sbatch squeue sinfo scontrol slurmctld slurmd munged munge; do
    command -v "$c" >/dev/null 2>&1 || need_install=1
done
if [ -n "$need_install" ]; then
    echo "$me: installing slurmctld slurmd slurm-client munge" >&2
    # Keep the packages' init scripts from starting system-wide daemons.
    policy=
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        policy=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy"
        trap 'rm -f "$policy"' EXIT
    fi
    apt_install() {
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            slurmctld slurmd slurm-client munge >"$dir/apt.log" 2>&1
    }
    if ! apt_install; then
        apt-get update -qq >>"$dir/apt.log" 2>&1
        apt_install || die 4 "apt-get install slurmctld slurmd slurm-client munge failed; see $dir/apt.log"
    fi
    [ -n "$policy" ] && rm -f "$policy"
    trap - EXIT
    for c in sbatch squeue sinfo scontrol slurmctld slurmd munged munge; do
        command -v "$c" >/dev/null 2>&1 || die 4 "$c still missing after apt-get install"
    done
fi

stop_cluster || die 5 "a previous cluster from $dir did not stop"

rm -rf "$dir/state" "$dir/spool"
rm -f "$dir/log/slurmctld.log" "$dir/log/slurmd.log" "$mdir/munged.log" "$dir/jobcomp.txt"
mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/run" "$mdir" || die 5 "cannot create directories under $dir"
# munged refuses directories writable by group/other and a readable key.
chmod 0755 "$dir" "$mdir"
chmod 0700 "$dir/state" "$dir/spool"
if [ ! -s "$mdir/munge.key" ]; then
    (umask 077 && dd if=/dev/urandom of="$mdir/munge.key" bs=1024 count=1 status=none) ||
        die 5 "cannot create $mdir/munge.key"
fi
chmod 0600 "$mdir/munge.key"
rm -f "$sock" "$sock.lock"

# port_used PORT: whether something listens on TCP PORT.
port_used() {
    local hex
    hex=$(printf ':%04X' "$1")
    awk -v p="$hex" 'NR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
        /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
port=${SLURM_CLUSTER_PORT:-6817}
while port_used "$port"; do port=$((port + 1)); done
ctld_port=$port
port=$((port + 1))
while port_used "$port"; do port=$((port + 1)); done
slurmd_port=$port

# The short hostname, as a plain Slurm node name.
node=$(</proc/sys/kernel/hostname)
node=${node%%.*}
node=${node//[^A-Za-z0-9-]/-}
node=${node:-localhost}
cpus=$(nproc)
mem_kib=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
mem_mib=$((mem_kib * 9 / 10 / 1024))
((mem_mib > 0)) || mem_mib=1

cat >"$conf" <<EOF
# Written by numalab's scripts/slurm-cluster.sh: a throwaway one-node cluster.
ClusterName=numalab
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=${SLURM_CLUSTER_DEBUG:-info}
SlurmdDebug=${SLURM_CLUSTER_DEBUG:-info}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0
Epilog=/bin/true
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MinJobAge=3600
KillWait=5
InactiveLimit=0
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
NodeName=$node NodeHostname=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mib State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF

# fail NAME LOG: stop what started, report NAME as the culprit.
fail() {
    stop_cluster >/dev/null 2>&1
    die 5 "$1 did not come up; see $2"
}

# --force: munged would refuse DIR under a group- or world-writable parent
# without the sticky bit (it only warns then).
munged --force \
    --socket="$sock" --key-file="$mdir/munge.key" --pid-file="$mdir/munged.pid" \
    --log-file="$mdir/munged.log" --seed-file="$mdir/munged.seed" \
    >>"$mdir/munged.log" 2>&1 </dev/null 9>&- || fail munged "$mdir/munged.log"
ok=
for ((i = 0; i < 50; i++)); do
    if munge -n -S "$sock" 2>/dev/null | unmunge -S "$sock" >/dev/null 2>&1; then
        ok=1
        break
    fi
    sleep 0.2
done
[ -n "$ok" ] || fail munged "$mdir/munged.log"

slurmctld -f "$conf" >>"$dir/log/slurmctld.log" 2>&1 </dev/null 9>&- || fail slurmctld "$dir/log/slurmctld.log"
slurmd -f "$conf" -N "$node" >>"$dir/log/slurmd.log" 2>&1 </dev/null 9>&- ||
    fail slurmd "$dir/log/slurmd.log"

# Wait (at most 60 s) for the node to be idle. A daemon whose pid file
# appeared and whose process then vanished has failed; so has one that wrote
# no pid file within 20 s.
declare -A seen=()
state=
t0=$SECONDS
while :; do
    for d in munged slurmctld slurmd; do
        if [ "$d" != munged ] && grep -q 'fatal:' "$dir/log/$d.log" 2>/dev/null; then
            fail "$d" "$dir/log/$d.log ($(grep -m1 -o 'fatal:.*' "$dir/log/$d.log"))"
        elif [ -n "$(pid_of "$d")" ]; then
            seen[$d]=1
        elif [ -n "${seen[$d]:-}" ] || ((SECONDS - t0 >= 20)) || [ "$d" = munged ]; then
            case $d in
                munged) fail munged "$mdir/munged.log" ;;
                *) fail "$d" "$dir/log/$d.log" ;;
            esac
        fi
    done
    if [ -n "${seen[slurmctld]:-}" ]; then
        state=$(timeout 5 sinfo -h -N -n "$node" -o %T 2>/dev/null)
        # slurmctld reads SchedulerParameters (batch_sched_delay=0) only in
        # its first scheduling cycle, about 3 s after it starts; until then
        # a job waits for that cycle. So wait for it here, once, instead.
        if [ "$state" = idle ]; then
            cycles=$(timeout 5 sdiag 2>/dev/null | awk '/Total cycles:/ { print $3; exit }')
            [ "${cycles:-0}" -ge 1 ] 2>/dev/null && break
        fi
    fi
    ((SECONDS - t0 >= 60)) && break
    sleep 0.5
done
if [ "$state" != idle ]; then
    if [ -z "$(timeout 5 sinfo -h -o %T 2>/dev/null)" ]; then
        fail slurmctld "$dir/log/slurmctld.log (sinfo got no answer within 60 s)"
    fi
    fail slurmd "$dir/log/slurmd.log (node $node is '${state:-?}', not idle, after 60 s)"
fi

printf 'export SLURM_CONF=%q\n' "$conf" | tee "$dir/env"
