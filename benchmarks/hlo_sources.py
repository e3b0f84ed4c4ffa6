"""Where a training program's serial operations come from: each `gather`, `scatter`,
`sort`, `while` and `dynamic-slice` of a preset's compiled one-cycle chunk, counted by the
arenax source line that made it.

    python benchmarks/hlo_sources.py [--preset tag-continuous] [--env.n-taggers 10 ...]
        [--ops gather scatter sort] [--gathers dear] [--n-envs 8] [--top 40]

On a TPU each of these runs one batch element after another when its index is per element
(`docs/benchmarks.md`, the TPU section), so a program that should scale with its batch
ought to hold few. XLA's HLO names the JAX call and source line of each operation
(its `metadata`, through the module's stack-frame tables); this prints them grouped by
`file:line (function)` — the innermost frames of arenax's code, `--depth` of them — with
the JAX operation's name, most frequent first. `--gathers dear` compiles the accelerator forms on any machine (as
`$ARENAX_GATHERS=dear`: what a TPU runs); `--n-envs` shrinks the batch (the operations do
not depend on it; the compile does). Counts are of the program compiled here: a TPU's
compiler may fuse or split some, but the source lines are the ones to rewrite.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys

from arenax.benchmarking import SERIAL_OPS as OPS  # (imports JAX; opens no device)

LINE = re.compile(r"^\s*(ROOT\s+)?%\S+\s*=.*?\s(?P<op>" + "|".join(OPS) + r")\(")
FRAME_ID = re.compile(r"stack_frame_id=(?P<id>\d+)")
SOURCE = re.compile(r'source_file="(?P<file>[^"]+)"\s+source_line=(?P<line>\d+)')
NAME = re.compile(r'op_name="(?P<name>[^"]+)"')
ENTRY = re.compile(r"^(?P<id>\d+) (?P<rest>.*)$")


def _short(path: str) -> str:
    return path.split("/arenax/", 1)[-1] if "/arenax/" in path else os.path.basename(path)


def frames(text: str) -> dict[int, list[str]]:
    """`{stack frame id: ["file:line (function)", its caller's, …]}` from the tables an HLO
    module's text holds (`FileNames`, `FunctionNames`, `FileLocations`, `StackFrames`;
    a frame whose parent is itself is the outermost)."""
    tables: dict[str, dict[int, str]] = {}
    current = None
    for raw in text.splitlines():
        if raw in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            current = tables.setdefault(raw, {})
            continue
        m = ENTRY.match(raw) if current is not None else None
        if not m:
            current = None
            continue
        current[int(m.group("id"))] = m.group("rest")
    files, functions = tables.get("FileNames", {}), tables.get("FunctionNames", {})
    locations = {}
    for i, rest in tables.get("FileLocations", {}).items():
        f = dict(re.findall(r"(\w+)=(\d+)", rest))
        path = files.get(int(f.get("file_name_id", 0)), '"?"').strip('"')
        function = functions.get(int(f.get("function_name_id", 0)), '"?"').strip('"')
        locations[i] = f"{_short(path)}:{f.get('line', '?')} ({function})"
    parents, where = {}, {}
    for i, rest in tables.get("StackFrames", {}).items():
        f = dict(re.findall(r"(\w+)=(\d+)", rest))
        where[i] = locations.get(int(f.get("file_location_id", 0)), "?")
        parents[i] = int(f.get("parent_frame_id", i))
    chains = {}
    for i in where:
        chain, j, seen = [], i, set()
        while j in where and j not in seen:
            seen.add(j)
            chain.append(where[j])
            j = parents[j]
        chains[i] = chain
    return chains


def sources(text: str, ops: tuple[str, ...], depth: int = 1) -> collections.Counter:
    """`{(op, source, jax op name): count}` over the HLO text's instructions of `ops`;
    `source` is the innermost `depth` frames of the arenax code that made it."""
    chains = frames(text)
    counts: collections.Counter = collections.Counter()
    for raw in text.splitlines():
        m = LINE.search(raw)
        if not m or m.group("op") not in ops:
            continue
        where = "(no source)"
        frame, source = FRAME_ID.search(raw), SOURCE.search(raw)
        if frame and int(frame.group("id")) in chains:
            where = " ← ".join(chains[int(frame.group("id"))][:depth])
        elif source:
            where = f"{_short(source.group('file'))}:{source.group('line')}"
        name = NAME.search(raw)
        jax_name = name.group("name").rsplit("/", 1)[-1] if name else ""
        counts[(m.group("op"), where, jax_name)] += 1
    return counts


def _fail(message: str) -> None:
    """One `error:` line, exit status 2."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def parse_env_options(extra: list[str]) -> dict[str, str]:
    """`--env.NAME VALUE` pairs (the preset's game options) into `{name: value}`."""
    out: dict[str, str] = {}
    it = iter(extra)
    for flag in it:
        if not flag.startswith("--env."):
            _fail(f"{flag}: only --env.NAME VALUE options are taken")
        value = next(it, None)
        if value is None:
            _fail(f"{flag} needs a value")
        out[flag[len("--env.") :].replace("-", "_")] = value
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="tag-continuous", help="the preset to compile")
    parser.add_argument("--ops", nargs="+", default=["gather", "scatter", "sort"], choices=OPS, metavar="OP",
                        help=f"operations to locate ({', '.join(OPS)})")  # fmt: skip
    parser.add_argument("--gathers", choices=("cheap", "dear", "platform"), default="dear",
                        help="the gather forms to compile ($ARENAX_GATHERS; platform: its own)")  # fmt: skip
    parser.add_argument("--n-envs", type=int, default=8, help="envs of the compiled chunk")
    parser.add_argument("--top", type=int, default=40, help="rows to print")
    parser.add_argument("--depth", type=int, default=2, help="frames of each source shown")
    args, extra = parser.parse_known_args()
    env_options = parse_env_options(extra)
    if min(args.n_envs, args.top, args.depth) < 1:
        parser.exit(2, "error: --n-envs, --top and --depth must be at least 1\n")
    if args.gathers != "platform":
        os.environ["ARENAX_GATHERS"] = args.gathers

    import dataclasses

    import jax

    from arenax.training.parallel import make_chunk
    from arenax.training.presets import PRESETS
    from arenax.training.program import Program

    if args.preset not in PRESETS:
        parser.exit(2, f"error: --preset {args.preset!r}: allowed: {', '.join(PRESETS)}\n")
    cfg = PRESETS[args.preset]
    fields = {f.name: f.type for f in dataclasses.fields(cfg.env)}
    changes = {}
    for name, value in env_options.items():
        if name not in fields:
            flag = "--env." + name.replace("_", "-")
            parser.exit(2, f"error: {flag}: not an option of {type(cfg.env).__name__}\n")
        current, flag = getattr(cfg.env, name), "--env." + name.replace("_", "-")
        kind = type(current) if current is not None else int
        if kind is bool:
            if value.lower() not in ("true", "false"):
                parser.exit(2, f"error: {flag} {value!r}: not true or false\n")
            changes[name] = value.lower() == "true"
            continue
        try:
            changes[name] = kind(value)
        except ValueError:
            parser.exit(2, f"error: {flag} {value!r}: not a number ({kind.__name__})\n")
    cfg = dataclasses.replace(
        cfg, env=dataclasses.replace(cfg.env, **changes), n_envs=args.n_envs, devices=1
    )
    program = Program.build(cfg)
    chunk = make_chunk(program.curriculum, program.mesh, cfg.n_envs, 1)
    text = chunk.lower(program.abstract_state()).compile().as_text()
    counts = sources(text, tuple(args.ops), args.depth)
    totals = collections.Counter()
    for (op, _, _), n in counts.items():
        totals[op] += n
    platform = jax.default_backend()
    print(f"{args.preset} ({cfg.n_envs} envs, one cycle, {platform}, gathers {args.gathers}): "
          + (", ".join(f"{op} {totals[op]}" for op in args.ops if totals[op]) or "none"))  # fmt: skip
    print()
    print("| op | count | source | JAX operation |")
    print("|---|---|---|---|")
    for (op, where, name), n in counts.most_common(args.top):
        print(f"| {op} | {n} | {where} | {name} |")
    if len(counts) > args.top:
        print(f"(… {len(counts) - args.top} more sources: --top)")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None
