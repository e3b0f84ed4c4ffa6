"""Where the test suite's time goes, from a profile the suite wrote.

    ARENAX_TEST_PROFILE=/tmp/prof.jsonl make test        # one JSON line a test (tests/conftest.py)
    python benchmarks/test_time.py /tmp/prof.jsonl [--top 30]

Prints the tests by wall time (set-up included) with the seconds JAX spent tracing, lowering
and compiling in the test's own process, the persistent cache's misses and hits and the
programs a run reused in-process (``arenax.training.programs``: no trace, lower or load), then the
totals by file and over the suite, each worker's busy time and idle tail, and the jitted
functions that took the most JAX time over the suite (`--programs N`). Under
``pytest -n 2`` the two workers share two cores, so a test's seconds are its share of a
loaded machine, not its time alone.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

COLUMNS = ("wall_s", "trace_s", "lower_s", "compile_s", "cache_misses", "cache_hits", "reused")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", type=Path, help="the file ARENAX_TEST_PROFILE named")
    parser.add_argument("--top", type=int, default=30, help="how many tests to list")
    parser.add_argument(
        "--programs", type=int, default=15, help="how many jitted functions to list"
    )
    args = parser.parse_args()
    try:
        rows = [json.loads(line) for line in args.profile.read_text().splitlines() if line]
    except OSError as exc:
        parser.exit(2, f"error: {args.profile}: {exc.strerror}\n")
    except json.JSONDecodeError as exc:
        parser.exit(2, f"error: {args.profile}: not a profile of the suite ({exc.msg})\n")
    if not rows:
        parser.exit(2, f"error: {args.profile}: no tests recorded\n")
    for name in ("top", "programs"):
        if getattr(args, name) < 0:
            parser.exit(2, f"error: {name}={getattr(args, name)}: must be >= 0\n")

    def line(name: str, r: dict) -> str:
        cells = [
            f"{r.get(c, 0):8.1f}" if c.endswith("_s") else f"{r.get(c, 0):7d}" for c in COLUMNS
        ]
        return f"{' '.join(cells)}  {name}"

    head = "  wall_s  trace_s  lower_s compile_s misses    hits  reused  test"
    print(head)
    for r in sorted(rows, key=lambda r: -r["wall_s"])[: args.top]:
        print(line(r["test"], r))
    files: dict[str, dict] = defaultdict(lambda: defaultdict(float))
    for r in rows:
        f = files[r["test"].split("::")[0]]
        for c in COLUMNS:
            f[c] += r.get(c, 0)
    print("\nby file")
    print(head.replace("  test", "  file"))
    for name, f in sorted(files.items(), key=lambda kv: -kv[1]["wall_s"]):
        print(line(name, {c: (int(v) if not c.endswith("_s") else v) for c, v in f.items()}))
    total = {c: sum(r.get(c, 0) for r in rows) for c in COLUMNS}
    print(f"\n{len(rows)} tests")
    print(head.replace("  test", ""))
    print(line("total", total))
    timed = [r for r in rows if "end" in r and "worker" in r]
    if timed:  # profiles written since the rows carry them
        start = min(r["end"] - r["wall_s"] for r in timed)
        finish = max(r["end"] for r in timed)
        print(f"\nby worker (the suite ran {finish - start:.0f} s)")
        for w in sorted({r["worker"] for r in timed}):
            mine = [r for r in timed if r["worker"] == w]
            busy = sum(r["wall_s"] for r in mine)
            idle = finish - max(r["end"] for r in mine)
            print(f"  {w}: {len(mine)} tests, busy {busy:.0f} s, idle at the end {idle:.0f} s")

    programs: dict[str, dict] = defaultdict(lambda: defaultdict(float))
    for r in rows:
        for name, p in r.get("programs", {}).items():  # profiles written since rows carry it
            for k, v in p.items():
                programs[name][k] += v
    if programs and args.programs:
        print(f"\nby jitted function (the {args.programs} that took the most JAX time)")
        print("   jax_s  trace_s  lower_s compile_s compiles  function")
        kinds = ("trace_s", "lower_s", "compile_s")
        totals = {name: sum(p[k] for k in kinds) for name, p in programs.items()}
        for name in sorted(totals, key=totals.__getitem__, reverse=True)[: args.programs]:
            p = programs[name]
            cells = " ".join(f"{p[k]:8.1f}" for k in kinds)
            print(f"{totals[name]:8.1f} {cells} {int(p['compiles']):8d}  {name}")


if __name__ == "__main__":
    main()
