"""Named training configurations (`arenax train PRESET`) and the reference UED library's
rules as defaults (`--compat minimax`); their variants (the tiny shapes of tests and
fingerprints, another recurrent core) are in `arenax.train.variants`.

The maze presets mirror the reference UED library's published configurations, whose budget
is 30,000 PPO updates (≈246 M env steps for DR; more for the replay curricula, which also
roll out levels they do not train on). The stories behind the other choices (why 64 × 128
for grid Tag, an unclipped value loss for Tag…) are in `docs/training.md` and
`docs/tag.md`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from arenax.curricula import (
    ACCELConfig,
    DRConfig,
    MaestroConfig,
    PairedConfig,
    PLRConfig,
    PopulationConfig,
    SFLConfig,
    TeacherConfig,
    TeamConfig,
)
from arenax.envs.classic.family import CartPoleConfig, PendulumConfig
from arenax.envs.maze.family import MazeConfig
from arenax.envs.tag import BENCHMARK, GridTagEnv, TagEnv
from arenax.envs.tag.family import GridTagConfig, TagConfig
from arenax.nn.mlp import MLPConfig
from arenax.nn.student import ModelConfig
from arenax.options import fields_of
from arenax.registry import FAMILIES, user_families
from arenax.rl.ddpg import DDPGConfig
from arenax.rl.ppo import PPOConfig
from arenax.train.config import EvalConfig, TrainConfig
from arenax.train.warpdrive_runs import WARPDRIVE_RUNS, warpdrive_preset, warpdrive_team

r = dataclasses.replace

_PLR = PLRConfig(
    score="max_mc",
    replay_prob=0.5,
    buffer_size=4000,
    staleness_coef=0.3,
    temperature=0.3,
    min_fill=0.5,
    robust=True,
)
_ACCEL = ACCELConfig(
    **{
        **fields_of(_PLR),
        "replay_prob": 0.8,
        "staleness_coef": 0.5,
        "new_levels": "empty",
        "n_edits": 20,
    }
)
_PLR_PPO = PPOConfig(lr=3e-4, gamma=0.999, gae_lambda=0.98, ent_coef=0.0)
_PUBLISHED: dict[str, Any] = {"total_steps": None, "total_updates": 30_000}

_MAZE = MazeConfig(n_walls=60, normalize_obs=True)
_MAZE_EVAL = EvalConfig(suite="classic")


def _student(ppo: PPOConfig = PPOConfig()) -> dict[str, TeamConfig]:
    """The maze's one team: the student network and its PPO."""
    return {"agent": TeamConfig(network=ModelConfig(), ppo=ppo)}


def _maze(curriculum: Any, ppo: PPOConfig = PPOConfig()) -> TrainConfig:
    return TrainConfig(
        env=_MAZE, teams=_student(ppo), curriculum=curriculum, eval=_MAZE_EVAL, **_PUBLISHED
    )


def _teams(shared: bool = False, **team: Any) -> dict[str, TeamConfig]:
    """Tag's two teams (one policy each, or one `shared` policy)."""
    one = TeamConfig(policy="shared" if shared else "", **team)
    return {"tagger": one, "runner": one}


_TAG_ARENAS = TagConfig(**{**BENCHMARK, "episode_length": 100, "max_obstacles": 16})
_GRID_ARENAS = GridTagConfig(
    n_taggers=4, size=14, partial=True, random_start=True, max_obstacles=40, view=2
)
_TAG_RUN: dict[str, Any] = dict(
    n_envs=32,
    n_steps=128,
    total_steps=10_000_000,
    chunk=1,
    checkpoint_every=10,
    archive_every=100,
    eval=EvalConfig(every=0),
)
_GRID_RUN: dict[str, Any] = dict(
    n_envs=64,
    n_steps=128,
    total_steps=5_000_000,
    checkpoint_every=50,
    archive_every=500,
    eval=EvalConfig(every=0),
)
_CLASSIC_RUN: dict[str, Any] = dict(
    chunk=10, checkpoint_every=100, archive_every=0, eval=EvalConfig(every=0)
)
_CLASSIC_AGENT = TeamConfig(
    network=MLPConfig(hidden=(64, 64)),
    ppo=PPOConfig(
        lr=3e-4,
        gamma=0.99,
        gae_lambda=0.95,
        ent_coef=0.0,
        epochs=4,
        minibatches=4,
        clip_value=False,
    ),
)
_CONTINUE = DRConfig(episodes="continue")
_TAG_TEAMS = ("tagger", "runner")  # the games' order of teams


