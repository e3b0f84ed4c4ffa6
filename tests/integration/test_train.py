"""End-to-end training: determinism, resume exactness (also after SIGKILL), 1 vs 2 devices,
no recompilation, non-finite losses, config validation, and a short learning test."""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest

from arenax.curricula import ACCELConfig, Curriculum, PairedConfig, PLRConfig, TeacherConfig
from arenax.envs.maze.family import MazeConfig
from arenax.training import (
    ConfigError,
    EvalConfig,
    ModelConfig,
    NonFiniteLoss,
    PPOConfig,
    TeamConfig,
    TrainConfig,
    train,
    validate,
)
from arenax.training.build import make_curriculum
from arenax.training.checkpoint import Checkpointer
from arenax.training.parallel import jit_init, make_chunk, make_mesh, replicate
from arenax.training.prepare import load_saved_config
from helpers import assert_same, default_codegen_env, learning_rows


def student(**network: object) -> dict[str, TeamConfig]:
    """The maze's team: the student network (with ``network`` changed) and the maze PPO."""
    return {"agent": TeamConfig(network=ModelConfig(**network), learner=PPOConfig())}


def agent_ppo(**ppo: object) -> dict[str, TeamConfig]:
    return {"agent": TeamConfig(network=ModelConfig(), learner=PPOConfig(**ppo))}


TINY = TrainConfig(
    env=MazeConfig(height=5, width=5, n_walls=4, max_steps=20, normalize_obs=True),
    teams=student(hidden=16),
    n_envs=4,
    n_steps=16,
    total_steps=4 * 16 * 6,  # 6 cycles
    chunk=3,
    checkpoint_every=3,
    archive_every=0,
    eval=EvalConfig(every=0),
    progress=False,
    tensorboard=False,
)


def tiny(tmp_path: Path, **changes: object) -> TrainConfig:
    return dataclasses.replace(TINY, out_dir=tmp_path, **changes)


def read_jsonl(path: Path) -> list[dict]:
    return learning_rows([json.loads(x) for x in path.read_text().splitlines() if x.strip()])


def params_of(run_dir: Path, cfg: TrainConfig) -> list[np.ndarray]:
    abstract = jax.eval_shape(make_curriculum(cfg).init, jax.random.key(cfg.seed))
    ck = Checkpointer(run_dir)
    state, _ = ck.restore(abstract)
    ck.close()
    return [np.asarray(x) for x in jax.tree.leaves(state.learner)]


