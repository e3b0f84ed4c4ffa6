"""Multi-team PPO on Tag end to end: both presets, resume and device invariance, frozen teams,
reward scaling, learning, and the command line."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax.envs.tag.family import GridTagConfig
from arenax.nn.mlp import MLPConfig
from arenax.rl.rollout import team_rollout
from arenax.training import (
    PRESETS,
    PPOConfig,
    TeamConfig,
    TrainConfig,
    train,
    validate,
)
from arenax.training.build import make_curriculum
from arenax.training.loop import TIMING_COLUMNS
from arenax.training.parallel import jit_init

SMALL_PPO = PPOConfig(lr=3e-4, gamma=0.99, gae_lambda=0.95, ent_coef=0.01, epochs=2, minibatches=2)


def team(
    hidden: tuple[int, ...] = (32, 32), ppo: PPOConfig = SMALL_PPO, **kw: object
) -> TeamConfig:
    """A team of an MLP policy with ``hidden`` layers learning with ``ppo``."""
    return TeamConfig(network=MLPConfig(hidden=hidden), learner=ppo, **kw)


def tiny_tag(tmp_path: Path, preset: str = "tag-continuous", tagger: TeamConfig | None = None,
             runner: TeamConfig | None = None, **changes: object) -> TrainConfig:  # fmt: skip
    cfg = PRESETS[preset]
    shared = team(policy="shared") if preset == "tag-grid" else team()
    if preset == "tag-grid":
        env = dataclasses.replace(cfg.env, n_taggers=2, size=5, episode_length=12)
    else:
        env = dataclasses.replace(cfg.env, n_taggers=2, n_runners=6, k_nearest=3,
                                  episode_length=12, arena=4.0, tag_distance=0.1)  # fmt: skip
    base = dict(
        env=env, teams={"tagger": tagger or shared, "runner": runner or shared}, n_envs=4,
        n_steps=8, total_steps=4 * 8 * 4, chunk=2, checkpoint_every=2, archive_every=0,
        out_dir=tmp_path, progress=False, tensorboard=False,
    )  # fmt: skip
    return dataclasses.replace(cfg, **{**base, **changes})


def learning_rows(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING_COLUMNS} for r in rows]


def assert_same_rows(a: list[dict], b: list[dict]) -> None:
    assert len(a) == len(b)
    for ra, rb in zip(a, b, strict=True):
        assert ra.keys() == rb.keys()
        for k in ra:
            assert ra[k] == rb[k] or (np.isnan(ra[k]) and np.isnan(rb[k])), (ra["cycle"], k)


# ---------------------------------------------------------------- training
@pytest.mark.parametrize("preset", ["tag-continuous", "tag-grid"])
@pytest.mark.slow
def test_presets_train_a_few_cycles(tmp_path: Path, preset: str) -> None:
    cfg = tiny_tag(tmp_path, preset)
    validate(cfg)
    res = train(cfg)
    assert [r["cycle"] for r in res.rows] == [1, 2, 3, 4]
    agents = 8 if preset == "tag-continuous" else 3
    assert res.rows[-1]["env_steps"] == 4 * 4 * 8
    # every agent slot, and the agents in the game (tagged runners leave continuous Tag)
    assert res.rows[-1]["agent_slot_steps"] == 4 * 4 * 8 * agents
    in_game, slots = res.rows[-1]["agent_steps"], res.rows[-1]["agent_slot_steps"]
    assert in_game == slots if preset == "tag-grid" else 0 < in_game <= slots
    names = ["tagger", "runner"] if preset == "tag-continuous" else ["shared"]
    for name in names:
        assert all(np.isfinite(r[f"{name}/loss"]) for r in res.rows)
        assert res.rows[-1][f"{name}/lr"] == pytest.approx(3e-4)
    ended = [r for r in res.rows if r["episodes"] > 0]
    assert ended, "12-step episodes end within 32 steps"
    for r in ended:
        assert r["episode_length"] <= 12 and 0 <= r["tagged"] <= (6 if agents == 8 else 1)
    assert (tmp_path / cfg.run_name / "checkpoints").exists()


@pytest.mark.slow
def test_tag_resume_is_bitwise_exact_with_sharded_envs(tmp_path: Path) -> None:
    """The environments persist between cycles, split over 2 devices: N + resume + N
    cycles equal 2N, and 1 device agrees with 2 (one minibatch: minibatches are shuffled
    per device, so with several the split differs by design)."""
    one = team(ppo=dataclasses.replace(SMALL_PPO, minibatches=1))
    one_mb = dict(tagger=one, runner=one)
    full = train(tiny_tag(tmp_path, name="full", devices=2, **one_mb))
    half = tiny_tag(tmp_path, name="half", devices=2, total_steps=4 * 8 * 2, **one_mb)
    train(half)
    train(tiny_tag(tmp_path, name="x", devices=2, **one_mb), resume=tmp_path / "half")
    rows = [json.loads(x) for x in (tmp_path / "half" / "metrics.jsonl").read_text().splitlines()]
    assert_same_rows(learning_rows(rows), learning_rows(full.rows))
    one = train(tiny_tag(tmp_path, name="one", devices=1, **one_mb))
    for a, b in zip(learning_rows(one.rows), learning_rows(full.rows), strict=True):
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=2e-4, atol=1e-5, err_msg=k)
    for a, b in zip(jax.tree.leaves(jax.device_get(one.state.learner)),
                    jax.tree.leaves(jax.device_get(full.state.learner)), strict=True):  # fmt: skip
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_reward_scale_equals_scaling_the_games_rewards(tmp_path: Path) -> None:
    """``ppo.reward_scale = s`` trains exactly as the same game with every reward multiplied
    by ``s`` (s = 0.5: the products are exact), and is applied nowhere else: the parameters
    agree after two cycles up to XLA's fusion of the product into GAE (last-bit)."""
    ppo = dataclasses.replace(SMALL_PPO, clip_value=False)
    g = dataclasses.replace(PRESETS["tag-grid"].env, n_taggers=2, size=5, episode_length=12)

    def run(name: str, scale: float, game_scale: float) -> dict:
        shared = team(policy="shared", ppo=dataclasses.replace(ppo, reward_scale=scale))
        rewards = {f: getattr(g, f) * game_scale for f in
                   ("tag_reward", "tag_penalty", "tagger_step_reward", "runner_step_reward",
                    "wall_reward")}  # fmt: skip
        cfg = tiny_tag(tmp_path, "tag-grid", name=name, tagger=shared, runner=shared,
                       total_steps=4 * 8 * 2, env=dataclasses.replace(g, **rewards))  # fmt: skip
        return jax.device_get(train(cfg).state.learner["shared"].params)

    scaled_option = run("option", 0.5, 1.0)
    scaled_game = run("game", 1.0, 0.5)
    unscaled = run("plain", 1.0, 1.0)
    for a, b in zip(jax.tree.leaves(scaled_option), jax.tree.leaves(scaled_game), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)
    gap = max(float(np.max(np.abs(a - b))) for a, b in
              zip(jax.tree.leaves(scaled_option), jax.tree.leaves(unscaled), strict=True))  # fmt: skip
    assert gap > 1e-4  # the scale matters


