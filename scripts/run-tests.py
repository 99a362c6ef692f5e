#!/usr/bin/env python3
"""Every test of the workspace, in two lanes side by side.

The three test binaries that boot QEMU guests (most of the suite's time)
are a queue the guest lane takes from, one after another; every other
test binary, then the doctests, run one after another in the host lane,
which then takes from the same guest queue. Before, cargo ran all of
them in one line, so the two cores sat half idle through every guest's
boot. A binary's tests still run on libtest's threads, as under `cargo
test`; the host lane's binaries never overlap one another, so tests that
change the host (its sysctls, a throwaway Slurm cluster) never meet;
guest binaries change nothing on the host, and at most two run at once
(one per lane), once the host lane is done.

Usage: scripts/run-tests.py CARGO-FLAGS...   (e.g. --locked --features numalab/scx)

Builds with `cargo test --workspace --no-run CARGO-FLAGS`, runs each
binary in its package's directory as cargo would, keeps each one's output
in target/test-logs/NAME.log, prints it whole when the binary fails and
its result lines when it passes, and exits 1 if any failed. Ctrl-C or
SIGTERM stops every binary's process group.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

# Integration tests of the `numalab` package that boot guests, in the
# order the lanes take them. A fresh clone's CI (10 min 36 s, 2026-11-27)
# took vm 176 s, scx 147 s and guest_autonuma 122 s, the host lane's
# binaries 193 s: the guest lane starts vm and, after it, scx, and the
# host lane, done a little later, takes guest_autonuma, the shortest, so
# the two lanes end close together (about 323 s against 340 s with
# guest_autonuma second).
GUEST_TESTS = ["vm", "scx", "guest_autonuma"]

running = {}
lock = threading.Lock()
failed = []


def build(flags):
    """The test executables: (package, target name, kind, path, package dir)."""
    cmd = ["cargo", "test", "--workspace", "--no-run",
           "--message-format=json-render-diagnostics", *flags]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit(f"run-tests: `{' '.join(cmd)}` failed ({out.returncode})")
    found = []
    for line in out.stdout.splitlines():
        try:
            m = json.loads(line)
        except json.JSONDecodeError:
            continue
        if m.get("reason") != "compiler-artifact" or not m.get("executable"):
            continue
        if not m["profile"]["test"]:
            continue
        pkg = m["package_id"]
        name = m["target"]["name"]
        found.append((pkg, name, m["target"]["kind"][0], m["executable"],
                      os.path.dirname(m["manifest_path"])))
    return found


def is_guest(t):
    return t[2] == "test" and t[1] in GUEST_TESTS and t[4].endswith("/crates/numalab")


def run_one(t, lane, logs):
    pkg, name, kind, exe, cwd = t
    log = os.path.join(logs, f"{name}-{kind}.log")
    env = dict(os.environ, CARGO_MANIFEST_DIR=cwd)
    start = time.monotonic()
    with open(log, "w") as f:
        p = subprocess.Popen([exe], cwd=cwd, env=env, stdout=f,
                             stderr=subprocess.STDOUT, start_new_session=True)
        with lock:
            running[p.pid] = p
        rc = p.wait()
        with lock:
            running.pop(p.pid, None)
    took = time.monotonic() - start
    text = open(log, errors="replace").read()
    results = [l for l in text.splitlines() if l.startswith("test result:")]
    with lock:
        state = "ok" if rc == 0 else f"FAILED (exit {rc})"
        print(f"== [{lane}] {name} ({kind}): {state}, {took:.0f} s", flush=True)
        if rc == 0:
            for l in results:
                print(f"   {l}", flush=True)
        else:
            failed.append(name)
            print(text, flush=True)
    return took


def take(queue):
    """The next guest binary nobody has taken, or None."""
    with lock:
        return queue.pop(0) if queue else None


def lane(name, tests, logs, then=None, queue=None):
    """`tests` in turn, then `then`, then guest binaries from `queue`."""
    total = 0.0
    try:
        for t in tests:
            total += run_one(t, name, logs)
        if then:
            total += then()
        while queue is not None and (t := take(queue)) is not None:
            total += run_one(t, name, logs)
    except Exception as e:  # a lane that cannot go on fails the run
        with lock:
            failed.append(f"{name} lane ({e})")
    with lock:
        print(f"== [{name}] lane done: {total:.0f} s", flush=True)


def doctests(flags):
    start = time.monotonic()
    rc = subprocess.run(["cargo", "test", "--workspace", "--doc", *flags]).returncode
    took = time.monotonic() - start
    with lock:
        print(f"== [host] doctests: {'ok' if rc == 0 else 'FAILED'}, {took:.0f} s", flush=True)
        if rc != 0:
            failed.append("doctests")
    return took


def stop(signum, _frame):
    with lock:
        for pid in list(running):
            try:
                os.killpg(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    sys.exit(128 + signum)


def main():
    flags = sys.argv[1:]
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    tests = build(flags)
    guests = [t for t in tests if is_guest(t)]
    names = sorted(t[1] for t in guests)
    if names != sorted(GUEST_TESTS):
        sys.exit(f"run-tests: guest test binaries {names}, expected {sorted(GUEST_TESTS)}")
    # The longest first, so the host lane's binaries run beside it.
    guests.sort(key=lambda t: GUEST_TESTS.index(t[1]))
    host = sorted((t for t in tests if not is_guest(t)), key=lambda t: (t[1], t[2]))
    logs = os.path.join("target", "test-logs")
    os.makedirs(logs, exist_ok=True)
    logs = os.path.abspath(logs)
    print(f"run-tests: {len(guests)} guest and {len(host)} other test binaries, "
          f"in two lanes; output in {logs}", flush=True)
    start = time.monotonic()
    g = threading.Thread(
        target=lane, args=("guest", [], logs), kwargs={"queue": guests}, daemon=True
    )
    g.start()
    lane("host", host, logs, then=lambda: doctests(flags), queue=guests)
    g.join()
    print(f"run-tests: {time.monotonic() - start:.0f} s; "
          + (f"FAILED: {', '.join(failed)}" if failed else "every test binary passed"),
          flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
