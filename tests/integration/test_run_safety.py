"""Run safety: one writer per run directory, safe overwrites, checkpoints verified with a
fallback, torn logs, Ctrl-C / SIGTERM with a checkpoint and exact resumption, one-line
errors for bad input to every command."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arenax import cli
from arenax.envs.maze.family import MazeConfig
from arenax.training import (
    ConfigError,
    EvalConfig,
    ModelConfig,
    PPOConfig,
    TeamConfig,
    TrainConfig,
    train,
)
from arenax.training.checkpoint import Checkpointer
from arenax.training.logging import read_jsonl
from arenax.training.rundir import RunBusy, RunLock
from helpers import CACHE_DIR, assert_same, learning_rows

TINY = TrainConfig(
    env=MazeConfig(height=5, width=5, n_walls=4, max_steps=20, normalize_obs=True),
    teams={"agent": TeamConfig(network=ModelConfig(hidden=16), learner=PPOConfig())},
    n_envs=4, n_steps=16, total_steps=4 * 16 * 8, chunk=1, checkpoint_every=2,
    archive_every=4, eval=EvalConfig(every=0), progress=False, tensorboard=False,
)  # fmt: skip

CLI_TINY = [
    "--env.height", "5", "--env.width", "5", "--env.n-walls", "4", "--env.max-steps", "20",
    "--agent.hidden", "16", "--n-envs", "4", "--n-steps", "16", "--chunk", "1",
    "--checkpoint-every", "1", "--archive-every", "0", "--eval.every", "0", "--no-progress",
    "--no-tensorboard",
]  # fmt: skip


def tiny(tmp_path: Path, **changes: object) -> TrainConfig:
    return dataclasses.replace(TINY, out_dir=tmp_path, **changes)


def spawn(tmp_path: Path, name: str, cycles: int) -> subprocess.Popen:
    """``arenax train maze-dr`` on the tiny shapes in a child process."""
    args = [
        sys.executable, "-m", "arenax.cli", "train", "maze-dr", *CLI_TINY, "--out-dir",
        str(tmp_path), "--name", name, "--total-steps", str(4 * 16 * cycles),
    ]  # fmt: skip
    env = {**os.environ, "ARENAX_CACHE": str(CACHE_DIR)}
    return subprocess.Popen(
        args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def wait_for_rows(path: Path, rows: int, proc: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if path.exists() and len(read_jsonl(path)) >= rows:
            return
        time.sleep(0.2)
    raise AssertionError(f"{path}: fewer than {rows} rows (exit {proc.poll()})")


# ---------------------------------------------------------------------- one writer
def test_lock_refuses_a_second_writer_and_reclaims_a_dead_ones(tmp_path: Path) -> None:
    run = tmp_path / "r"
    run.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from arenax.training.rundir import RunLock; "
         f"lock = RunLock.acquire({str(run)!r}); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        owner = RunLock.owner(run)
        assert owner is not None and f"pid {holder.pid}" in owner
        with pytest.raises(RunBusy, match=rf"in use by .*pid {holder.pid}"):
            RunLock.acquire(run)
    finally:
        holder.send_signal(signal.SIGKILL)  # dies holding it: the OS frees the lock
        holder.wait()
    assert RunLock.owner(run) is None
    lock = RunLock.acquire(run)  # the dead owner's text is reported as reclaimed
    assert lock.reclaimed is not None and f"pid {holder.pid}" in lock.reclaimed
    lock.release()
    assert RunLock.acquire(run).reclaimed is None  # a clean release leaves no owner


@pytest.mark.slow
def test_live_run_refuses_resume_and_overwrite_then_resumes_after_sigkill(tmp_path: Path) -> None:
    proc = spawn(tmp_path, "live", cycles=400)
    try:
        # checkpoints are written asynchronously: the save of cycle 2 (called before row 3
        # is logged) first waits for cycle 1's, so 3 rows mean a complete checkpoint exists
        wait_for_rows(tmp_path / "live" / "metrics.jsonl", 3, proc)
        with pytest.raises(RunBusy, match=rf"in use by .* pid {proc.pid}"):
            train(tiny(tmp_path), resume=tmp_path / "live")
        with pytest.raises(RunBusy, match="refusing to delete it"):
            train(tiny(tmp_path, name="live", overwrite=True))
        assert (tmp_path / "live" / "metrics.jsonl").exists()  # nothing was deleted
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    # the dead process's lock is stale: resuming reclaims it (and runs two more cycles)
    ck = Checkpointer(tmp_path / "live")
    done = ck.latest()
    ck.close()
    res = train(tiny(tmp_path, total_steps=4 * 16 * (done + 2)), resume=tmp_path / "live")
    assert [r["cycle"] for r in res.rows] == [done + 1, done + 2]
    assert RunLock.owner(tmp_path / "live") is None


# ---------------------------------------------------------------------- overwrite
def test_overwrite_replaces_only_arenax_runs(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("precious")
    with pytest.raises(ConfigError, match=r"not an arenax run .* refusing to delete it"):
        train(tiny(tmp_path, name="mine", overwrite=True))
    assert (mine / "thesis.tex").read_text() == "precious"
    train(tiny(tmp_path, name="run", total_steps=4 * 16 * 2))
    (tmp_path / "run" / "marker").write_text("old")
    res = train(tiny(tmp_path, name="run", total_steps=4 * 16 * 2, overwrite=True))
    assert res.rows[-1]["cycle"] == 2 and not (tmp_path / "run" / "marker").exists()
    assert not list(tmp_path.glob(".run.overwritten-*"))  # the old run was moved aside, deleted


# ---------------------------------------------------------------------- checkpoints, logs
def _corrupt(step_dir: Path) -> None:
    """Flip bytes in the middle of every array file of a checkpoint."""
    files = [p for p in (step_dir / "state").rglob("*") if p.is_file() and p.stat().st_size > 64]
    assert files, step_dir
    for p in files:
        data = bytearray(p.read_bytes())
        for i in range(len(data) // 3, len(data) // 3 + 16):
            data[i] ^= 0xFF
        p.write_bytes(bytes(data))


@pytest.mark.slow
def test_corrupt_latest_checkpoint_falls_back_to_an_archive(tmp_path: Path) -> None:
    full = train(tiny(tmp_path, name="full"))
    train(tiny(tmp_path, name="half", total_steps=4 * 16 * 6))
    ck = Checkpointer(tmp_path / "half")
    steps = ck.all_steps()
    ck.close()
    assert steps == [4, 6]  # the archive (every 4) and the latest
    _corrupt(tmp_path / "half" / "checkpoints" / "6")
    res = train(tiny(tmp_path), resume=tmp_path / "half")
    assert res.rows[0]["cycle"] == 5  # resumed from the archive of cycle 4
    assert list((tmp_path / "half" / "corrupt_checkpoints").iterdir())
    # the logs read as if the run had never stopped, and equal the uninterrupted run
    rows = read_jsonl(tmp_path / "half" / "metrics.jsonl")
    assert [r["cycle"] for r in rows] == list(range(1, 9))
    assert_same(learning_rows(rows), learning_rows(full.rows))


@pytest.mark.slow
def test_rollback_to_an_older_checkpoint_starts_a_new_branch(tmp_path: Path, capsys) -> None:
    """Resuming a finished run (checkpoints 4 and 8) from checkpoint 4 moves checkpoint 8
    and the logs so far aside (one line), recomputes cycles 5-8 (bitwise the same here:
    same code, same seed), and a later resume continues the new branch, not the old one."""
    full = train(tiny(tmp_path, name="r"))
    capsys.readouterr()
    res = train(tiny(tmp_path), resume=tmp_path / "r", checkpoint=4)
    out = " ".join(capsys.readouterr().out.split())
    assert "rolled back to checkpoint 4: the later checkpoints (8) and the logs so far" in out
    assert [r["cycle"] for r in res.rows] == [5, 6, 7, 8]
    (branch,) = (tmp_path / "r" / "rolled_back").iterdir()
    assert (branch / "checkpoint-8").is_dir()
    assert [r["cycle"] for r in read_jsonl(branch / "metrics.jsonl")] == list(range(1, 9))
    rows = read_jsonl(tmp_path / "r" / "metrics.jsonl")
    assert [r["cycle"] for r in rows] == list(range(1, 9))
    assert_same(learning_rows(rows), learning_rows(full.rows))
    ck = Checkpointer(tmp_path / "r")
    assert ck.all_steps() == [4, 8]
    ck.close()
    assert train(tiny(tmp_path), resume=tmp_path / "r").rows == []  # the branch is complete


@pytest.mark.slow
def test_a_truncated_checkpoint_is_one_line_without_orbax_tracebacks(tmp_path: Path) -> None:
    """Array files of the latest checkpoint emptied (a crash mid-copy, a full disk): the
    resume reports it in one line and falls back; the hundreds of lines of tracebacks of
    the reads Orbax abandons go to the run's checkpoint_errors.log, not the terminal."""
    train(tiny(tmp_path, name="half", total_steps=4 * 16 * 6))
    data = list((tmp_path / "half" / "checkpoints" / "6" / "state").rglob("ocdbt.process_0/d/*"))
    assert data
    for f in data:
        f.write_bytes(b"")
    env = {**os.environ, "ARENAX_CACHE": str(CACHE_DIR)}
    run = tmp_path / "half"
    before = sorted(str(p.relative_to(run)) for p in run.rglob("*"))
    # the readers (`arenax.load_run`, `arenax eval`) fall back as resume does, in one line
    # each, and write nothing into the run (they once printed 45 "Event loop is closed"
    # tracebacks and a raw Orbax error)
    code = f"import arenax; print('cycle', int(arenax.load_run({str(run)!r}).state.cycle))"
    readers = {
        "load_run": [sys.executable, "-c", code],
        "eval": [sys.executable, "-m", "arenax.cli", "eval", str(run), "--suite",
                 "SixteenRooms", "--episodes", "1", "--out", str(tmp_path / "ev.csv")],
    }  # fmt: skip
    for what, argv in readers.items():
        out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
        text = out.stdout + out.stderr
        assert out.returncode == 0, (what, text[-3000:])
        said = " ".join(text.split())
        assert "checkpoint 6 is unreadable" in said, (what, text[:3000])
        assert "reading the older checkpoint 4 instead" in said, (what, text[:3000])
        assert "Traceback" not in text and "Event loop is closed" not in text, text[:3000]
        assert ("cycle 4" in text) if what == "load_run" else ("@ cycle 4" in said), text
        assert len([x for x in text.splitlines() if "warning" in x]) == 2, (what, text)
    assert sorted(str(p.relative_to(run)) for p in run.rglob("*")) == before
    out = subprocess.run(
        [sys.executable, "-m", "arenax.cli", "resume", str(tmp_path / "half"), "--total-steps",
         str(4 * 16 * 8), "--no-progress"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    assert "checkpoint 6 is unreadable" in " ".join(text.split())
    assert "resuming from the older checkpoint 4" in text
    assert "Traceback" not in text and "Event loop is closed" not in text, text[:3000]
    assert len(text.splitlines()) < 20, text[:3000]
    assert (tmp_path / "half" / "checkpoint_errors.log").stat().st_size > 0


def test_every_checkpoint_unreadable_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    train(tiny(tmp_path, name="r", total_steps=4 * 16 * 2, archive_every=0))
    _corrupt(tmp_path / "r" / "checkpoints" / "2")
    before = {p.name: p.read_bytes() for p in (tmp_path / "r").iterdir() if p.is_file()}
    # the details of the failed reads go to the temporary folder (the run is not written):
    # this test's own, not the machine's
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    with pytest.raises(ConfigError, match=r"no readable checkpoint \(2 failed\)") as err:
        train(tiny(tmp_path), resume=tmp_path / "r")
    (log,) = (tmp_path / "tmp").glob("arenax-checkpoint-errors-*.log")
    assert f"details in {log}" in str(err.value)
    assert log.read_text().startswith("checkpoint 2: ")
    # nothing in the run directory was rewritten (config.json, logs) by the failed resume
    after = {p.name: p.read_bytes() for p in (tmp_path / "r").iterdir() if p.is_file()}
    assert {k: v for k, v in after.items() if k != ".lock"} == {
        k: v for k, v in before.items() if k != ".lock"
    }
    with pytest.raises(ConfigError, match=r"checkpoint=7: no such checkpoint \(have: 2\)"):
        train(tiny(tmp_path), resume=tmp_path / "r", checkpoint=7)
    # the readers: the same one line (a CheckpointError), not Orbax's raw error
    import arenax
    from arenax.training.checkpoint import CheckpointError

    with pytest.raises(CheckpointError, match=r"no readable checkpoint \(2 failed\); details in"):
        arenax.load_run(tmp_path / "r").state  # noqa: B018


@pytest.mark.slow
def test_torn_log_line_is_dropped_and_rows_are_not_duplicated(tmp_path: Path, capsys) -> None:
    full = train(tiny(tmp_path, name="full"))
    train(tiny(tmp_path, name="half", total_steps=4 * 16 * 5))
    log = tmp_path / "half" / "metrics.jsonl"
    log.write_text(log.read_text() + '{"cycle": 6, "env_st')  # a crash mid-write
    res = train(tiny(tmp_path), resume=tmp_path / "half")
    assert "metrics.jsonl: dropped its last line" in capsys.readouterr().out
    rows = read_jsonl(log)
    assert [r["cycle"] for r in rows] == list(range(1, 9))
    assert_same(learning_rows(rows), learning_rows(full.rows))
    assert res.rows[0]["cycle"] == 6  # from the checkpoint of cycle 5 (the end of "half")


def test_resume_budget_below_what_was_done_is_refused(tmp_path: Path) -> None:
    train(tiny(tmp_path, name="r", total_steps=4 * 16 * 4, checkpoint_every=2, archive_every=0))
    with pytest.raises(
        ConfigError, match=r"total_steps=64: below the 256 env steps this run has done"
    ):
        train(tiny(tmp_path, total_steps=64), resume=tmp_path / "r")
    files = lambda: {p.name: p.read_bytes() for p in (tmp_path / "r").iterdir() if p.is_file()}  # noqa: E731
    before = files()
    res = train(tiny(tmp_path, total_steps=4 * 16 * 4), resume=tmp_path / "r")
    assert res.rows == []  # the budget is spent: nothing to do, nothing rewritten
    after = files()
    assert {k: v for k, v in after.items() if k != ".lock"} == {
        k: v for k, v in before.items() if k != ".lock"
    }


# ---------------------------------------------------------------------- signals
@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_saves_then_resume_equals_uninterrupted(
    sig: signal.Signals, code: int, tmp_path: Path
) -> None:
    proc = spawn(tmp_path, "sig", cycles=400)
    wait_for_rows(tmp_path / "sig" / "metrics.jsonl", 3, proc)
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == code, out
    assert f"continue with: arenax resume {tmp_path / 'sig'}" in " ".join(out.split())
    assert "Traceback" not in out
    done = len(read_jsonl(tmp_path / "sig" / "metrics.jsonl"))
    assert 3 <= done < 400
    ck = Checkpointer(tmp_path / "sig")
    assert ck.latest() == done  # the stop saved the cycle it reached
    ck.close()
    total = 4 * 16 * (done + 3)
    res = train(tiny(tmp_path, total_steps=total), resume=tmp_path / "sig")
    assert res.rows[0]["cycle"] == done + 1
    ref = train(tiny(tmp_path, name="ref", total_steps=total, checkpoint_every=1, archive_every=0))
    rows = read_jsonl(tmp_path / "sig" / "metrics.jsonl")
    assert_same(learning_rows(rows), learning_rows(ref.rows))


def _signal_masks(pid: int) -> str:
    """A process's blocked, ignored and caught signals and each thread's blocked ones, from
    `/proc` (Linux; SIGINT is bit 2 of each mask), or why not."""
    try:
        main = Path(f"/proc/{pid}/status").read_text().splitlines()
        threads = [
            line.split()[1]
            for t in Path(f"/proc/{pid}/task").iterdir()
            for line in (t / "status").read_text().splitlines()
            if line.startswith("SigBlk:")
        ]
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    keep = [line for line in main if line.startswith(("SigBlk", "SigIgn", "SigCgt", "ShdPnd"))]
    return "; ".join(keep) + f"; threads' SigBlk: {sorted(set(threads))}"


def test_ctrl_c_during_tunes_first_compile_exits_130(tmp_path: Path) -> None:
    """Ctrl-C while `arenax tune` compiles its first rung: exit 130 and one line, not a
    segfault (139) in the interpreter's teardown, nor an error (it said "no batch size
    could be measured")."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "arenax.cli", "tune", "maze-dr", "--tune.max", "64"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    seen = []
    for line in proc.stdout:  # the rung announces its compile before it starts
        seen.append(line)
        if "compiling ..." in line:
            break
    assert any("compiling ..." in line for line in seen), "".join(seen)
    masks = _signal_masks(proc.pid)  # (this test has failed with exit 0 under load: why)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=300)
    out = "".join(seen) + out
    assert proc.returncode == 130, f"{out}\nthe child's signal masks at the Ctrl-C: {masks}"
    assert "interrupted" in out and "Traceback" not in out, out
    assert "no batch size could be measured" not in out, out


# ---------------------------------------------------------------------- bad input
def run_cli(monkeypatch: pytest.MonkeyPatch, capsys, *args: str) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["arenax", *args])
    with pytest.raises(SystemExit) as exc:
        cli.main()
    out = capsys.readouterr()
    return exc.value.code, out.out + out.err


BAD = [
    (["train", "maze-foo"], "unknown preset 'maze-foo'; presets: maze-dr"),
    (["train", "maze-dr", "--n-envs", "0"], "n_envs=0: must be a positive integer"),
    (["train", "maze-dr", "--n-envs", "abc"], "Error parsing --n-envs"),
    (["train", "maze-dr", "--agent.cell", "rnn"], "invalid choice 'rnn' for argument '--agent.cell'"),
    (["train", "maze-dr", "--seed", "-1"], "seed=-1: must be an integer in [0, 2**32)"),
    (["train", "maze-dr", "--devices", "64"], "devices=64: only"),
    (["train", "maze-dr", "--total-steps", "None"], None),  # with the preset's updates: fine
    (["train", "maze-dr", "--total-updates", "None", "--total-steps", "None"],
     "set total_steps or total_updates"),
    (["train", "maze-dr", "--n-envs", "100000000"], "n_envs=100000000: one cycle needs at least"),
    (["train", "maze-dr", "--wandb"], "wandb=True: Weights & Biases is not installed"),
    (["train", "tag-grid", "--env.size", "0"], "env.size=0: must be a positive integer"),
    (["train", "maze-dr", "--agent.hidden", "99999999999999"], "must be a positive integer below 2**31"),
    (["train", "maze-dr", "--env.view-size", "999"], "env.view_size=999: must be at most 27"),
    (["train", "maze-plr", "--plr.buffer-size", "99999999"], "the train state alone needs"),
    (["train", "maze-dr", "--distributed", "--coordinator", "127.0.0.1:99999", "--num-processes",
      "2", "--process-id", "0"], "coordinator='127.0.0.1:99999': the port must be in [1, 65535]"),
    (["train", "maze-dr", "--join-timeout", "0"], "join_timeout=0: must be an integer in [1, 86400]"),
    (["train", "maze-dr", "--name", "dangling"], "dangling is a symbolic link to"),
    (["train", "maze-dr", "--name", "x" * 300], "300 bytes: at most 200 (it names the run folder)"),
    (["resume", "MISSING"], "not a run directory"),
    (["resume", "MISSING", "--total-steps", "-5"], "total_steps=-5: must be a positive integer"),
    (["eval", "MISSING"], "not a run directory"),
    (["eval", "RUN", "--episodes", "0"], "episodes=0: must be an integer in [1, 100000]"),
    (["eval", "RUN", "--suite", "bogus"], "suite='bogus': unknown maze suite"),
    (["eval", "RUN", "--out", "FILE/x.csv"], "out="),
    (["eval", "RUN", "--out", "x.txt"], "must end with .csv"),
    (["eval", "RUN", "--checkpoint", "-1"], "checkpoint=-1: must be an integer >= 0"),
    (["plot", "MISSING"], "not a run directory"),
    (["plot", "RUN", "--window", "-1"], "window=-1: must be an integer >= 0"),
    (["render", "--source", "bogus"], "source='bogus': unknown; allowed:"),
    (["render", "--columns", "0"], "columns=0: must be an integer in [1, 64]"),
    (["render", "--tile", "0"], "tile=0: must be an integer in [1, 128]"),
    (["render", "--n", "0"], "n=0: must be an integer in [1, 1024]"),
    (["render", "--preset", "bogus"], "preset='bogus': allowed: maze-dr"),
    (["render", "--out", "x.jpg"], "out='x.jpg': must end with .png"),
    (["render", "--out", "FILE/g.png"], "is not a folder"),
    (["render", "--buffer"], "buffer=True: needs RUN_DIR"),
    (["render", "--out", "/proc/x.png"], "out='/proc/x.png': /proc is not writable"),
    (["eval", "RUN", "--out", "/proc/x.csv"], "out='/proc/x.csv': /proc is not writable"),
    (["eval", "RUN", "--gif-dir", "/proc/gifs"], "gif_dir='/proc/gifs': /proc is not writable"),
    (["play", "--record", "/proc/x.json"], "record='/proc/x.json': /proc is not writable"),
    (["render", "RUN", "--buffer", "--teacher"], "draw either --buffer or --teacher"),
    (["bench", "--reset", "bogus"], "invalid choice 'bogus' for argument '--reset'"),
    (["bench", "--batches", "0"], "batches=(0,): must be one or more positive integers"),
    (["bench", "--steps", "0"], "steps=0: must be an integer in [1, 100000]"),
    (["list", "--bogus"], "Unrecognized options: --bogus"),
]  # fmt: skip


@pytest.fixture(scope="module")
def a_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    train(dataclasses.replace(TINY, out_dir=root, name="run", total_steps=4 * 16 * 2))
    return root / "run"


@pytest.mark.parametrize(("argv", "message"), BAD)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], message: str | None, a_run: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    subst = {"RUN": str(a_run), "MISSING": str(tmp_path / "missing"), "FILE/x.csv": str(afile / "x.csv"),
             "FILE/g.png": str(afile / "g.png")}  # fmt: skip
    argv = [subst.get(a, a) for a in argv]
    if message is None:  # a valid value: parsing succeeds (stopped before training by --help)
        code, _ = run_cli(monkeypatch, capsys, *argv, "--help")
        assert code == 0
        return
    monkeypatch.chdir(tmp_path)
    code, out = run_cli(
        monkeypatch, capsys, *argv, *(["--out-dir", str(tmp_path)] if argv[0] == "train" else [])
    )
    text = out.strip()
    assert code == 2, text
    assert text.startswith("error:") and "\n" not in text, text
    assert message in " ".join(text.split()), text
    assert "Traceback" not in text
    assert not (tmp_path / "maze-dr").exists() and not list(tmp_path.glob("dr-*"))  # no run dir


def test_a_process_whose_peers_never_join_stops_with_one_line(tmp_path: Path) -> None:
    """Process 0 of 2 started alone: it says where it waits, then stops after
    --join-timeout with a one-line error and exit 2 (not JAX's C++ abort)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = [
        sys.executable, "-m", "arenax.cli", "train", "maze-dr", *CLI_TINY, "--out-dir",
        str(tmp_path), "--distributed", "--coordinator", f"127.0.0.1:{port}", "--num-processes",
        "2", "--process-id", "0", "--join-timeout", "2",
    ]  # fmt: skip
    env = {**os.environ, "ARENAX_CACHE": str(CACHE_DIR)}
    out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stdout + out.stderr
    lines = [ln for ln in (out.stdout + out.stderr).splitlines() if ln.strip()]
    assert f"process 0 of 2: joining the run at 127.0.0.1:{port}" in lines[0]
    assert lines[-1].startswith("error: distributed: not every process joined within 2 s")
    assert "raise --join-timeout" in lines[-1]
    assert "Traceback" not in out.stderr and "Check failure" not in out.stderr


def test_file_system_errors_are_one_line_with_what_to_do(monkeypatch, capsys) -> None:
    """A full disk, a read-only mount or a too-long path met while a command works: one
    line naming the file and what to do, exit 2, no traceback."""
    import errno

    from arenax.cli import os_error_line

    for code, strerror, hint in [
        (errno.ENOSPC, "No space left on device", "the disk is full"),
        (errno.EROFS, "Read-only file system", "choose another --out-dir"),
        (errno.ENAMETOOLONG, "File name too long", "a shorter --name"),
    ]:
        line = os_error_line(OSError(code, strerror, "/runs/r/config.json"))
        assert line.startswith(f"/runs/r/config.json: {strerror}; ") and hint in line

    def full_disk(args: list[str]) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "/runs/r/checkpoints/4")

    monkeypatch.setattr(cli, "command", lambda name: full_disk)
    monkeypatch.setattr(sys, "argv", ["arenax", "train", "maze-dr"])
    with pytest.raises(SystemExit) as exc:
        cli.main()
    out = capsys.readouterr()
    text = (out.out + out.err).strip()
    assert exc.value.code == 2 and "\n" not in text and "Traceback" not in text
    assert text.startswith(
        "error: /runs/r/checkpoints/4: No space left on device; the disk is full"
    )


def test_version_and_help_describe_every_command(capsys) -> None:
    assert subprocess.run([sys.executable, "-m", "arenax.cli", "--version"], capture_output=True,
                          text=True).stdout.startswith("arenax ")  # fmt: skip
    out = subprocess.run([sys.executable, "-m", "arenax.cli", "--help"], capture_output=True,
                         text=True).stdout  # fmt: skip
    for name, (_, _, line) in cli.COMMANDS.items():
        assert f"  {name:<8} {line}" in out, (name, out)
        assert cli.command(name).__doc__, name  # and every command function is documented


@pytest.mark.parametrize("argv", [["--help"], ["--version"], [], ["trian"]])
def test_help_and_a_wrong_command_import_neither_jax_nor_a_family(argv: list[str]) -> None:
    """`arenax --help`, `--version` and an unknown command answer without importing JAX
    or the families (they once took ~3 s of CPU, nearly all of it those imports)."""
    code = (
        "import sys\nfrom arenax.cli import main\ntry:\n    main(sys.argv[1:])\n"
        "except SystemExit:\n    pass\n"
        "print('imported:', sorted(m for m in ('jax', 'numpy', 'arenax.registry', "
        "'arenax.envs') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert "imported: []" in out.stdout, out.stdout + out.stderr


@pytest.mark.parametrize(
    "argv", [["train", "--help"], ["train", "maze-dr", "--help"], ["train", "maze-dr", "--bogus"]]
)
def test_option_help_and_errors_import_neither_the_loop_nor_checkpoints(argv: list[str]) -> None:
    """A preset's help or an option error needs the options (and so JAX, which they are
    defined with) but not the training loop or Orbax (`arenax.training` imported them all:
    ~0.25 s of the ~1.9 s such a command took)."""
    code = (
        "import sys\nfrom arenax.cli import main\ntry:\n    main(sys.argv[1:])\n"
        "except SystemExit:\n    pass\n"
        "print('imported:', sorted(m for m in ('orbax', 'arenax.training.loop', "
        "'arenax.training.checkpoint', 'arenax.training.config') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert "imported: ['arenax.training.config']" in out.stdout, out.stdout + out.stderr


def test_reading_a_run_without_checkpoints_writes_nothing_into_it(
    a_run: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    """`eval` / `render --buffer` of a run folder that has no checkpoint yet: one line, and
    the folder is left as it was (Orbax's manager would create `checkpoints/`)."""
    run = tmp_path / "no-checkpoint"
    run.mkdir()
    shutil.copy(a_run / "config.json", run / "config.json")
    for argv in (["eval", str(run)], ["render", str(run), "--buffer"]):
        code, out = run_cli(monkeypatch, capsys, *argv)
        assert code == 2 and out.strip().startswith("error: no checkpoint in"), out
        assert sorted(p.name for p in run.iterdir()) == ["config.json"]


# ---------------------------------------------------------------------- a full disk
# what Orbax's background write raises when the disk fills (the text of a real run on a
# 3 MB tmpfs), for the test that cannot fill a disk
ENOSPC = (
    'RESOURCE_EXHAUSTED: Error writing "learner.agent.params.Dense_0.kernel/0.0" in OCDBT '
    'database at local file "checkpoints/3.orbax-checkpoint-tmp/state.orbax-checkpoint-tmp/'
    'ocdbt.process_0/": Failed writing: "d/8ea5006b": Failed to write 42674 bytes to file '
    "8: No space left on device [os_error_code='28']"
)


def test_a_full_disk_during_a_save_is_one_line_and_the_run_resumes_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import orbax.checkpoint as ocp

    from arenax.training.checkpoint import CheckpointWriteError

    full = train(tiny(tmp_path, name="full", total_steps=4 * 16 * 6, checkpoint_every=1))
    save = ocp.CheckpointManager.save

    def failing(self: ocp.CheckpointManager, step: int, *args: object, **kw: object) -> bool:
        if step == 3:  # half written, then the disk is full
            (Path(self.directory) / "3.orbax-checkpoint-tmp").mkdir()
            raise ValueError(ENOSPC)
        return save(self, step, *args, **kw)

    monkeypatch.setattr(ocp.CheckpointManager, "save", failing)
    cfg = tiny(tmp_path, name="r", total_steps=4 * 16 * 6, checkpoint_every=1)
    with pytest.raises(CheckpointWriteError) as err:
        train(cfg)
    run = tmp_path / "r"
    assert str(err.value) == (
        f"checkpoint 3 could not be written to {run / 'checkpoints'}: the disk is full (No "
        "space left on device); the last complete checkpoint (2) is intact: free disk space, "
        f"then `arenax resume {run}` (details in {run / 'checkpoint_errors.log'})"
    )
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["2"]  # partial removed
    monkeypatch.setattr(ocp.CheckpointManager, "save", save)  # space freed
    resumed = train(cfg, resume=run)
    assert_same(learning_rows(read_jsonl(run / "metrics.jsonl")), learning_rows(full.rows))
    assert resumed.rows[-1]["cycle"] == 6


def test_the_save_threads_tracebacks_go_to_the_runs_error_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    (tmp_path / "run").mkdir()
    ckpt = Checkpointer(tmp_path / "run", writer=True)
    try:
        raise ValueError(ENOSPC)
    except ValueError:
        logging.getLogger("absl").error(
            "[thread=array_type_handler] _SignalingThread.run() raised an exception: x",
            exc_info=True,
        )
    logging.getLogger("absl").error("another error")
    ckpt.close()
    log = (tmp_path / "run" / "checkpoint_errors.log").read_text()
    assert "_SignalingThread.run() raised" in log and "Traceback" in log and ENOSPC in log
    assert "another error" not in log
    # what reaches the terminal's handlers
    assert "_SignalingThread" not in caplog.text and "another error" in caplog.text


def test_a_closed_event_loop_of_a_failed_save_goes_to_the_runs_error_log(tmp_path: Path) -> None:
    """On a full disk, TensorStore's threads call back into the event loop Orbax's failed
    write closed: the "Event loop is closed" traceback they print (once seen before the
    one-line error, on a 3 MB tmpfs) goes to the run's checkpoint_errors.log. Other
    errors of threads still reach the terminal. (In a process of its own: pytest replaces
    `threading.excepthook` during a test.)"""
    code = f"""
import threading
from pathlib import Path
from arenax.training.checkpoint import Checkpointer

def fail(message):
    raise RuntimeError(message)

ckpt = Checkpointer(Path({str(tmp_path / "run")!r}), writer=True)
for message in ("Event loop is closed", "another failure"):
    t = threading.Thread(target=fail, args=(message,))
    t.start()
    t.join()
ckpt.close()
"""
    (tmp_path / "run").mkdir()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Event loop is closed" not in out.stderr and "another failure" in out.stderr
    assert "Event loop is closed" in (tmp_path / "run" / "checkpoint_errors.log").read_text()