@pytest.mark.slow
def test_frozen_team_keeps_its_parameters(tmp_path: Path) -> None:
    cfg = tiny_tag(tmp_path, runner=team(frozen=True))
    algo = make_curriculum(cfg)
    init = jit_init(algo)(jax.random.key(cfg.seed))
    res = train(cfg)
    after = jax.device_get(res.state.learner)
    for a, b in zip(jax.tree.leaves(init.learner["runner"].params),
                    jax.tree.leaves(after["runner"].params), strict=True):  # fmt: skip
        np.testing.assert_array_equal(a, b)
    before_t = jax.tree.leaves(init.learner["tagger"].params)
    after_t = jax.tree.leaves(after["tagger"].params)
    moved = [not np.array_equal(a, b) for a, b in zip(before_t, after_t, strict=True)]
    assert any(moved)
    assert "runner/loss" not in res.rows[0] and "tagger/loss" in res.rows[0]


def tagging_rate(cfg: TrainConfig, learner: dict, key: jax.Array) -> float:
    """Runners tagged per finished episode over a fixed 64-env, 60-step rollout."""
    algo = make_curriculum(cfg)
    state = jit_init(algo)(jax.random.key(123))
    state = state.replace(learner=learner)
    ids = jnp.arange(cfg.n_envs, dtype=jnp.int32)
    policies, params = algo.team_policies(), algo.team_params(state)
    _, _, ep = team_rollout(
        algo.rollout_env, policies, params, key, state.curriculum["rollout"], 60, ids, False
    )
    done = np.asarray(ep["done"])
    return float(np.sum(np.asarray(ep["sums"]["tagged"]) * done) / max(done.sum(), 1))