def _coplayers(prefix: str, arenas: Any, run: dict[str, Any]) -> dict[str, TrainConfig]:
    """The co-player curricula over a Tag game's `arenas` (DR arenas for self-play, FSP and
    PFSP; MAESTRO's own per-co-player buffers): the runners are the population (their own
    policy, snapshots every 10 of its updates), the taggers learn against it, 4 co-players
    a cycle. Presets `<prefix>-sp`, `-fsp`, `-pfsp`, `-maestro`."""
    curricula = {
        "sp": PopulationConfig(sampling="latest"),
        "fsp": PopulationConfig(),
        "pfsp": PopulationConfig(sampling="pfsp"),
        "maestro": MaestroConfig(**fields_of(r(_PLR, buffer_size=256))),
    }
    return {
        f"{prefix}-{name}": TrainConfig(env=arenas, teams=_teams(), curriculum=c, **run)
        for name, c in curricula.items()
    }


PRESETS: dict[str, TrainConfig] = {
    "maze-dr": _maze(DRConfig()),
    "maze-plr": _maze(_PLR, _PLR_PPO),
    "maze-pplr": _maze(r(_PLR, staleness_coef=0.5, parallel=True), r(_PLR_PPO, gae_lambda=0.95)),
    "maze-accel": _maze(_ACCEL, _PLR_PPO),
    "maze-paccel": _maze(r(_ACCEL, parallel=True), r(_PLR_PPO, lr=1e-4, ent_coef=1e-3)),
    "maze-sfl": _maze(SFLConfig(), _PLR_PPO),
    # the SFL paper's maze configuration (Rutherford et al. 2024, its minigrid-sfl.yaml and
    # ippo-minigrid.yaml): 3e8 training steps of 256 envs x 256 steps = 4,577 updates
    "maze-sfl-paper": r(
        _maze(
            SFLConfig(
                buffer_size=1000,
                sample_levels=25_000,
                episodes=1,
                refresh_every=100,
                replay_fraction=0.5,
                eval_steps=2000,
                counted_episodes=10,
                sample_chunks=5,
            ),
            PPOConfig(
                lr=2.5e-4,
                lr_schedule="linear",
                gamma=0.99,
                gae_lambda=0.95,
                clip_eps=0.04,
                ent_coef=0.0,
                epochs=4,
                minibatches=4,
                bootstrap_truncation=False,
            ),
        ),
        n_envs=256,
        total_updates=4577,
    ),
    "maze-paired": _maze(PairedConfig(2, "paired")),
    "maze-minimax": _maze(PairedConfig(1, "neg_return")),
    "maze-ppaired": _maze(PairedConfig(3, "population")),
    "tag-continuous": TrainConfig(
        env=TagConfig(**BENCHMARK),
        teams=_teams(),
        curriculum=_CONTINUE,
        **{**_TAG_RUN, "n_envs": 100, "n_steps": 100},
    ),
    "tag-plr": TrainConfig(
        env=_TAG_ARENAS, teams=_teams(), curriculum=r(_PLR, buffer_size=1000), **_TAG_RUN
    ),
    "tag-sfl": TrainConfig(env=_TAG_ARENAS, teams=_teams(), curriculum=SFLConfig(), **_TAG_RUN),
    "tag-paired": TrainConfig(
        env=_TAG_ARENAS,
        teams=_teams(),
        curriculum=PairedConfig(2, "paired", teacher=TeacherConfig(n_walls=16)),
        **_TAG_RUN,
    ),
    "tag-grid": TrainConfig(
        env=GridTagConfig(n_taggers=4, size=30, partial=True, random_start=True),
        teams=_teams(shared=True),
        curriculum=_CONTINUE,
        **_GRID_RUN,
    ),
    "tag-continuous-warpdrive": warpdrive_preset(
        "tag_continuous",
        TagConfig,
        TagEnv,
        {t: warpdrive_team(WARPDRIVE_RUNS["tag_continuous"]["policy"][t]) for t in _TAG_TEAMS},
    ),
    "tag-grid-warpdrive": warpdrive_preset(
        "tag_gridworld",
        GridTagConfig,
        GridTagEnv,
        dict.fromkeys(
            ("tagger", "runner"),
            warpdrive_team(WARPDRIVE_RUNS["tag_gridworld"]["policy"]["shared"], "shared"),
        ),
    ),
    "tag-grid-plr": TrainConfig(
        env=_GRID_ARENAS,
        teams=_teams(shared=True),
        curriculum=r(_PLR, buffer_size=1000),
        **_GRID_RUN,
    ),
    "tag-grid-accel": TrainConfig(
        env=_GRID_ARENAS,
        teams=_teams(shared=True),
        curriculum=r(_ACCEL, buffer_size=1000, n_edits=5),
        **_GRID_RUN,
    ),
    "tag-grid-sfl": TrainConfig(
        env=_GRID_ARENAS, teams=_teams(shared=True), curriculum=SFLConfig(), **_GRID_RUN
    ),
    "tag-grid-paired": TrainConfig(
        env=_GRID_ARENAS,
        teams=_teams(),
        curriculum=PairedConfig(2, "paired", teacher=TeacherConfig(n_walls=40)),
        **_GRID_RUN,
    ),
    # co-player curricula over grid and continuous Tag arenas (see `_coplayers`)
    **_coplayers("tag-grid", _GRID_ARENAS, _GRID_RUN),
    **_coplayers("tag", _TAG_ARENAS, _TAG_RUN),
    "cartpole-dr": TrainConfig(
        env=CartPoleConfig(),
        teams={"agent": _CLASSIC_AGENT},
        curriculum=_CONTINUE,
        n_envs=16,
        n_steps=128,
        total_steps=2_000_000,
        **_CLASSIC_RUN,
    ),
    "cartpole-plr": TrainConfig(
        env=CartPoleConfig(),
        teams={"agent": _CLASSIC_AGENT},
        curriculum=r(_PLR, buffer_size=512),
        n_envs=4,
        n_steps=512,
        total_steps=2_000_000,
        **_CLASSIC_RUN,
    ),
    "pendulum-ppo": TrainConfig(
        env=PendulumConfig(levels="default"),
        teams={
            "agent": TeamConfig(
                network=MLPConfig(hidden=(64, 64)),
                ppo=PPOConfig(
                    lr=1e-3,
                    gamma=0.95,
                    gae_lambda=0.95,
                    ent_coef=0.0,
                    epochs=10,
                    minibatches=8,
                    reward_scale=0.1,
                    clip_value=False,
                ),
            )
        },
        curriculum=_CONTINUE,
        n_envs=16,
        n_steps=256,
        total_steps=1_000_000,
        **_CLASSIC_RUN,
    ),
    "pendulum-ddpg": TrainConfig(
        env=PendulumConfig(levels="default"),
        teams={"agent": TeamConfig(ddpg=DDPGConfig())},
        curriculum=DRConfig(),
        n_envs=4,
        n_steps=16,
        total_steps=20_000,
        **{**_CLASSIC_RUN, "chunk": 50, "checkpoint_every": 500},
    ),
}

