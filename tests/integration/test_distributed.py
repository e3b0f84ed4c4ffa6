"""Many processes on JAX's distributed runtime (``--distributed``): two local CPU processes
train exactly what one process with as many devices trains, only process 0 writes the run
directory, and a two-process run killed with SIGKILL resumes exactly."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arenax.training import train
from arenax.training.logging import read_jsonl
from helpers import (
    CACHE_DIR,
    assert_close,
    assert_same,
    learning_rows,
    tiny_preset,
    xla_flags_without,
)

pytestmark = pytest.mark.slow  # every test here trains

WORKER = Path(__file__).parent / "mp_worker.py"
# the four: one learner, the global level buffer, the teacher, many-agent teams
PRESETS = ("maze-dr", "maze-pplr", "maze-paired", "tag-grid")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def env_with(devices: int) -> dict[str, str]:
    # the suite's codegen flags (conftest), with this process's number of devices
    kept = xla_flags_without("host_platform_device_count")
    flags = " ".join([f"--xla_force_host_platform_device_count={devices}", *kept])
    return {
        **os.environ,
        "XLA_FLAGS": flags,
        "JAX_PLATFORMS": "cpu",
        "ARENAX_CACHE": str(CACHE_DIR),
    }


SPAWNED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _no_process_left() -> Iterator[None]:
    """A failing test leaves no worker behind (its peers would wait for it)."""
    yield
    while SPAWNED:
        p = SPAWNED.pop()
        if p.poll() is None:
            p.kill()
            p.wait()


def spawn(args: list[str], devices: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        args, env=env_with(devices), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    SPAWNED.append(proc)
    return proc


def workers(n: int, per_process: int, out: Path, presets: list[str]) -> list[subprocess.Popen]:
    """``n`` processes of tests/integration/mp_worker.py (``n = 1``: one ordinary process)."""
    port = str(free_port())
    total = str(n * per_process)
    return [
        spawn([sys.executable, str(WORKER), port, str(n), str(i), total, str(out), *presets],
              per_process)
        for i in range(n)
    ]  # fmt: skip


def cli_processes(command: list[str], per_process: int = 1) -> list[subprocess.Popen]:
    """``arenax <command> --distributed`` as processes 0 and 1 of a two-process run."""
    port = free_port()
    return [
        spawn([sys.executable, "-m", "arenax.cli", *command, "--distributed", "--coordinator",
               f"localhost:{port}", "--num-processes", "2", "--process-id", str(i)], per_process)
        for i in range(2)
    ]  # fmt: skip


def finish(procs: list[subprocess.Popen], timeout: float = 600) -> list[str]:
    """Each process's output, once all have exited 0."""
    outs = []
    for p in procs:
        out, _ = p.communicate(timeout=timeout)
        outs.append(out)
    for i, (p, out) in enumerate(zip(procs, outs, strict=True)):
        assert p.returncode == 0, f"process {i} exited {p.returncode}:\n{out[-3000:]}"
    return outs


def rows(run: Path) -> list[dict]:
    return learning_rows(read_jsonl(run / "metrics.jsonl"))


@pytest.mark.parametrize(
    ("per_process", "presets"),
    # two devices in each process: the presets whose state is split over devices (the
    # many-agent rollouts) or global (the level buffer), to keep the suite's time
    [(1, PRESETS), (2, ("maze-pplr", "tag-grid"))],
)
def test_two_processes_train_what_one_process_trains(
    tmp_path: Path, per_process: int, presets: tuple[str, ...]
) -> None:
    total = 2 * per_process
    two = workers(2, per_process, tmp_path / "two", list(presets))
    if total == 2:  # this process has two devices (conftest): the reference runs here
        for preset in presets:
            train(tiny_preset(preset, tmp_path / "one", devices=2))
    else:
        finish(workers(1, total, tmp_path / "one", list(presets)))
    outs = finish(two)
    # process 1 announces itself and leaves the report (and every file) to process 0
    assert "process 1 of 2" in outs[1] and "compiling" not in outs[1]
    assert "compiling" in outs[0]
    for preset in presets:
        a, b = rows(tmp_path / "two" / preset), rows(tmp_path / "one" / preset)
        assert len(a) == 4  # one writer: no row twice
        if total == 2:  # a psum over two values is the same sum in Gloo and in XLA
            assert_same(a, b)
        else:  # four partial sums: Gloo's reduction order may differ from XLA's
            assert_close(a, b, rtol=1e-5, atol=1e-5)
        assert (
            json.loads((tmp_path / "two" / preset / "config.json").read_text())["devices"] == total
        )


def test_two_process_run_killed_with_sigkill_resumes_exactly(tmp_path: Path) -> None:
    cycles = 10
    run = tmp_path / "two" / "maze-pplr"
    procs = workers(2, 1, tmp_path / "two", [f"maze-pplr:{cycles}"])
    reference = train(tiny_preset("maze-pplr", tmp_path / "one", cycles, devices=2))
    deadline = time.time() + 300
    while time.time() < deadline and all(p.poll() is None for p in procs):
        if len(read_jsonl(run / "metrics.jsonl")) >= 3:
            break
        time.sleep(0.1)
    for p in procs:
        p.send_signal(signal.SIGKILL)
        p.wait()
    done = len(read_jsonl(run / "metrics.jsonl"))
    assert 3 <= done < cycles, f"the run was not killed mid-way ({done} rows)"
    outs = finish(cli_processes(["resume", str(run), "--devices", "2", "--no-progress"]))
    assert "resumed" in outs[0]
    assert_same(rows(run), learning_rows(reference.rows))


def test_launch_options_are_checked_before_the_runtime_starts(tmp_path: Path) -> None:
    cases = [
        (["--coordinator", "localhost:1"], "coordinator='localhost:1': needs --distributed"),
        (["--distributed", "--coordinator", "nohost"], "num_processes=None: set it too"),
        (["--distributed", "--coordinator", "h", "--num-processes", "2", "--process-id", "0"],
         "coordinator='h': must be HOST:PORT"),
        (["--distributed", "--coordinator", "h:1", "--num-processes", "2", "--process-id", "2"],
         "process_id=2: must be below num_processes=2"),
    ]  # fmt: skip
    for extra, message in cases:
        out = subprocess.run(
            [sys.executable, "-m", "arenax.cli", "train", "maze-dr", "--out-dir", str(tmp_path),
             *extra], env=env_with(1), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert out.returncode == 2, out.stdout + out.stderr
        assert out.stdout.strip().splitlines()[-1].startswith(f"error: {message}"), out.stdout


def test_importing_arenax_starts_no_backend() -> None:
    """``jax.distributed.initialize`` must come before any backend: importing arenax (and
    building its presets) must not start one."""
    code = (
        "import arenax.cli.train, arenax.interop, arenax.eval.plots\n"
        "arenax.cli.train.presets()\n"
        "from jax._src import xla_bridge\n"
        "print(bool(xla_bridge._backends))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stdout + out.stderr