@pytest.mark.slow
def test_trained_taggers_tag_more_than_random_taggers(tmp_path: Path) -> None:
    """Grid Tag, one tagger vs a frozen random runner on a 9 x 9 grid: after ≈50 k env
    steps the tagger tags in clearly more episodes than its random initial policy."""
    ppo = PPOConfig(lr=3e-3, gamma=0.95, gae_lambda=0.9, ent_coef=0.01, epochs=4, minibatches=2)
    cfg = dataclasses.replace(
        PRESETS["tag-grid"],
        env=GridTagConfig(n_taggers=1, size=8, episode_length=20, partial=True,
                          random_start=True),
        teams={"tagger": team((64, 64), ppo), "runner": team((64, 64), ppo, frozen=True)},
        n_envs=32, n_steps=32, total_steps=32 * 32 * 50, chunk=10, checkpoint_every=50,
        archive_every=0, out_dir=tmp_path, progress=False, tensorboard=False,
    )  # fmt: skip
    res = train(cfg)
    init = jit_init(make_curriculum(cfg))(jax.random.key(cfg.seed)).learner
    key = jax.random.key(7)
    random_rate = tagging_rate(cfg, init, key)
    trained_rate = tagging_rate(cfg, jax.device_get(res.state.learner), key)
    print(f"tagging rate: random {random_rate:.3f}, trained {trained_rate:.3f}")
    assert trained_rate > random_rate + 0.25, (random_rate, trained_rate)


