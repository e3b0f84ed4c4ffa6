"""Tag against WarpDrive's own code: its ``TagContinuous`` and ``TagGridWorld`` (the
``rl-warp-drive`` wheel's NumPy path, installed by ``make setup`` without its GPU
dependencies) replayed from the same starts with the same actions, every step compared.

The reference runs under NumPy 2 here; WarpDrive was written for NumPy 1, where its action
tables and tagging distance are computed in float64 — they are recomputed that way after
construction. Continuous positions are compared within float tolerance (XLA fuses
multiply-adds and has its own cos/sin, last-bit differences) and each step resynchronises
arenax's continuous state to WarpDrive's, so rounding cannot accumulate; discrete events
(tags, leaving the game, edge hits, neighbour sets, done) must agree exactly unless the
reference itself is within float tolerance of the decision's threshold (counted and
bounded). If the reference cannot be imported the tests fail: they never skip.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from example_envs.tag_continuous.tag_continuous import TagContinuous
from example_envs.tag_gridworld.tag_gridworld import TagGridWorld

from arenax.envs.tag import GridTagEnv, GridTagLevel, TagEnv
from arenax.envs.tag.kernels import pair_distances

TOL = 1e-5  # relative closeness below which a discrete decision may go either way


class Continuous:
    """A WarpDrive ``TagContinuous`` run next to an arenax ``TagEnv`` on one level."""

    def __init__(self, seed: int, **wd_kwargs: object) -> None:
        self.env = TagEnv.from_warpdrive(**dict(wd_kwargs))
        level = self.env.generate(jax.random.key(seed))
        self.wd = TagContinuous(seed=seed, **wd_kwargs)
        wd = self.wd
        # WarpDrive draws which agent ids are taggers; arenax puts taggers first
        self.perm = np.array(sorted(wd.taggers) + sorted(wd.runners))  # arenax i -> wd id
        pos, dirs = np.asarray(level.pos), np.asarray(level.direction)
        wd.starting_location_x = np.zeros(wd.num_agents, np.float32)
        wd.starting_location_y = np.zeros(wd.num_agents, np.float32)
        wd.starting_directions = np.zeros(wd.num_agents, np.float32)
        wd.starting_location_x[self.perm] = pos[:, 0]
        wd.starting_location_y[self.perm] = pos[:, 1]
        wd.starting_directions[self.perm] = dirs
        # NumPy 1 semantics (float64 linspace / product, then float32)
        e = self.env
        wd.acceleration_actions = np.insert(
            np.linspace(np.float64(wd.min_acceleration), np.float64(wd.max_acceleration),
                        e.accel_levels), 0, 0).astype(np.float32)  # fmt: skip
        wd.turn_actions = np.insert(
            np.linspace(np.float64(wd.min_turn), np.float64(wd.max_turn), e.turn_levels), 0, 0
        ).astype(np.float32)
        wd.distance_margin_for_reward = e.tag_margin
        self.level = level
        self.obs_wd = wd.reset()
        self.state = e.reset_state(None, level)
        self.step_fn = jax.jit(e.step_state)
        self.observe_fn = jax.jit(e.observe)
        self.near_ties = 0
        self.tags = 0
        self.edge_hits = 0

    def wd_state(self, key: str) -> np.ndarray:
        return self.wd.global_state[key][self.wd.timestep][self.perm]

    def compare_obs(self, t: int) -> None:
        e, a = self.env, self.env.n_agents
        obs = self.observe_fn(self.state)
        got = np.concatenate([np.asarray(obs["tagger"]), np.asarray(obs["runner"])])
        for i in range(a):
            w = int(self.perm[i])
            ref = np.asarray(self.obs_wd[w], np.float64)
            mine = got[i]
            assert mine.shape == ref.shape, (mine.shape, ref.shape)
            np.testing.assert_allclose(mine[-1], ref[-1], atol=1e-6, err_msg=f"time t={t}")
            if e.k_nearest is None:  # map WarpDrive's column order (its ids) to arenax's
                cols_wd = [x for x in range(a) if x != w]
                order = [cols_wd.index(int(self.perm[j])) for j in range(a) if j != i]
                ref_cols = ref[:-1].reshape(7, a - 1)[:, order]
                np.testing.assert_allclose(mine[:-1].reshape(7, a - 1), ref_cols, atol=2e-5,
                                           err_msg=f"full obs of agent {i} at t={t}")  # fmt: skip
            else:
                k = e.k_nearest
                m_cols, r_cols = mine[:-1].reshape(7, k), ref[:-1].reshape(7, k)
                if np.allclose(m_cols, r_cols, atol=2e-5):
                    continue
                # only a near-tie between neighbours may reorder or swap them
                self.check_near_tie(i, m_cols, r_cols, t)

    def check_near_tie(self, i: int, m_cols: np.ndarray, r_cols: np.ndarray, t: int) -> None:
        diag = math.sqrt(2.0) * float(self.level.arena)
        dm = np.hypot(m_cols[0], m_cols[1]) * diag  # the observed neighbours' distances
        dr = np.hypot(r_cols[0], r_cols[1]) * diag
        pos = np.asarray(self.state.pos, np.float64)
        act = np.asarray(self.state.active)
        d = np.hypot(*(pos - pos[i]).T)
        d = np.sort(d[[j for j in range(len(d)) if j != i and act[j]]])
        kth = d[min(len(d), self.env.k_nearest) - 1]
        nxt = d[self.env.k_nearest] if len(d) > self.env.k_nearest else np.inf
        gaps = np.abs(np.diff(d[: self.env.k_nearest + 1]))
        if np.any(gaps == 0):  # equal distances (agents piled in a corner): the tie goes to
            return  # the lower index, and WarpDrive's indices are a relabelling of arenax's
        boundary = abs(nxt - kth) <= TOL * max(kth, 1e-6)
        inner = np.any(gaps <= TOL * max(kth, 1e-6))
        assert boundary or inner, (
            f"agent {i} at t={t}: neighbours differ without a near-tie\n{dm}\n{dr}\n{d[:12]}"
        )
        self.near_ties += 1

    def step(self, rng: np.random.Generator, t: int) -> bool:
        e, wd, a = self.env, self.wd, self.env.n_agents
        acts = np.stack([rng.integers(0, e.accel_levels + 1, a),
                         rng.integers(0, e.turn_levels + 1, a)], -1).astype(np.int32)  # fmt: skip
        prev = {k: self.wd_state(k) for k in ("loc_x", "loc_y")}
        self.obs_wd, rew_wd, done_wd, _ = wd.step({int(self.perm[i]): acts[i] for i in range(a)})
        action = {"tagger": jnp.asarray(acts[: e.n_taggers]),
                  "runner": jnp.asarray(acts[e.n_taggers :])}  # fmt: skip
        self.state, rew, term, trunc, info = self.step_fn(None, self.state, action)
        s = self.state
        # continuous state within float tolerance
        pos_wd = np.stack([self.wd_state("loc_x"), self.wd_state("loc_y")], -1)
        for name, mine, ref in (("pos", s.pos, pos_wd), ("speed", s.speed, self.wd_state("speed")),
                                ("accel", s.accel, self.wd_state("acceleration"))):  # fmt: skip
            np.testing.assert_allclose(np.asarray(mine), ref, atol=2e-4, err_msg=f"{name} t={t}")
        dir_err = np.abs(np.asarray(s.direction) - self.wd_state("direction"))
        assert np.all(np.minimum(dir_err, 2 * np.pi - dir_err) < 2e-4), f"direction t={t}"
        # in-game flags: WarpDrive's after its tags are arenax's active & ~tagged
        np.testing.assert_array_equal(
            np.asarray(s.in_game), wd.still_in_the_game[self.perm].astype(bool), err_msg=f"t={t}"
        )
        tags = int(info["tagged"])
        self.tags += tags
        # rewards: exact but for an edge hit the reference decides within float tolerance
        r = np.concatenate([np.asarray(rew["tagger"]), np.asarray(rew["runner"])])
        r_wd = np.array([rew_wd[int(self.perm[i])] for i in range(a)])
        bad = ~np.isclose(r, r_wd, atol=1e-5)
        if bad.any():
            speed, dirs = self.wd_state("speed"), self.wd_state("direction")
            ux = prev["loc_x"] + speed * np.cos(dirs)
            uy = prev["loc_y"] + speed * np.sin(dirs)
            edge = np.minimum.reduce([np.abs(ux), np.abs(uy), np.abs(ux - e.arena),
                                      np.abs(uy - e.arena)])  # fmt: skip
            assert np.all(edge[bad] < 1e-4) and np.allclose(
                np.abs(r - r_wd)[bad], abs(e.edge_reward), atol=1e-5
            ), f"rewards t={t}: {r[bad]} vs {r_wd[bad]}"
            self.near_ties += int(bad.sum())
        self.edge_hits += int(np.sum(np.asarray(wd.edge_hit_reward_penalty) != 0))
        assert bool(term | trunc) == bool(done_wd["__all__"]), f"done t={t}"
        assert bool(trunc) == (wd.timestep >= e.episode_length)
        # resynchronise the continuous state (rounding never accumulates)
        self.state = s.replace(
            pos=jnp.asarray(pos_wd, jnp.float32),
            speed=jnp.asarray(self.wd_state("speed"), jnp.float32),
            direction=jnp.asarray(self.wd_state("direction"), jnp.float32),
            accel=jnp.asarray(self.wd_state("acceleration"), jnp.float32),
        )
        self.compare_obs(t)
        return bool(done_wd["__all__"])


CONTINUOUS = {
    # crowded: many tags per step, several by one tagger, full observation
    "crowded-full": dict(num_taggers=3, num_runners=12, grid_length=3.0, episode_length=40,
                         tagging_distance=0.12, edge_hit_penalty=-0.5, step_reward_for_runner=0.01,
                         step_penalty_for_tagger=-0.02, use_full_observation=True),
    # K nearest, runners stay in the game (tagged again and again)
    "stay-knn": dict(num_taggers=2, num_runners=8, grid_length=3.0, episode_length=40,
                     tagging_distance=0.1, runner_exits_game_after_tagged=False,
                     use_full_observation=False, num_other_agents_observed=4),
    # skills, asymmetric heads, edges
    "skills-knn": dict(num_taggers=2, num_runners=6, grid_length=4.0, episode_length=40,
                       tagging_distance=0.08, skill_level_tagger=1.5, skill_level_runner=0.7,
                       max_acceleration=0.5, min_acceleration=-0.3, max_turn=1.0, min_turn=-2.0,
                       num_acceleration_levels=5, num_turn_levels=7, edge_hit_penalty=-1.0,
                       use_full_observation=False, num_other_agents_observed=3),
    # the benchmark configuration: 10 taggers, 100 runners, K = 10
    "benchmark": dict(num_taggers=10, num_runners=100, grid_length=20.0, episode_length=60,
                      tagging_distance=0.02, max_acceleration=0.1, min_acceleration=-0.1,
                      max_turn=2.35, min_turn=-2.35, num_acceleration_levels=20,
                      num_turn_levels=20, tag_reward_for_tagger=10.0,
                      tag_penalty_for_runner=-10.0, use_full_observation=False,
                      num_other_agents_observed=10),
}  # fmt: skip


@pytest.mark.parametrize(
    "case,gathers",
    [(c, "cheap") for c in sorted(CONTINUOUS)] + [("skills-knn", "dear"), ("crowded-full", "dear")],
)
def test_continuous_tag_replays_warpdrive(monkeypatch, case: str, gathers: str) -> None:
    """`gathers="dear"`: the forms arenax compiles for accelerators (the JAX observation, one-hot
    lookups of neighbours and action tables, tags counted by compares), run on the CPU."""
    monkeypatch.setenv("ARENAX_GATHERS", gathers)
    jax.clear_caches()  # the form is chosen when traced: no trace of the other may be reused
    kwargs = CONTINUOUS[case]
    tags = edges = ties = steps = 0
    for seed in range(3):
        run = Continuous(seed, **kwargs)
        run.compare_obs(-1)
        rng = np.random.default_rng(seed)
        for t in range(run.env.episode_length):
            steps += 1
            if run.step(rng, t):
                break
        tags, edges, ties = tags + run.tags, edges + run.edge_hits, ties + run.near_ties
    assert tags > 0, "tags happened and were checked"
    if kwargs.get("edge_hit_penalty"):
        assert edges > 0, "edge hits happened and were checked"
    assert ties <= max(2, steps // 50), f"{ties} near-ties in {steps} steps"


def test_continuous_defaults_are_warpdrives() -> None:
    """Every constructor parameter of TagContinuous maps to arenax, with the same defaults."""
    import inspect

    params = inspect.signature(TagContinuous.__init__).parameters
    defaults = {k: p.default for k, p in params.items() if k not in ("self",)}
    assert TagEnv.from_warpdrive(**defaults) == TagEnv()
    assert TagEnv().k_nearest is None  # use_full_observation=True


def test_broken_rule_is_caught() -> None:
    """The comparison fails when one rule is changed (here: observing after tagging)."""
    run = Continuous(0, **CONTINUOUS["crowded-full"])
    original = run.env.observe

    def after_tagging(state):  # the pre-fix order: tagged runners already out
        return original(state.replace(active=state.active & ~state.tagged))

    run.observe_fn = jax.jit(after_tagging)
    rng = np.random.default_rng(0)
    with pytest.raises(AssertionError):
        for t in range(40):
            if run.step(rng, t):
                break


# ---------------------------------------------------------------------- grid Tag
GRID = {
    "full": dict(num_taggers=3, grid_length=5, episode_length=40),
    "partial": dict(num_taggers=4, grid_length=6, episode_length=40, use_full_observation=False,
                    wall_hit_penalty=0.3, tag_penalty_for_runner=3.0, step_cost_for_tagger=0.02),
}  # fmt: skip


@pytest.mark.parametrize(
    "case,start,gathers",
    [(c, s, "cheap") for c in sorted(GRID) for s in ("fixed", "random")]
    + [("partial", "random", "dear")],
)
def test_grid_tag_replays_warpdrive(monkeypatch, case: str, start: str, gathers: str) -> None:
    """Each step through the batched path (`step_states` on a batch of one); `gathers="dear"`:
    the forms arenax compiles for accelerators (no blocked-cell lookup on an open field, no
    table lookups), run on the CPU."""
    monkeypatch.setenv("ARENAX_GATHERS", gathers)
    jax.clear_caches()  # the form is chosen when traced: no trace of the other may be reused
    kwargs = GRID[case]
    env = GridTagEnv.from_warpdrive(**kwargs)
    if start == "random":
        env = GridTagEnv(
            **{**{f: getattr(env, f) for f in env.__dataclass_fields__}, "random_start": True}
        )
    one = jax.random.split(jax.random.key(0), 1)

    @jax.jit
    def step(key, state, action):
        del key
        out = env.step_states(one, *jax.tree.map(lambda x: x[None], (state, action)))
        return jax.tree.map(lambda x: x[0], out)

    observe = jax.jit(env.observe)
    tags = walls = 0
    for seed in range(8):
        level = env.generate(jax.random.key(seed))
        pos = np.asarray(level.pos)
        wd = TagGridWorld(**kwargs, starting_location_x=pos[:, 0].copy(),
                          starting_location_y=pos[:, 1].copy())  # fmt: skip
        obs_wd = wd.reset()
        state = env.reset_state(None, level)
        rng = np.random.default_rng(seed)
        for t in range(env.episode_length + 1):
            o = observe(state)
            got = np.concatenate([np.asarray(o["tagger"]), np.asarray(o["runner"])])
            ref = np.stack([obs_wd[i] for i in range(env.n_agents)])
            np.testing.assert_allclose(got, ref, atol=1e-6, err_msg=f"obs t={t}")
            if t == env.episode_length:
                break
            acts = rng.integers(0, 5, env.n_agents)
            obs_wd, rew_wd, done_wd, _ = wd.step({i: int(acts[i]) for i in range(env.n_agents)})
            state, rew, term, trunc, _ = step(
                None, state, {"tagger": jnp.asarray(acts[:-1]), "runner": jnp.asarray(acts[-1:])}
            )
            np.testing.assert_array_equal(
                np.asarray(state.pos[:, 0]), wd.global_state["loc_x"][t + 1]
            )
            np.testing.assert_array_equal(
                np.asarray(state.pos[:, 1]), wd.global_state["loc_y"][t + 1]
            )
            r = np.concatenate([np.asarray(rew["tagger"]), np.asarray(rew["runner"])])
            np.testing.assert_allclose(r, [rew_wd[i] for i in range(env.n_agents)], atol=1e-6)
            assert bool(term | trunc) == bool(done_wd["__all__"])
            walls += int(np.any(np.asarray(wd.reward_penalty) != 0))
            if bool(term | trunc):
                tags += int(term)
                break
    assert tags > 0 and walls > 0  # both rules were exercised


def test_grid_defaults_are_warpdrives() -> None:
    import inspect

    params = inspect.signature(TagGridWorld.__init__).parameters
    defaults = {k: p.default for k, p in params.items() if k not in ("self",)}
    assert GridTagEnv.from_warpdrive(**defaults) == GridTagEnv()


def test_partial_observation_nearest_is_euclidean() -> None:
    """Runner at (0, 0), taggers at (3, 3) and (5, 0): WarpDrive shows (3, 3) (squared
    distance 18 < 25), not the L1-nearest (5, 0)."""
    env = GridTagEnv(n_taggers=2, size=10, partial=True)
    s = env.reset_state(None, GridTagLevel.open_field([[3, 3], [5, 0], [0, 0]], 10))
    runner = np.asarray(env.observe(s)["runner"][0])
    np.testing.assert_allclose(runner[2:4], [0.3, 0.3])
    wd = TagGridWorld(num_taggers=2, grid_length=10, use_full_observation=False,
                      starting_location_x=np.array([3, 5, 0]),
                      starting_location_y=np.array([3, 0, 0]))  # fmt: skip
    np.testing.assert_allclose(runner, wd.reset()[2], atol=1e-7)


def test_reward_signs_are_checked() -> None:
    with pytest.raises(ValueError, match=r"tag_penalty=10\.0"):
        TagEnv(tag_penalty=10.0)
    with pytest.raises(ValueError, match=r"tag_reward=-1\.0"):
        TagEnv(tag_reward=-1.0)
    with pytest.raises(ValueError, match=r"tag_penalty=2\.0"):
        GridTagEnv(tag_penalty=2.0)
    assert GridTagEnv().tag_penalty == -2.0  # one convention: penalties are added, <= 0


def test_distances_are_warpdrives_float32() -> None:
    pos = np.random.default_rng(0).random((50, 2), np.float32) * 20
    d = np.asarray(pair_distances(jnp.asarray(pos)))
    ref = np.sqrt(
        (pos[:, None, 0] - pos[None, :, 0]) ** 2 + (pos[:, None, 1] - pos[None, :, 1]) ** 2
    )
    np.testing.assert_allclose(d, ref.astype(np.float32), rtol=2e-7, atol=1e-6)


# ---------------------------------------------------------------------- run configs
@pytest.mark.parametrize(
    ("run", "preset"),
    [("tag_continuous", "tag-continuous-warpdrive"), ("tag_gridworld", "tag-grid-warpdrive")],
)
def test_warpdrive_presets_carry_its_shipped_run_configs(run: str, preset: str) -> None:
    """The presets' source, `WARPDRIVE_RUNS`, equals WarpDrive's own YAML files, and the
    presets say the same: its env, envs and steps per iteration, run length, A2C per policy."""
    import importlib.resources

    import yaml

    from arenax.envs.tag.presets import WARPDRIVE_RUNS
    from arenax.training import validate
    from arenax.training.presets import PRESETS

    text = importlib.resources.files("warp_drive.training") / f"run_configs/{run}.yaml"
    shipped = yaml.safe_load(text.read_text())
    ours = WARPDRIVE_RUNS[run]
    assert ours["env"] == {k: v for k, v in shipped["env"].items() if k != "seed"}
    assert ours["trainer"] == {k: shipped["trainer"][k] for k in ours["trainer"]}
    drop = ("to_train", "model_ckpt_filepath")
    for name, policy in shipped["policy"].items():
        policy = {k: v for k, v in policy.items() if k not in drop}
        policy["model"] = {k: v for k, v in policy["model"].items() if k not in drop}
        assert ours["policy"][name] == policy

    cfg, trainer = PRESETS[preset], shipped["trainer"]
    validate(cfg)  # a preset arenax can run (the teams in the game's order...)
    game = (TagEnv if run == "tag_continuous" else GridTagEnv).from_warpdrive(**shipped["env"])
    assert cfg.family.make(cfg.env) == game
    assert cfg.n_envs == trainer["num_envs"]
    assert cfg.n_envs * cfg.n_steps == trainer["train_batch_size"]
    assert cfg.total_steps == shipped["env"]["episode_length"] * trainer["num_episodes"]
    for team, tc in cfg.teams.items():
        name = team if tc.policy == "" else tc.policy
        p = shipped["policy"][name]
        a = tc.learner
        assert (a.lr, a.gamma, a.vf_coef, a.ent_coef) == (
            p["lr"],
            p["gamma"],
            p["vf_loss_coeff"],
            p["entropy_coeff"],
        )
        assert a.max_grad_norm == (p["max_grad_norm"] if p["clip_grad_norm"] else None)
        assert (a.normalize_returns, a.normalize_advantages) == (
            p["normalize_return"],
            p["normalize_advantage"],
        )
        assert list(tc.network.hidden) == p["model"]["fc_dims"] and tc.network.shared_trunk
