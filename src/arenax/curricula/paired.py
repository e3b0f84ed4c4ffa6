"""Teacher-based autocurricula: PAIRED, population PAIRED and the minimax adversary.

One cycle, as in the PAIRED paper's loop:

    levels   <- the teacher builds one level per editor env (its whole episode)
    rollouts <- every student (protagonist, antagonist, or a population) plays copies of
                each level for n_steps steps (auto-reset to the same level)
    students <- PPO update of every student on its own rollout
    regret   <- score each level from the students' returns (PAIRED, mean-relative,
                population regret, or the negative return for the minimax adversary)
    teacher  <- the regret is the reward of the teacher's last step; PPO update

Students share one architecture and are stacked along a leading axis and `vmap`-ed, so a
population costs one batched program. Each student and the teacher have their own
optimiser (and learning rate). With `carry_over` in a learner's PPO options (the
reference library's rule) its rollouts start from the recurrent state its previous rollout
ended in, kept in `TeacherState`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Annotated, Any, ClassVar, Literal

import jax
import jax.numpy as jnp
import tyro
from jax.sharding import PartitionSpec

from arenax.collectives import psum
from arenax.curricula.common import (
    Curriculum,
    CurriculumOptions,
    Setup,
    TrainState,
    level_batch_metrics,
)
from arenax.curricula.players import Players
from arenax.curricula.scores import teacher_score
from arenax.envs.editor import EditorOptions
from arenax.envs.wrappers import AutoReplay, EpisodeStats, Wrapper
from arenax.nn.teacher import TeacherNetConfig, TeacherPolicy
from arenax.options import POSITIVE, Problem
from arenax.rl.learner import Learner, LearnerState
from arenax.rl.ppo import PPOConfig
from arenax.rl.rollout import example_obs, rollout, start_rollout
from arenax.struct import pytree_dataclass

#: students each teacher score needs at least
MIN_STUDENTS = {"paired": 2, "mean_relative": 2, "population": 2, "neg_return": 1}


@dataclasses.dataclass(frozen=True)
class TeacherConfig(EditorOptions, TeacherNetConfig):
    """The PAIRED teacher: its editor MDP, its network and its own PPO."""

    ppo: PPOConfig = PPOConfig(lr=1e-4, gamma=0.995, gae_lambda=0.98, ent_coef=0.05)
    """The teacher's PPO (its own learning rate, discounting and entropy bonus)."""