# ---------------------------------------------------------------- CLI, pictures
@pytest.mark.slow
def test_cli_tag_train_resume_render_plot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    import sys

    from PIL import Image

    from arenax import cli

    def run_cli(*args: str) -> None:
        monkeypatch.setattr(sys, "argv", ["arenax", *args])
        cli.main()

    small = (
        "--env.n-taggers", "2", "--env.size", "5", "--env.episode-length", "10",
        "--tagger.hidden", "16", "16", "--runner.hidden", "16", "16", "--n-envs", "4",
        "--n-steps", "8", "--chunk", "2", "--checkpoint-every", "2", "--no-progress",
        "--no-tensorboard", "--out-dir", str(tmp_path), "--name", "g",
    )  # fmt: skip
    run_cli("train", "tag-grid", *small, "--total-steps", str(4 * 8 * 2))
    run_cli("resume", str(tmp_path / "g"), "--total-steps", str(4 * 8 * 4), "--no-progress")
    rows = [json.loads(x) for x in (tmp_path / "g" / "metrics.jsonl").read_text().splitlines()]
    assert [r["cycle"] for r in rows] == [1, 2, 3, 4] and rows[-1]["agent_steps"] == 4 * 8 * 4 * 3
    gif = tmp_path / "ep.gif"
    run_cli("render", str(tmp_path / "g"), "--out", str(gif))
    with Image.open(gif) as im:
        assert im.n_frames >= 2
    run_cli("render", "--source", "tag-continuous", "--out", str(tmp_path / "rand.gif"))
    assert (tmp_path / "rand.gif").stat().st_size > 1000
    run_cli("plot", str(tmp_path / "g"))
    for name in ("teams", "losses-shared"):
        assert (tmp_path / "g" / "plots" / f"{name}.png").stat().st_size > 1000
    capsys.readouterr()
    # Tag runs are evaluated against trained, random and scripted opponents
    run_cli("eval", str(tmp_path / "g"), "--episodes", "6", "--gif-dir", str(tmp_path / "gifs"))
    out = " ".join(capsys.readouterr().out.split())
    assert "tags/ep" in out and "scripted" in out
    with (tmp_path / "g" / "eval_tag.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["taggers"], r["runners"]) for r in rows] == [
        ("trained", "trained"), ("trained", "random"), ("trained", "scripted"),
        ("random", "trained"), ("scripted", "trained"), ("random", "random"),
    ]  # fmt: skip
    assert all(int(r["episodes"]) == 6 and 0 <= float(r["any_tag"]) <= 1 for r in rows)
    assert len(list((tmp_path / "gifs").glob("*.gif"))) == 6
    self_play = rows[0]  # trained vs trained: the round robin's first cell plays the same
    # cross-play: another run's policies as a driver, and the worst cases over drivers
    run_cli("train", "tag-grid", *small[:-1], "h", "--total-steps", str(4 * 8 * 2))
    capsys.readouterr()
    run_cli("eval", str(tmp_path / "g"), "--episodes", "6", "--opponents", "random",
            "--coplayers", str(tmp_path / "h"))  # fmt: skip
    out = " ".join(capsys.readouterr().out.split())
    with (tmp_path / "g" / "eval_tag.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["taggers"], r["runners"]) for r in rows] == [
        ("trained", "random"), ("trained", "h"), ("random", "trained"), ("h", "trained"),
        ("random", "random"),
    ]  # fmt: skip
    worst = min(float(r["any_tag"]) for r in rows[:2])
    assert f"worst case of the trained taggers over every runner driver: P(tag) {worst:.2f}" in out
    with pytest.raises(SystemExit):  # refused in one line, before loading anything
        run_cli("eval", str(tmp_path / "g"), "--coplayers", str(tmp_path / "nowhere"))
    assert "coplayers=" in capsys.readouterr().out
    # the cross-play round robin: every run's taggers against every run's runners, a
    # matrix that does not depend on which run is named first; its (g, g) cell is the
    # episodes of the plain evaluation's trained-vs-trained matchup, bit for bit
    matrices = []
    for first, other in (("g", "h"), ("h", "g")):
        run_cli("eval", str(tmp_path / first), "--episodes", "6", "--cross-play",
                "--coplayers", str(tmp_path / other))  # fmt: skip
        with (tmp_path / first / "eval_crossplay.csv").open() as f:
            matrices.append(list(csv.DictReader(f)))
        assert (tmp_path / first / "eval_crossplay.png").stat().st_size > 1000
    out = " ".join(capsys.readouterr().out.split())
    assert "win: the taggers win an episode with at least one tag" in out
    assert matrices[0] == matrices[1]
    assert [(r["taggers"], r["runners"]) for r in matrices[0]] == [
        ("g", "g"),
        ("g", "h"),
        ("h", "g"),
        ("h", "h"),
    ]
    for r in matrices[0]:
        assert int(r["episodes"]) == 6
        assert float(r["p_tag_lo"]) <= float(r["p_tag"]) <= float(r["p_tag_hi"])
    with (tmp_path / "g" / "eval_crossplay_matches.csv").open() as f:
        gg = next(iter(csv.DictReader(f)))
    assert {**gg, "taggers": "trained", "runners": "trained"} == self_play
    assert float(matrices[0][0]["p_tag"]) == float(self_play["any_tag"])
    # a run of several seeds: its seeds are members, and the matrix is read by method too
    run_cli("train", "tag-grid", *small[:-1], "s", "--seeds", "2", "--total-steps", str(4 * 8 * 2))
    capsys.readouterr()
    run_cli("eval", str(tmp_path / "g"), "--episodes", "6", "--cross-play",
            "--coplayers", str(tmp_path / "s"))  # fmt: skip
    out = " ".join(capsys.readouterr().out.split())
    with (tmp_path / "g" / "eval_crossplay.csv").open() as f:
        cells = {(r["taggers"], r["runners"]): float(r["p_tag"]) for r in csv.DictReader(f)}
    assert sorted({t for t, _ in cells}) == ["g", "s/seed0", "s/seed1"]
    with (tmp_path / "g" / "eval_crossplay_methods.csv").open() as f:
        methods = {(r["taggers"], r["runners"]): r for r in csv.DictReader(f)}
    assert sorted(methods) == [("g", "g"), ("g", "s"), ("s", "g"), ("s", "s")]
    # every cell has as many episodes on each arena: a method's cell is its members' mean
    seeds = ("s/seed0", "s/seed1")
    ss = np.mean([cells[a, b] for a in seeds for b in seeds])
    assert float(methods["s", "s"]["p_tag"]) == pytest.approx(ss)
    assert float(methods["g", "s"]["p_tag"]) == pytest.approx(
        np.mean([cells["g", b] for b in seeds])
    )
    assert float(methods["g", "g"]["p_tag"]) == pytest.approx(cells["g", "g"])
    assert "by method, as taggers against every run" in out and "s mean" in out
    assert (tmp_path / "g" / "eval_crossplay_methods.png").stat().st_size > 1000
    for bad in (["--cross-play"], ["--cross-play", "--coplayers", str(tmp_path / "h"),
                                   "--gif-dir", str(tmp_path / "gifs")]):  # fmt: skip
        with pytest.raises(SystemExit):
            run_cli("eval", str(tmp_path / "g"), *bad)
    out = " ".join(capsys.readouterr().out.split())
    assert "a round robin needs two runs or more" in out and "not with --cross-play" in out