#: one line per preset (`arenax train --help`)
PRESET_DOCS: dict[str, str] = {
    "maze-dr": "Domain randomisation on 13x13 mazes with 60 walls (the UED papers' DR baseline).",
    "maze-plr": "Robust PLR (PLR⊥): replay high-regret levels (MaxMC); no update on new levels.",
    "maze-pplr": "PLR∥: new and replayed levels side by side in one rollout.",
    "maze-accel": "ACCEL: replay + mutation of replayed levels, starting from empty mazes.",
    "maze-paccel": "ACCEL∥: new, replayed and mutated levels side by side in one rollout.",
    "maze-sfl": "Sampling for learnability: train on DR levels of success rate near 1/2.",
    "maze-sfl-paper": "SFL at the paper's configuration: 25,000 levels per refresh, 256 envs, its PPO.",
    "maze-paired": "PAIRED: a teacher builds levels; regret of protagonist vs antagonist.",
    "maze-minimax": "Minimax adversary: the teacher minimises one student's return.",
    "maze-ppaired": "Population PAIRED: three students, population regret.",
    "tag-continuous": "Continuous Tag, the benchmark game: 10 taggers vs 100 runners.",
    "tag-plr": "Continuous Tag arenas with disc obstacles, robust PLR (PLR⊥) on the taggers' regret.",
    "tag-sfl": "Continuous Tag arenas, SFL: train on arenas where about half the runners are tagged.",
    "tag-paired": "Continuous Tag arenas, PAIRED: a teacher places discs and starts; regret of two tagger policies.",
    "tag-grid": "Grid Tag: 4 taggers and a runner on a 31 x 31 grid, one shared policy.",
    "tag-continuous-warpdrive": "WarpDrive's own continuous Tag experiment (tag_continuous.yaml): A2C per team.",
    "tag-grid-warpdrive": "WarpDrive's own grid Tag experiment (tag_gridworld.yaml): one A2C policy, 2,000 envs.",
    "tag-grid-plr": "Grid Tag arenas with obstacles, robust PLR (PLR⊥) on the taggers' regret.",
    "tag-grid-accel": "Grid Tag arenas, ACCEL: open fields edited into harder arenas.",
    "tag-grid-sfl": "Grid Tag arenas, SFL: train on arenas where taggers tag about half the time.",
    "tag-grid-paired": "Grid Tag arenas, PAIRED: a teacher builds arenas; regret of two tagger policies.",
    "tag-grid-sp": "Grid Tag arenas (DR), self-play: the taggers learn against the runners' live policy.",
    "tag-grid-fsp": "Grid Tag arenas (DR), fictitious self-play: runners drawn from their snapshots and live policy.",
    "tag-grid-pfsp": "Grid Tag arenas (DR), prioritised FSP: runners the taggers score least against first.",
    "tag-grid-maestro": "Grid Tag, MAESTRO: arenas and runner co-players chosen jointly by the taggers' regret.",
    "tag-sp": "Continuous Tag arenas (DR), self-play: the taggers learn against the runners' live policy.",
    "tag-fsp": "Continuous Tag arenas (DR), fictitious self-play: runners drawn from their snapshots and live policy.",
    "tag-pfsp": "Continuous Tag arenas (DR), prioritised FSP: runners the taggers score least against first.",
    "tag-maestro": "Continuous Tag, MAESTRO: disc arenas and runner co-players chosen jointly by the taggers' regret.",
    "cartpole-dr": "CartPole, domain randomisation over its physics (masses, pole, push).",
    "cartpole-plr": "CartPole, robust PLR (PLR⊥) over its physics.",
    "pendulum-ppo": "Pendulum (Gymnasium's physics), PPO with a Gaussian policy.",
    "pendulum-ddpg": "Pendulum (Gymnasium's physics), DDPG (TD3 with --agent.ddpg.td3).",
}