@pytest.mark.slow
def test_same_seed_same_metrics_and_resume_is_bitwise_exact(tmp_path: Path) -> None:
    full = train(tiny(tmp_path, name="full"))
    again = train(tiny(tmp_path, name="again"))
    assert_same(learning_rows(full.rows), learning_rows(again.rows))
    other = train(tiny(tmp_path, name="other", seed=1))
    assert learning_rows(other.rows) != learning_rows(full.rows)

    half = tiny(tmp_path, name="half", total_steps=TINY.total_steps // 2)
    train(half)
    resumed = train(tiny(tmp_path, name="ignored"), resume=tmp_path / "half")
    assert resumed.rows[0]["cycle"] == 4
    assert_same(read_jsonl(tmp_path / "half" / "metrics.jsonl"), learning_rows(full.rows))
    for a, b in zip(
        params_of(tmp_path / "half", TINY), params_of(tmp_path / "full", TINY), strict=True
    ):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_resume_after_sigkill_is_bitwise_exact(tmp_path: Path) -> None:
    cycles = 40
    total = TINY.steps_per_cycle * cycles
    cfg = tiny(tmp_path, name="ref", total_steps=total, chunk=5, checkpoint_every=5)
    # every run in a command of its own, compiled as a user's would be (helpers)
    env = default_codegen_env()

    def command(name: str, chunk: int) -> list[str]:
        """`arenax train` at the shapes of `TINY`."""
        return [
            sys.executable, "-m", "arenax.cli", "train", "maze-dr", "--env.height", "5",
            "--env.width", "5", "--env.n-walls", "4", "--env.max-steps", "20", "--agent.hidden",
            "16", "--n-envs", "4", "--n-steps", "16", "--total-steps", str(total), "--chunk",
            str(chunk), "--checkpoint-every", str(chunk), "--archive-every", "0", "--eval.every",
            "0", "--no-progress", "--no-tensorboard", "--out-dir", str(tmp_path), "--name", name,
        ]  # fmt: skip

    ref = subprocess.run(command("ref", 5), env=env, capture_output=True, text=True, timeout=300)
    assert ref.returncode == 0, ref.stderr[-2000:]
    # the command trains `TINY` (its output switches and the unused evaluation suite aside)
    saved = load_saved_config(tmp_path / "ref")
    assert saved.devices == 1  # devices="auto" as the suite sets it (ARENAX_DEVICES=1), saved
    assert dataclasses.replace(saved, tensorboard=False, progress=False, eval=cfg.eval,
                               devices=cfg.devices) == cfg  # fmt: skip
    args = command("killed", 1)
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ckdir = tmp_path / "killed" / "checkpoints"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        steps = (
            [int(p.name) for p in ckdir.glob("[0-9]*") if p.name.isdigit()]
            if ckdir.exists()
            else []
        )
        if steps and max(steps) >= 3:
            break
        time.sleep(0.05)
    assert proc.poll() is None, (
        f"run ended before it could be killed: {proc.stderr.read().decode()[-2000:]}"
    )
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = Checkpointer(tmp_path / "killed").latest()
    assert done is not None and done < cycles
    out = subprocess.run(
        [sys.executable, "-m", "arenax.cli", "resume", str(tmp_path / "killed"), "--no-progress"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"resumed {tmp_path / 'killed'} at cycle" in " ".join(out.stdout.split())
    # chunks of 1 cycle (killed run) and of 5 (reference) give the same numbers
    assert_same(
        read_jsonl(tmp_path / "killed" / "metrics.jsonl"),
        read_jsonl(tmp_path / "ref" / "metrics.jsonl"),
    )
    for a, b in zip(
        params_of(tmp_path / "killed", cfg), params_of(tmp_path / "ref", cfg), strict=True
    ):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_one_and_two_devices_agree(tmp_path: Path) -> None:
    assert len(jax.devices()) >= 2, "conftest sets two host devices"
    one = train(tiny(tmp_path, name="one", devices=1))
    two = train(tiny(tmp_path, name="two", devices=2))
    for a, b in zip(learning_rows(one.rows), learning_rows(two.rows), strict=True):
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=2e-4, atol=1e-6, err_msg=k)
    la = jax.tree.leaves(jax.device_get(one.state.learner["agent"].params))
    lb = jax.tree.leaves(jax.device_get(two.state.learner["agent"].params))
    for a, b in zip(la, lb, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_second_call_does_not_recompile() -> None:
    algo = make_curriculum(TINY)
    mesh = make_mesh(1)
    fn = make_chunk(algo, mesh, TINY.n_envs, 1)
    state = replicate(algo.init(jax.random.key(0)), mesh)
    state, _ = fn(state)
    state, _ = fn(state)
    assert fn._cache_size() == 1
    leaves = jax.tree.leaves(algo.init(jax.random.key(0)))
    assert not any(getattr(x, "weak_type", False) for x in leaves)


def test_one_program_runs_chunks_of_every_length_up_to_its_own() -> None:
    """A run's chunks, the last and shorter one included, are one program (`up_to`): `n`
    cycles then `m` equal `n + m` at once, and a program of another length runs the same
    cycles bit for bit (a run resumed with another `--chunk` goes on exactly)."""
    algo = make_curriculum(TINY)
    mesh = make_mesh(1)
    init = jit_init(algo)
    fresh = lambda: replicate(init(jax.random.key(0)), mesh)  # noqa: E731 (donated)
    upto = make_chunk(algo, mesh, TINY.n_envs, 3, up_to=True)
    want_state, want = upto(fresh(), np.int32(3))
    state, one = upto(fresh(), np.int32(1))
    state, two = upto(state, np.int32(2))
    assert upto._cache_size() == 1
    longer_state, longer = make_chunk(algo, mesh, TINY.n_envs, 5, up_to=True)(fresh(), np.int32(3))
    for k, v in want.items():
        np.testing.assert_array_equal(np.concatenate([one[k][:1], two[k][:2]]), v, err_msg=k)
        np.testing.assert_array_equal(longer[k][:3], v, err_msg=k)
        assert not np.any(one[k][1:]) and not np.any(longer[k][3:]), k  # rows past n: zeros
    leaves = [jax.tree.leaves(x) for x in (state, longer_state, want_state)]
    for a, b, c in zip(*leaves, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(c))
        np.testing.assert_array_equal(np.asarray(b), np.asarray(c))
    # and the fixed-length chunk runs the same cycles (up to XLA's rounding of another loop)
    _, fixed = make_chunk(algo, mesh, TINY.n_envs, 3)(fresh())
    for k, v in want.items():
        np.testing.assert_allclose(fixed[k], v, rtol=1e-3, atol=1e-5, err_msg=k)


@pytest.mark.slow
def test_a_run_of_a_program_built_before_reuses_it_and_trains_the_same(tmp_path: Path) -> None:
    """Another seed, budget and folder build the same programs (`arenax.training.programs`):
    the run reuses them and trains bit for bit what a run that builds them anew trains."""
    from arenax.training import programs

    events: list[str] = []
    listener = lambda event, **_: events.append(event)  # noqa: E731
    jax.monitoring.register_event_listener(listener)
    try:
        train(tiny(tmp_path, name="first"))
        before = events.count("/arenax/programs/reused")
        other = dict(seed=3, total_steps=TINY.steps_per_cycle * 4)
        reused = train(tiny(tmp_path, name="reused", **other))
        assert events.count("/arenax/programs/reused") == before + 2  # init and chunk
        programs.clear()
        fresh = train(tiny(tmp_path, name="fresh", **other))
        assert events.count("/arenax/programs/reused") == before + 2
    finally:
        jax.monitoring.unregister_event_listener(listener)
    assert len(reused.rows) == 4
    assert_same(learning_rows(reused.rows), learning_rows(fresh.rows))


@pytest.mark.slow
def test_non_finite_loss_stops_and_keeps_last_good_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import arenax.training.program as program

    real = program.make_curriculum

    @dataclasses.dataclass(frozen=True)
    class Poisoned(Curriculum):  # the contract's defaults for everything but init and cycle
        inner: object

        @property
        def players(self) -> object:
            return self.inner.players

        def init(self, key: jax.Array) -> object:
            return self.inner.init(key)

        def cycle(self, state, key, ids, axis):
            state, m = self.inner.cycle(state, key, ids, axis)
            m["loss"] = jax.numpy.where(state.cycle >= 5, jax.numpy.nan, m["loss"])
            return state, m

    monkeypatch.setattr(program, "make_curriculum", lambda cfg: Poisoned(real(cfg)))
    cfg = tiny(tmp_path, name="nan", chunk=2, checkpoint_every=2)
    with pytest.raises(
        NonFiniteLoss, match=r"non-finite loss at cycle 5.*last good checkpoint \(cycle 4\)"
    ):
        train(cfg)
    assert Checkpointer(tmp_path / "nan").latest() == 4


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"n_envs": 0}, "n_envs=0: must be a positive integer"),
        ({"n_envs": 6, "devices": 4}, "n_envs=6: must be divisible by devices=4"),
        ({"devices": 64}, "devices=64: only"),
        ({"teams": agent_ppo(lr=-1.0)}, "ppo.lr=-1.0: must be in (0.0, 1.0]"),
        ({"teams": agent_ppo(gamma=1.5)}, "ppo.gamma=1.5: must be in [0.0, 1.0]"),
        ({"teams": agent_ppo(minibatches=3)}, "ppo.minibatches=3: must divide"),
        ({"teams": agent_ppo(lr_schedule="cosine")}, "ppo.lr_schedule='cosine': allowed"),
        ({"teams": agent_ppo(epochs=0)}, "ppo.epochs=0"),
        ({"env": MazeConfig(view_size=4)}, "env.view_size=4: must be odd"),
        ({"env": MazeConfig(n_walls=500)}, "env.n_walls=500: must be in [0, 167]"),
        ({"teams": student(cell="rnn")}, "agent.cell='rnn': allowed: lstm, gru, ff, s5"),
        ({"eval": EvalConfig(suite="nope")}, "eval.suite='nope': unknown maze suite"),
        ({"checkpoint_every": 7}, "checkpoint_every=7: must be a multiple of chunk=10"),
        ({"seed": -1}, "seed=-1"),
        ({"curriculum": "pairs"}, "curriculum='pairs': allowed: dr, plr, accel, sfl, paired"),
        (
            {"curriculum": PairedConfig(1, "paired")},
            "paired.n_students=1: score 'paired' needs at least 2",
        ),
        (
            {"curriculum": PairedConfig(teacher=TeacherConfig(ppo=PPOConfig(lr=0.0)))},
            "teacher.ppo.lr=0.0: must be in (0.0, 1.0]",
        ),
        (
            {"curriculum": PairedConfig(teacher=TeacherConfig(n_walls=200))},
            "teacher.n_walls=200: must be in [0, 167]",
        ),
        ({"curriculum": PLRConfig(replay_prob=1.5)}, "plr.replay_prob=1.5: must be in [0.0, 1.0]"),
        ({"curriculum": PLRConfig(score="regret")}, "plr.score='regret': allowed"),
        (
            {"curriculum": PLRConfig(buffer_size=8)},
            "plr.buffer_size=8: must hold at least n_envs=32",
        ),
        (
            {"curriculum": ACCELConfig(mutation_criterion="random")},
            "accel.mutation_criterion='random'",
        ),
    ],
)
def test_config_validation(changes: dict, message: str) -> None:
    cfg = dataclasses.replace(TrainConfig(), **changes)
    with pytest.raises(ConfigError) as exc:
        validate(cfg, available_devices=8)
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


