"""Table a profiler trace's device operations by their time (``profile_case.py``'s output).

Needs XProf (``pip install xprof``; not an arenax dependency). Groups the HLO operations of
an ``.xplane.pb`` by their category and by the JAX operation that made them, and prints the
top ones by self time:

    python benchmarks/profile_summary.py outputs/profile [--top 25]
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path


def main(argv: list[str]) -> None:
    import argparse

    p = argparse.ArgumentParser(prog="profile_summary.py", description=__doc__)
    p.add_argument("trace", type=Path, help="an .xplane.pb, or a folder holding one")
    p.add_argument("--top", type=int, default=25)
    a = p.parse_args(argv)
    paths = [a.trace] if a.trace.is_file() else sorted(a.trace.rglob("*.xplane.pb"))
    if not paths:
        raise SystemExit(f"error: no .xplane.pb in {a.trace}")
    try:
        from xprof.convert import raw_to_tool_data
    except ImportError:
        raise SystemExit("error: profile_summary.py needs XProf: pip install xprof") from None
    data, _ = raw_to_tool_data.xspace_to_tool_data([str(paths[-1])], "hlo_stats", {})
    table = json.loads(data)
    cols = [c["label"] if isinstance(c, dict) else c for c in table["cols"]]
    rows = [dict(zip(cols, (c.get("v") if isinstance(c, dict) else c for c in r["c"]),
                     strict=False)) for r in table["rows"]]  # fmt: skip
    total = sum(r["Total self time (us)"] for r in rows)
    print(f"{paths[-1]}: {total / 1e3:.2f} ms of device time in {len(rows)} HLO operations\n")
    for key in ("HLO op category", "Framework op name"):
        sums: dict[str, float] = collections.defaultdict(float)
        counts: dict[str, int] = collections.defaultdict(int)
        for r in rows:
            name = str(r[key]).replace("jit(chunk)/while/body/jit(<lambda>)/", "…/")[-110:]
            sums[name] += r["Total self time (us)"]
            counts[name] += int(r["#Occurrences"])
        print(f"| {key} | self time (ms) | share | occurrences |\n|---|---|---|---|")
        for name, t in sorted(sums.items(), key=lambda kv: -kv[1])[: a.top]:
            print(f"| {name} | {t / 1e3:.3f} | {t / total:.1%} | {counts[name]} |")
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
