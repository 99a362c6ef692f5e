#!/usr/bin/env python3
"""The house rule on function length (docs/architecture.md): no non-test
function over 150 lines, and few over 100.

    scripts/long-functions.py [--max LINES] [--over LINES] [--at-most N] [--list N]

Counts the lines of every function in crates/*/src (test modules, tests/
and benches/ left out) from its `fn` line to its closing brace, and exits
with status 1 when one is longer than --max (150) or more than --at-most
(15) are longer than --over (100). Braces in comments, strings and
character literals are not counted.
"""
import argparse
import pathlib
import re
import sys

FN = re.compile(r"\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")
# A string (with escapes), a raw string r"..", r#".."#, a char literal or a
# line comment: removed before braces are counted.
NOISE = re.compile(r'r#*"(?:.|\n)*?"#*|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])\'|//.*')


def functions(path):
    text = path.read_text()
    lines = text.split("\n")
    end = next((i for i, l in enumerate(lines) if l.startswith("#[cfg(test)]")), len(lines))
    clean = [NOISE.sub("", l) for l in lines[:end]]
    i = 0
    while i < end:
        m = FN.match(clean[i])
        if m and not clean[i].rstrip().endswith(";"):
            depth, started, j = 0, False, i
            while j < end:
                for ch in clean[j]:
                    if ch == "{":
                        depth += 1
                        started = True
                    elif ch == "}":
                        depth -= 1
                if started and depth == 0:
                    break
                j += 1
            yield (j - i + 1, str(path), m.group(6), i + 1)
        i += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max", type=int, default=150)
    ap.add_argument("--over", type=int, default=100)
    ap.add_argument("--at-most", type=int, default=15)
    ap.add_argument("--list", type=int, default=20, help="how many to list")
    a = ap.parse_args()
    root = pathlib.Path(__file__).resolve().parent.parent
    found = []
    for p in sorted(root.glob("crates/**/src/**/*.rs")):
        found.extend(functions(p))
    found.sort(key=lambda f: (-f[0], f[1], f[3]))
    too_long = [f for f in found if f[0] > a.max]
    over = [f for f in found if f[0] > a.over]
    for n, path, name, line in found[: a.list]:
        rel = pathlib.Path(path).relative_to(root)
        print(f"{n:5} {rel}:{line} {name}")
    print(f"over {a.max} lines: {len(too_long)} (at most 0); over {a.over}: {len(over)} (at most {a.at_most})")
    if too_long or len(over) > a.at_most:
        print("long-functions: the house rule is broken (docs/architecture.md)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