@dataclasses.dataclass(frozen=True)
class PairedConfig(CurriculumOptions):
    """Options of the teacher curricula PAIRED, the minimax adversary and population PAIRED
    (`--paired.*`; the teacher's own options: `--teacher.*`)."""

    KIND: ClassVar[str] = "paired"
    SUMMARY: ClassVar[str] = (
        "PAIRED, the minimax adversary, population PAIRED: a teacher builds the levels"
    )
    carries_over: ClassVar[bool] = True
    #: the teacher's sequential edits do not gain from a split batch (2-core CPU, one
    #: device against two: maze-paired 1,682 / 1,695, maze-minimax 1,053 / 1,016 env steps/s)
    SPLITS_ON_CPU: ClassVar[bool] = False

    n_students: Annotated[int, POSITIVE] = 2
    """Students: 2 for PAIRED (protagonist, antagonist), 1 for the minimax adversary, >= 3
    for population PAIRED. Student 0 is the one evaluated."""
    score: Literal["paired", "mean_relative", "population", "neg_return"] = "paired"
    """Teacher reward: PAIRED regret, mean-relative regret, population regret, or the
    negative return (minimax adversary)."""
    team: str = ""
    """The team whose policy the students are (default: the game's first; Tag: taggers).
    Every other team is played by one policy shared by every student's games."""
    teacher: Annotated[TeacherConfig, tyro.conf.arg(prefix_name=False)] = TeacherConfig()
    """The teacher (`--teacher.*`)."""

    def curriculum(self, s: Setup) -> TeacherCurriculum:
        """The teacher curriculum over the game: the family's `editor` is the teacher's
        MDP; the teacher has its own network and PPO."""
        editor = s.family.need("editor", "PAIRED")(s.game, self.teacher)
        policy = TeacherPolicy.of(self.teacher, editor.action_space().n, editor.episode_length)
        ppo = self.teacher.ppo
        teacher = Learner(policy, ppo, total_updates=s.update_rounds * ppo.epochs * ppo.minibatches)
        return TeacherCurriculum(
            s.players,
            editor,
            teacher,
            self.n_students,
            self.score,
            s.n_envs,
            s.n_steps,
            self.team,
            s.level_metrics(),
        )

    def option_prefix(self, field: str) -> str:
        """The teacher's options are `--teacher.*`."""
        return "/teacher" if field == "teacher" else field

    def steps_per_cycle(self, run: Any) -> int:
        """Every student's steps and the teacher's editing episode, per environment."""
        editor = run.family.need("editor", "PAIRED")(run.game(), self.teacher)
        return run.n_envs * (self.n_students * run.n_steps + editor.episode_length)

    def tiny(self) -> PairedConfig:
        t = self.teacher
        teacher = dataclasses.replace(
            t,
            n_walls=min(4, t.n_walls),
            noise_dim=4,
            conv_filters=8,
            hidden=16,
            head_hidden=8,
            ppo=dataclasses.replace(t.ppo, epochs=2),
        )
        return dataclasses.replace(self, teacher=teacher)

    def reference_rules(self) -> PairedConfig:
        """minimax's teacher: the editor keeps the teacher's cells, its step embedding has
        no row for the last observation, its network is initialised as minimax's (one
        orthogonal block per LSTM gate, the policy's last layer constant), and its PPO
        treats the time limit as terminal and carries its recurrent state over."""
        t = self.teacher
        teacher = dataclasses.replace(
            t,
            collisions="keep",
            embed_last_step=False,
            gate_init="per_gate",
            policy_init="constant",
            ppo=dataclasses.replace(t.ppo, bootstrap_truncation=False, carry_over=True),
        )
        return dataclasses.replace(self, teacher=teacher)

    def with_cell(self, cell: str) -> PairedConfig:
        return dataclasses.replace(self, teacher=dataclasses.replace(self.teacher, cell=cell))

    def problems(self) -> Iterator[Problem]:
        need = MIN_STUDENTS.get(self.score, 1)
        if isinstance(self.n_students, int) and self.n_students < need:
            yield Problem(
                "n_students", self.n_students, f"score {self.score!r} needs at least {need}"
            )

    def run_problems(self, run: Any, game: Any) -> Iterator[Problem]:
        """The rules PAIRED sets on the run (`run`: the training config, duck-typed): the
        family's editor, a student team that learns by a policy of its own, the teacher's
        options as the editor reads them, its minibatches."""
        family, c = run.family, self
        if family.editor is None:
            yield Problem(
                "curriculum",
                "paired",
                f"PAIRED needs the family's editor; family {family.name!r} has none",
            )
            return
        me = c.team or next(iter(run.teams))
        if me not in run.teams:
            yield Problem("paired.team", c.team, f"allowed: {', '.join(run.teams)}")
            return
        policy_of = run.team_policy()
        if run.teams[me].scripted:
            yield Problem(f"{me}.scripted", True, f"paired trains the {me}s: they act by a policy")
        if run.teams[me].frozen:
            yield Problem(f"{me}.frozen", True, f"the {me}s are the teacher's students: they learn")
        for t, name in policy_of.items():
            if t != me and name == policy_of.get(me):
                yield Problem(
                    f"{t}.policy",
                    run.teams[t].policy,
                    f"must differ from the {me}s' policy (the {me}s are the teacher's students)",
                )
        try:  # the editor checks its own options (the wall budget)
            family.editor(game, c.teacher)
        except ValueError as exc:  # "<editor>: <field>=<value> <rule>"
            field, _, rest = str(exc).partition(": ")[2].partition("=")
            rule = rest.partition(" ")[2]
            yield Problem(f"teacher.{field}", getattr(c.teacher, field, rest), rule or str(exc))
        per_device = run.n_envs // run.devices
        if per_device % c.teacher.ppo.minibatches:
            yield Problem(
                "teacher.ppo.minibatches",
                c.teacher.ppo.minibatches,
                f"must divide the environments per device ({per_device})",
            )