@pytest.mark.slow
def test_resume_refuses_a_different_config(tmp_path: Path) -> None:
    train(tiny(tmp_path, name="run", total_steps=TINY.steps_per_cycle * 3))
    with pytest.raises(ConfigError, match=r"ppo.lr: 0.0001 -> 0.001"):
        teams = {"agent": TeamConfig(network=ModelConfig(hidden=16), learner=PPOConfig(lr=1e-3))}
        train(tiny(tmp_path, teams=teams), resume=tmp_path / "run")
    with pytest.raises(ConfigError, match="exists; pass --resume"):
        train(tiny(tmp_path, name="run"))


@pytest.mark.slow
def test_short_dr_run_learns_small_mazes(tmp_path: Path) -> None:
    """5x5 mazes with 4 walls: the solved rate climbs well above the random policy's."""
    cfg = TrainConfig(
        env=MazeConfig(height=5, width=5, n_walls=4, max_steps=40, normalize_obs=True),
        teams={"agent": TeamConfig(network=ModelConfig(hidden=32),
                                   learner=PPOConfig(lr=1e-3, ent_coef=0.01, gamma=0.99, gae_lambda=0.95))},
        n_envs=16, n_steps=64, total_steps=16 * 64 * 100, chunk=10, checkpoint_every=100,
        archive_every=0, eval=EvalConfig(every=0), out_dir=tmp_path, progress=False,
        tensorboard=False,
    )  # fmt: skip
    rows = train(cfg).rows
    first = np.nanmean([r["solved"] for r in rows[:5]])
    last = np.nanmean([r["solved"] for r in rows[-10:]])
    assert first < 0.45, first  # near-random start
    assert last > 0.8, (first, last)
