"""Join the slice of a run that resumed without its metrics onto the run's folder.

`benchmarks/paper_budget.sh` resumes a long run in 10-minute slices on a lent machine; when
the run folder has outgrown what can be carried there, only its configs and newest
checkpoint travel (see docs/results.md), and the slice comes back holding the rows it wrote
and its checkpoints. This appends each metric file of SLICE (``metrics.jsonl``,
``metrics.csv``, ``eval.jsonl``, ``eval.csv``, in the run folder and in each ``seed*``
folder) to the same file of RUN, after checking that the slice starts where RUN ends (its
first cycle follows RUN's last) and that the CSV columns agree, then replaces RUN's
checkpoints by the slice's. Nothing is written unless every file checks.

    python benchmarks/join_slices.py runs/paper/plr /tmp/slice/plr

``--carry RUN DEST`` writes the other half: RUN reduced to what a resume reads (the
configs and each folder's newest checkpoint) in DEST, small enough to carry to the machine.

    python benchmarks/join_slices.py --carry runs/paper/plr runs/carry/plr
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

FILES = ("metrics.jsonl", "metrics.csv", "eval.jsonl", "eval.csv")


def _cycles(path: Path) -> list[int]:
    """The `cycle` of every row of a metrics or eval file."""
    if path.suffix == ".jsonl":
        return [json.loads(line)["cycle"] for line in path.read_text().splitlines() if line]
    lines = path.read_text().splitlines()
    col = lines[0].split(",").index("cycle")
    return [int(line.split(",")[col]) for line in lines[1:] if line]


def plan(run: Path, part: Path) -> list[tuple[Path, Path]]:
    """`(RUN file, SLICE file)` pairs to join, or `SystemExit` saying what does not fit."""
    folders = [part, *sorted(p for p in part.glob("seed*") if p.is_dir())]
    pairs = []
    for folder in folders:
        target = run / folder.relative_to(part)
        for name in FILES:
            new, old = folder / name, target / name
            if not new.is_file():
                continue
            if not old.is_file():
                raise SystemExit(f"error: {old} is missing (the slice has {new})")
            old_c, new_c = _cycles(old), _cycles(new)
            if not new_c:
                continue
            if old_c and new_c[0] <= old_c[-1]:
                raise SystemExit(
                    f"error: {new} starts at cycle {new_c[0]}, not after {old}'s last ({old_c[-1]})"
                )
            if name == "metrics.jsonl" and old_c and new_c[0] != old_c[-1] + 1:
                raise SystemExit(
                    f"error: {new} starts at cycle {new_c[0]}; {old} ends at {old_c[-1]}"
                )
            if new.suffix == ".csv":
                head_old = old.read_text().split("\n", 1)[0]
                head_new = new.read_text().split("\n", 1)[0]
                if head_old != head_new:
                    raise SystemExit(f"error: {new}'s columns differ from {old}'s")
            pairs.append((old, new))
    if not pairs:
        raise SystemExit(f"error: {part} holds no metric files to join")
    return pairs


def carry(run: Path, dest: Path) -> None:
    """`run` reduced to its configs and each folder's newest checkpoint, in `dest` (which
    must not exist)."""
    if not (run / "config.json").is_file():
        raise SystemExit(f"error: {run}: not a run folder (no config.json)")
    if dest.exists():
        raise SystemExit(f"error: {dest} exists; choose a new folder")
    for folder in [run, *sorted(p for p in run.glob("seed*") if p.is_dir())]:
        target = dest / folder.relative_to(run)
        target.mkdir(parents=True, exist_ok=True)
        if (folder / "config.json").is_file():
            shutil.copy2(folder / "config.json", target / "config.json")
        steps = [p for p in (folder / "checkpoints").glob("*") if p.name.isdigit()]
        if steps:
            newest = max(steps, key=lambda p: int(p.name))
            shutil.copytree(newest, target / "checkpoints" / newest.name)
            print(f"{target}: checkpoint {newest.name}")


def main(argv: list[str]) -> None:
    """`join` or `--carry`; a problem (a folder that does not fit, a path that cannot be
    written) is one `error:` line, exit 2."""
    try:
        _main(argv)
    except SystemExit as exc:
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            raise SystemExit(2) from None
        raise
    except OSError as exc:
        print(f"error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        raise SystemExit(2) from None


def _main(argv: list[str]) -> None:
    if len(argv) == 3 and argv[0] == "--carry":
        carry(Path(argv[1]), Path(argv[2]))
        return
    if len(argv) != 2 or argv[0] in ("-h", "--help"):
        print(__doc__)
        raise SystemExit(0 if argv[:1] in (["-h"], ["--help"]) else 2)
    run, part = Path(argv[0]), Path(argv[1])
    pairs = plan(run, part)
    for old, new in pairs:
        text = new.read_text()
        if new.suffix == ".csv":
            text = text.split("\n", 1)[1]
        with old.open("a") as f:
            f.write(text)
        print(f"{old}: +{len(_cycles(new))} rows, now to cycle {_cycles(old)[-1]}")
    for ckpt in [part / "checkpoints", *part.glob("seed*/checkpoints")]:
        if ckpt.is_dir():
            target = run / ckpt.relative_to(part)
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(ckpt, target)
            print(f"{target}: {', '.join(sorted(p.name for p in ckpt.iterdir()))}")


if __name__ == "__main__":
    main(sys.argv[1:])