@pytree_dataclass
class TeacherState:
    """The curriculum state of PAIRED: the teacher's learner state and the recurrent states
    carried over between cycles (`{}` unless a learner has `carry_over`: then
    `"teacher" (N, ...)` and/or `"students" (n_students, N, ...)`)."""

    learner: LearnerState
    carry: dict[str, Any]

    @property
    def params(self) -> Any:
        """The teacher's parameters."""
        return self.learner.params


@dataclasses.dataclass(frozen=True)
class OneEpisode(Wrapper):
    """No reset: the episode fills the rollout exactly (the teacher's editing episode).
    Adds `info["final_obs"]` like the auto-reset wrappers."""

    def step_state(self, key: jax.Array, state: Any, action: Any) -> Any:
        state, reward, terminated, truncated, info = self.env.step_state(key, state, action)
        return state, reward, terminated, truncated, {**info, "final_obs": self.env.observe(state)}


@dataclasses.dataclass(frozen=True)
class TeacherCurriculum(Curriculum):
    """PAIRED-family curriculum over `players`: the students are policies of `team`
    (stacked on a leading axis and `vmap`-ed, the protagonist first); every other team is
    played by its own policy, shared by every student's games, which learns from the
    protagonist's games unless frozen. One cycle (the module docstring):

        levels   <- the teacher builds one level per env (its whole episode)
        rollouts <- for each student: its team plays with the others (each env replays its
                    level) for n_steps
        students <- PPO of each student on its team's agents
        others   <- PPO of each learning other-team policy on its agents in the
                    protagonist's games
        regret   <- the teacher score from each student's returns on the level (mean over
                    its team's agents; best: the best of its agents')
        teacher  <- the regret is the reward of its last step; PPO update

    Attributes:
        players: the policies and how they act and learn (the students' team's learner is
            every student's).
        editor: the teacher's level-building environment (`decode(state) -> level`).
        teacher: the teacher's PPO learner.
        n_students: 2 for PAIRED, 1 for the minimax adversary, ≥ 3 for population PAIRED.
        score: a `TEACHER_SCORES` name.
        n_envs: levels per cycle (global).
        n_steps: student rollout length.
        team: the students' team (`""`: the first).
        level_metrics: optional `level -> dict` of family metrics to log.
    """

    players: Players
    editor: Any
    teacher: Learner
    n_students: int
    score: str
    n_envs: int
    n_steps: int
    team: str = ""
    level_metrics: Callable[[Any], dict[str, jax.Array]] | None = None

    @property
    def me(self) -> str:
        """The students' team."""
        return self.team or self.players.teams[0]

    @property
    def students(self) -> Learner:
        """Every student's learner (the students' team's)."""
        return self.players.learner(self.me)

    @property
    def policy(self) -> str:
        """The students' policy name (their entry in the train state)."""
        return self.players.team_policy[self.me]

    @property
    def others(self) -> dict[str, str]:
        """`{team: policy name}` of every other team."""
        return {t: p for t, p in self.players.team_policy.items() if t != self.me}

    @property
    def progress(self) -> dict[str, str]:
        """The protagonist's return and the regret (and, many agents, the env's counters)."""
        if not self.players.several:
            return super().progress
        sums = {k: k for k in self.env.episode_sums}
        return {f"{self.me} return": f"return/{self.me}", "regret": "regret", **sums}

    def team_params(self, state: TrainState) -> dict[str, Any]:
        """The protagonist's parameters for the students' team, the others' own."""
        own = jax.tree.map(lambda x: x[0], state.learner[self.policy].params)
        return {
            t: own if t == self.me else state.learner[p].params
            for t, p in self.players.team_policy.items()
        }

    def init(self, key: jax.Array) -> TrainState:
        """Fresh students (stacked, the protagonist first), other teams and teacher."""
        if self.others:  # (the other teams' key comes second)
            k_students, k_others, k_teacher, k_env = jax.random.split(key, 4)
        else:
            k_students, k_teacher, k_env = jax.random.split(key, 3)
        level = self.editor.decode(self.editor.reset_state(k_env, None))
        obs, _ = self.env.reset(k_env, level)
        example = jax.tree.map(lambda x: x[None], obs[self.me])
        # one student after another (`lax.map`), not `vmap`: under `vmap` the orthogonal
        # inits become batched LAPACK QRs, which jaxlib splits over XLA's CPU thread pool
        # from inside it; two at once on a 2-core machine wait on each other forever
        # (`maze-paired`'s full-size init hung). The same numbers either way.
        students = jax.lax.map(
            lambda k: self.students.init(k, example), jax.random.split(k_students, self.n_students)
        )
        learners = {self.policy: students}
        for i, (t, p) in enumerate(sorted(self.others.items())):
            example = jax.tree.map(lambda x: x[None], obs[t])
            learners[p] = self.players.learners[p].init(jax.random.fold_in(k_others, i), example)
        teacher = self.teacher.init(k_teacher, example_obs(self.editor, k_env, None, "teacher"))
        carry = {}
        if self.teacher.config.carry_over:
            carry["teacher"] = self.teacher.policy.initial_carry(self.n_envs)
        if self.students.config.carry_over:
            one = self.players.initial_carry(self.n_envs)
            carry["students"] = jax.tree.map(lambda x: jnp.stack([x] * self.n_students), one)
        return TrainState.create(key, learners, TeacherState(teacher, carry))

    def state_specs(self, axis: str) -> Any:
        """Replicated, but for carried-over recurrent states: split with the environments."""
        carry = {}
        if self.teacher.config.carry_over:
            carry["teacher"] = PartitionSpec(axis)
        if self.students.config.carry_over:
            carry["students"] = PartitionSpec(None, axis)
        if not carry:
            return PartitionSpec()
        return TrainState(
            learner=PartitionSpec(),
            curriculum=TeacherState(PartitionSpec(), carry),
            cycle=PartitionSpec(),
            rng=PartitionSpec(),
        )

    def designed_levels(self, state: TrainState, key: jax.Array, n: int) -> Any:
        """`n` levels the teacher of `state` builds."""
        return self.generate(state.curriculum.params, key, jnp.arange(n, dtype=jnp.int32))[0]

    def generate(self, params: Any, key: jax.Array, ids: jax.Array) -> tuple[Any, Any, Any]:
        """The teacher builds one level per env `ids`: `(levels, traj, init carry)`."""
        return self._build(params, key, ids)[:3]

    def _build(
        self, params: Any, key: jax.Array, ids: jax.Array, carry: Any = None
    ) -> tuple[Any, Any, Any, Any]:
        """`generate` starting from `carry` (carried over) or a zero state:
        `(levels, traj, start carry, end carry)`."""
        env = EpisodeStats(OneEpisode(self.editor))
        k_reset, k_roll = jax.random.split(key)
        n = ids.shape[0]
        carry0 = self.teacher.policy.initial_carry(n) if carry is None else carry
        start = start_rollout(env, k_reset, jnp.zeros((n,)), ids, carry0, reset_carry=carry is None)
        traj, end, _ = rollout(
            env,
            self.teacher.policy,
            params,
            k_roll,
            start,
            self.editor.episode_length,
            ids,
            team="teacher",
        )
        levels = jax.vmap(self.editor.decode)(end.env_state.inner)
        return levels, traj, carry0, end.carry

    def _student_metrics(
        self, eps: dict, stats: dict, axis_name: str | None
    ) -> dict[str, jax.Array]:
        """Each student's episode metrics and update statistics (the protagonist
        unprefixed, then `student<i>/`) and the cycle's step counts."""
        p, out = self.players, {}
        for i in range(self.n_students):
            pre = "" if i == 0 else f"student{i}/"
            one = jax.tree.map(lambda x, i=i: x[i], eps)
            out.update({pre + k: v for k, v in p.episode_metrics(one, axis_name).items()})
            out.update({f"{pre}{p.prefix(self.me)}{k}": v[i] for k, v in stats.items()})
        student_steps = self.n_students * self.n_envs * self.n_steps
        teacher_steps = self.n_envs * self.editor.episode_length
        out["student_steps"] = jnp.int32(student_steps)
        out["teacher_steps"] = jnp.int32(teacher_steps)
        out["env_steps"] = jnp.int32(student_steps + teacher_steps)
        out["updates"] = jnp.int32(1)
        return out

    def cycle(
        self, state: TrainState, key: jax.Array, ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        k_teach, k_students, k_update, k_others = jax.random.split(key, 4)
        n, me, p = ids.shape[0], self.me, self.players
        carried = state.curriculum.carry
        carry = {}

        # 1. the teacher builds the levels
        levels, t_traj, t_carry0, carry["teacher"] = self._build(
            state.curriculum.params, k_teach, ids, carried.get("teacher")
        )

        # 2-3. every student's team plays the levels with the others, then learns
        env = EpisodeStats(AutoReplay(self.env))
        over = self.students.config.carry_over
        others = {p_: state.learner[p_] for p_ in self.others.values()}

        def student(learner_state: Any, k: jax.Array, s_carry: Any) -> tuple:
            k_reset, k_roll, k_upd = jax.random.split(k, 3)
            carry0 = s_carry if over else p.initial_carry(n)
            start = start_rollout(env, k_reset, levels, ids, carry0, reset_carry=not over)
            trajs, end, eps = p.rollout(
                env, {**others, self.policy: learner_state}, k_roll, start, self.n_steps, ids
            )
            new_state, stats = self.students.update(
                learner_state, trajs[me], carry0[me], k_upd, axis_name
            )
            returns = p.team_returns(me, trajs[me])
            return new_state, stats, returns, eps, {t: trajs[t] for t in self.others}, end.carry

        keys = jax.random.split(k_students, self.n_students)
        students, s_stats, (mean_r, best_r), eps, o_trajs, carry["students"] = jax.vmap(student)(
            state.learner[self.policy], keys, carried.get("students", jnp.zeros((self.n_students,)))
        )

        # 4. the other teams learn from the protagonist's games
        learners = {**state.learner, self.policy: students}
        metrics: dict[str, jax.Array] = {}
        start_carry = p.initial_carry(n)
        for i, (t, name) in enumerate(sorted(self.others.items())):
            if name in p.frozen:
                continue
            traj0 = jax.tree.map(lambda x: x[0], o_trajs[t])
            learners[name], st = p.learners[name].update(
                state.learner[name],
                traj0,
                start_carry[t],
                jax.random.fold_in(k_others, i),
                axis_name,
            )
            metrics.update({f"{p.prefix(name)}{k}": v for k, v in st.items()})

        # 5. regret of each level -> the reward of the teacher's last step; teacher update
        regret = teacher_score(self.score, mean_r, best_r)  # (n,)
        t_traj = t_traj.replace(reward=t_traj.reward.at[-1].set(regret))
        teacher, t_stats = self.teacher.update(
            state.curriculum.learner, t_traj, t_carry0, k_update, axis_name
        )

        metrics.update({f"teacher/{k}": v for k, v in t_stats.items()})
        metrics["regret"] = psum(jnp.sum(regret), axis_name) / jnp.float32(self.n_envs)
        metrics.update(level_batch_metrics(self.level_metrics, levels, axis_name))
        metrics.update(self._student_metrics(eps, s_stats, axis_name))
        kept = {k: carry[k] for k in carried}  # the carries that carry over
        return state.next(learners, TeacherState(teacher, kept)), metrics