def reference_rules(cfg: TrainConfig) -> TrainConfig:
    """`cfg` with the reference UED library's (minimax's) rules wherever arenax's default
    differs: the time limit is terminal for value targets, DR and PAIRED rollouts start
    from the previous cycle's recurrent state, inserted levels inherit the staleness of the
    slot they take, levels age by replay draws only, duplicate mazes ignore the agent's
    direction, replay levels are drawn one at a time, a PLR∥ / ACCEL∥ slot that a new level
    took from a replayed one goes back to it if it scores at least as high, ACCEL∥'s third
    block holds fresh levels when it does not replay, easy / hard mutation picks 4 parents,
    the mutation counter counts mutations, the editor keeps the teacher's cells, the
    teacher's step embedding has no row for the last observation, and the maze networks
    are initialised as minimax's (one orthogonal block per LSTM gate, the policy's last
    layer constant). Budgets and hyperparameters are left as they are."""
    c = cfg.curriculum
    carry = isinstance(c, DRConfig | PairedConfig)
    ppo = {"bootstrap_truncation": False, "carry_over": carry}
    init = {"gate_init": "per_gate", "policy_init": "constant"}

    def team(tc: TeamConfig) -> TeamConfig:
        net = tc.network
        return r(
            tc,
            ppo=r(tc.ppo, **ppo),
            network=r(net, **init) if isinstance(net, ModelConfig) else net,
        )

    teams = {t: team(tc) for t, tc in cfg.teams.items()}
    if isinstance(c, PairedConfig):
        teacher = r(c.teacher, collisions="keep", embed_last_step=False, **init)
        c = r(c, teacher=r(teacher, ppo=r(c.teacher.ppo, **ppo)))
    if isinstance(c, PLRConfig):
        c = r(
            c,
            inserted_staleness="inherit",
            staleness_clock="draws",
            duplicate_ignores=("agent_dir",),
            taken_slot="higher_score",
            sampling="one_at_a_time",
        )
    if isinstance(c, ACCELConfig):
        c = r(c, cold_children="new", mutation_parents=4, mutation_count="mutations")
    return r(cfg, teams=teams, curriculum=c)


def with_compat(cfg: TrainConfig, compat: str = "minimax") -> TrainConfig:
    """`cfg` with `compat`'s rules as its options (`--compat minimax` applies them to
    the preset before the other options on the command line, so those still win)."""
    if compat == "arenax":
        return r(cfg, compat="arenax")
    return r(reference_rules(cfg), compat=compat)


def user_presets() -> dict[str, TrainConfig]:
    """For each registered family `g` (`arenax.register`): `g-dr` and `g-plr`,
    CartPole's presets over its levels (an MLP agent, DR or PLR⊥)."""
    out = {}
    for g in user_families():
        env = FAMILIES[g].options()
        out[f"{g}-dr"] = r(PRESETS["cartpole-dr"], env=env)
        out[f"{g}-plr"] = r(PRESETS["cartpole-plr"], env=env)
    return out


def all_presets() -> dict[str, TrainConfig]:
    """The built-in presets and those of registered families."""
    return {**PRESETS, **user_presets()}
