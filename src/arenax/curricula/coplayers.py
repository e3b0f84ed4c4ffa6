"""Co-players: a population of snapshots of one team's policy, and how the other teams play
it — the pieces of the co-player curricula: self-play, fictitious self-play (FSP) and
prioritised FSP (PFSP) over DR arenas (`arenax.curricula.population`), and MAESTRO
(`arenax.curricula.maestro`).

One team of the game is the *co-player* team (`coplayer_team`; default the game's last:
Tag's runners); the other teams are the *learners* the curriculum serves. The co-player
team keeps a live policy, trained as usual, and a population of `population` frozen
snapshots of it, taken every `snapshot_every` of its updates (oldest replaced first), kept
on device in the train state (checkpointed and resumed with it). A cycle of the `population` curriculum:

    slots    <- one co-player per group of environments (`groups` equal groups), drawn
                from the live policy and the snapshots by the sampling rule
    levels   <- one fresh level per environment (each environment replays it in the cycle)
    rollout  <- every team acts; in each group the co-player team is driven by its slot
    update   <- the learners on every environment; the live co-player only on the groups
                it played (the others' co-player steps are masked out)
    results  <- the learners' result against each slot (running average): their mean
                episode return, or their win rate (`result="win"`)
    snapshot <- every `snapshot_every` co-player updates, the live policy joins the population

Sampling rules over the slots (the live policy is one of them; `latest_prob` of the mass
is kept for it in every rule):

    latest   self-play: the live policy only
    uniform  fictitious self-play: uniform over the live policy and the filled snapshots
    pfsp     prioritised FSP (Vinyals et al. 2019's f_hard): P(c) ∝ (1 - x_c)^p with x_c
             the learners' win rate against c (`result="win"`: the family's
             `team_success`; Tag: the taggers' tag), or their return against c scaled to
             [0, 1] over the slots played so far (`result="return"`); 0 for a slot never
             played (new snapshots come first); mixed with `pfsp_floor` of uniform mass
             so that no co-player's probability is 0 (a co-player never played would
             never update its result: MAESTRO's PFSP baseline smooths the same way)
    regret   MAESTRO, arenax's rule: by the rank of the best score each slot's level
             buffer holds (`arenax.curricula.maestro`)
    max_regret MAESTRO, the paper's rule: the slot whose buffer holds the highest-scored
             level (ties shared), every slot floored at λ / N (`coplayer_floor` λ)

Groups and devices: environment `i` (global index) is in group `i // (n_envs / groups)`;
on each device the co-player team's policy runs once per local block of environments
with that block's parameters (`Blockwise`, a `vmap` over blocks), so a cycle costs one
batched forward pass per step whatever the population size.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import jax
import jax.numpy as jnp

from arenax.collectives import psum
from arenax.curricula.common import (
    Setup,
    TrainState,
    replay_rollout,
)
from arenax.curricula.players import Played, Players
from arenax.options import POSITIVE, UNIT, Problem
from arenax.struct import pytree_dataclass


# ---------------------------------------------------------------------- options
@dataclasses.dataclass(frozen=True)
class CoplayerOptions:
    """The co-player population's options (shared by `population` and `maestro`)."""

    coplayer_team: str = ""
    """The team played by the population (default: the game's last team; Tag: the
    runners). It keeps its own live policy; the other teams learn against the population."""
    population: Annotated[int, POSITIVE] = 8
    """Snapshots of the co-player team's policy kept on device (oldest replaced first)."""
    snapshot_every: Annotated[int, POSITIVE] = 10
    """Add the live co-player policy to the population every this many of its updates."""
    groups: Annotated[int, POSITIVE] = 4
    """Co-players drawn per cycle: the environments form this many equal groups, each
    played against one co-player."""
    latest_prob: Annotated[float, UNIT] = 0.5
    """Share of the sampling mass kept for the live co-player policy, whatever the rule:
    the co-player team learns only where its live policy plays, so the population keeps
    growing stronger (self-play samples the live policy only)."""
    result_ema: Annotated[float, UNIT] = 0.1
    """Weight of a cycle in the running average of the learners' result against each
    co-player (what PFSP prioritises by)."""

    @property
    def records_wins(self) -> bool:
        """The running result against each co-player is a win rate (else a return)."""
        return False

    def tiny_population(self) -> dict[str, Any]:
        """The population's options at the tests' sizes (`CurriculumOptions.tiny`)."""
        return {"population": 2, "snapshot_every": 1, "groups": 2}

    def coplayer_problems(self, run: Any, game: Any, kind: str) -> Iterator[Problem]:
        """Rules over the run (`run`: the training config, duck-typed) and its game."""
        teams = tuple(game.teams)
        if len(teams) < 2:
            yield Problem(
                f"{kind}.coplayer_team",
                self.coplayer_team,
                f"co-players need a game of several teams; {run.family.name!r} has one",
            )
            return
        team = self.coplayer_team or teams[-1]
        if team not in teams:
            yield Problem(f"{kind}.coplayer_team", team, f"allowed: {', '.join(teams)}")
            return
        tc = run.teams[team]
        if tc.scripted:
            yield Problem(
                f"{team}.scripted",
                True,
                f"the {team}s are the co-players: they act by a policy (snapshots of it)",
            )
        elif tc.frozen:
            yield Problem(
                f"{team}.frozen",
                True,
                f"the {team}s are the co-players: a frozen policy's snapshots would all be one policy",
            )
        policy_of = run.team_policy()
        for t in teams:
            if (
                t != team
                and policy_of.get(t) is not None
                and policy_of.get(t) == policy_of.get(team)
            ):
                yield Problem(
                    f"{t}.policy",
                    run.teams[t].policy or "shared",
                    f"must differ from the {team}s' policy (the {team}s are the co-players; pass --{t}.policy '' --{team}.policy '')",
                )
        learners = [t for t in teams if t != team and policy_of.get(t) is not None]
        if not learners:
            yield Problem(
                f"{kind}.coplayer_team",
                team,
                "no other team acts by a policy: nobody would learn against the co-players",
            )
        n, g, d = run.n_envs, self.groups, run.devices
        if n % g:
            yield Problem(f"{kind}.groups", g, f"must divide n_envs={n}")
        elif g % d and d % g:
            yield Problem(
                f"{kind}.groups",
                g,
                f"must be a multiple or a divisor of devices={d} (each device plays whole groups, or a part of one)",
            )


# ---------------------------------------------------------------------- the population
@pytree_dataclass
class Population:
    """`P` snapshots of the co-player team's policy and the learners' results against
    them. Slot `P` (the last of the `P + 1` result slots) is the live policy.

    Attributes:
        params: the snapshots' parameters, leaves `(P, ...)`.
        filled: `(P,) bool`.
        born: `(P,) int32`, the co-player's update count when the snapshot was taken.
        next: `() int32`, the slot the next snapshot takes.
        updates: `() int32`, the live co-player policy's updates so far.
        returns: `(P + 1,) float32`, running average of the learners' result against
            each slot: their mean episode return, or their win rate where the options
            record wins (`PopulationConfig.result`).
        played: `(P + 1,) bool`, slots the learners have finished an episode against.
    """

    params: Any
    filled: jax.Array
    born: jax.Array
    next: jax.Array
    updates: jax.Array
    returns: jax.Array
    played: jax.Array

    @property
    def size(self) -> int:
        return self.filled.shape[0]


def create(params: Any, size: int) -> Population:
    """An empty population shaped after one policy's `params`."""
    return Population(
        params=jax.tree.map(lambda x: jnp.zeros((size, *x.shape), x.dtype), params),
        filled=jnp.zeros((size,), jnp.bool_),
        born=jnp.zeros((size,), jnp.int32),
        next=jnp.zeros((), jnp.int32),
        updates=jnp.zeros((), jnp.int32),
        returns=jnp.zeros((size + 1,), jnp.float32),
        played=jnp.zeros((size + 1,), jnp.bool_),
    )


def available(pop: Population) -> jax.Array:
    """`(P + 1,) bool`: slots that hold a policy (the snapshots taken, and the live one)."""
    return jnp.concatenate([pop.filled, jnp.ones((1,), jnp.bool_)])


def _normalise(w: jax.Array, ok: jax.Array) -> jax.Array:
    w = jnp.where(ok, w, 0.0)
    uniform = ok.astype(jnp.float32) / jnp.maximum(jnp.sum(ok), 1)
    total = jnp.sum(w)
    return jnp.where(total > 0, w / jnp.where(total > 0, total, 1.0), uniform)


def slot_probs(
    pop: Population,
    sampling: str,
    latest_prob: float = 0.0,
    power: float = 2.0,
    priority: jax.Array | None = None,
    floor: float = 0.0,
    win_rates: bool = False,
) -> jax.Array:
    """The distribution over the `P + 1` slots (see the module docstring).

    Args:
        priority: `(P + 1,)` weights of the `regret` / `max_regret` rules (MAESTRO's).
        floor: PFSP and `max_regret`: the share of the rule's mass spread uniformly over
            the slots that hold a policy (none then has probability 0).
        win_rates: PFSP's `x` is the running result itself, a win rate in [0, 1]
            (AlphaStar's f_hard), not the running return scaled over the slots played.
    """
    ok = available(pop)
    latest = jnp.zeros((pop.size + 1,), jnp.float32).at[-1].set(1.0)
    uniform = _normalise(jnp.ones_like(latest), ok)
    if sampling == "latest":
        return latest
    if sampling == "uniform":
        p = uniform
    elif sampling == "pfsp":
        p = _normalise((1.0 - pfsp_x(pop, win_rates)) ** power, ok)
        p = (1.0 - floor) * p + floor * uniform
    elif sampling == "regret":
        p = _normalise(priority, ok)
    elif sampling == "max_regret":
        p = (1.0 - floor) * _normalise(priority, ok) + floor * uniform
    else:
        raise ValueError(
            f"sampling={sampling!r}: allowed latest, uniform, pfsp, regret, max_regret"
        )
    return latest_prob * latest + (1.0 - latest_prob) * p


def pfsp_x(pop: Population, win_rates: bool = False) -> jax.Array:
    """PFSP's `x (P + 1,)` in [0, 1], how well the learners do against each slot: their
    running win rate (`win_rates`), or their running return scaled to [0, 1] over the
    slots played so far; 0 (the hardest) for a slot not played yet."""
    seen = available(pop) & pop.played
    if win_rates:
        return jnp.where(seen, jnp.clip(pop.returns, 0.0, 1.0), 0.0)
    lo = jnp.min(jnp.where(seen, pop.returns, jnp.inf))
    hi = jnp.max(jnp.where(seen, pop.returns, -jnp.inf))
    return jnp.where(seen & (hi > lo), (pop.returns - lo) / jnp.where(hi > lo, hi - lo, 1.0), 0.0)


def record(
    pop: Population,
    env_slot: jax.Array,
    episodes_done: jax.Array,
    returns: jax.Array,
    ema: float,
    axis_name: str | None,
) -> Population:
    """Fold a rollout's finished episodes into the running returns against each slot:
    `env_slot (n_local,)` each environment's slot, `episodes_done` / `returns (T, n_local)`
    (the learners' mean return per episode end), over all devices."""
    d = episodes_done.astype(jnp.float32)
    one_hot = jax.nn.one_hot(env_slot, pop.size + 1, dtype=jnp.float32)  # (n, P + 1)
    sums = psum(jnp.stack([jnp.sum(d * returns, 0) @ one_hot, jnp.sum(d, 0) @ one_hot]), axis_name)
    mean = sums[0] / jnp.maximum(sums[1], 1.0)
    seen = sums[1] > 0
    blended = jnp.where(pop.played, (1.0 - ema) * pop.returns + ema * mean, mean)
    return pop.replace(returns=jnp.where(seen, blended, pop.returns), played=pop.played | seen)


def snapshot(
    pop: Population, live: Any, trained: jax.Array, every: int
) -> tuple[Population, jax.Array]:
    """Count an update of the live co-player (`trained`) and, every `every` of them, put
    its parameters `live` in the next slot (oldest first). Returns the population and the
    slot taken (`-1`: none)."""
    updates = pop.updates + trained.astype(jnp.int32)
    take = trained & (updates % every == 0)
    i = pop.next

    def put(p: Population) -> Population:
        return p.replace(
            params=jax.tree.map(lambda s, x: s.at[i].set(x), p.params, live),
            filled=p.filled.at[i].set(True),
            born=p.born.at[i].set(updates),
            next=(i + 1) % p.size,
            returns=p.returns.at[i].set(0.0),
            played=p.played.at[i].set(False),
        )

    pop = jax.lax.cond(take, put, lambda p: p, pop.replace(updates=updates))
    return pop, jnp.where(take, i, -1)


def with_live(pop: Population, live: Any) -> Any:
    """Every slot's parameters, the live policy last: leaves `(P + 1, ...)`."""
    return jax.tree.map(lambda s, x: jnp.concatenate([s, x[None]]), pop.params, live)


def population_metrics(
    pop: Population, slots: jax.Array, wins: bool = False
) -> dict[str, jax.Array]:
    """`coplayers/`: snapshots held, the share of groups the live policy played, the age
    of the co-players played (updates since their snapshot; 0 for the live one), and the
    learners' lowest running result against a co-player played so far (`worst_return`,
    or `worst_win_rate` where the results are `wins`)."""
    live = slots == pop.size
    born = jnp.concatenate([pop.born, pop.updates[None]])
    seen = available(pop) & pop.played
    return {
        "coplayers/snapshots": jnp.sum(pop.filled).astype(jnp.float32),
        "coplayers/latest_share": jnp.mean(live.astype(jnp.float32)),
        "coplayers/age": jnp.mean((pop.updates - born[slots]).astype(jnp.float32)),
        f"coplayers/worst_{'win_rate' if wins else 'return'}": jnp.min(
            jnp.where(seen, pop.returns, jnp.inf)
        ),
    }


# ---------------------------------------------------------------------- acting
@dataclasses.dataclass(frozen=True)
class Blockwise:
    """A policy run with its own parameters on each of `blocks` equal blocks of its
    sequences: parameters leaves `(blocks, ...)`, sequences `(T, B, ...)` with `B` a
    multiple of `blocks` (block `b` is sequences `b·B/blocks …`)."""

    inner: Any
    blocks: int

    @property
    def dist(self) -> Any:
        return self.inner.dist

    def init(self, key: jax.Array, obs: Any) -> Any:
        return self.inner.init(key, obs)

    def initial_carry(self, batch: int) -> Any:
        return self.inner.initial_carry(batch)

    def apply(self, params: Any, obs: Any, first: jax.Array, carry: Any) -> tuple:
        k = self.blocks

        def split(x: jax.Array, axis: int) -> jax.Array:
            shape = (*x.shape[:axis], k, x.shape[axis] // k, *x.shape[axis + 1 :])
            return jnp.moveaxis(x.reshape(shape), axis, 0)

        def merge(x: jax.Array, axis: int) -> jax.Array:
            x = jnp.moveaxis(x, 0, axis)
            return x.reshape((*x.shape[:axis], -1, *x.shape[axis + 2 :]))

        o = jax.tree.map(lambda x: split(x, 1), obs)
        c = jax.tree.map(lambda x: split(x, 0), carry)
        carry, logits, value = jax.vmap(self.inner.apply)(params, o, split(first, 1), c)
        return jax.tree.map(lambda x: merge(x, 0), carry), merge(logits, 1), merge(value, 1)


@dataclasses.dataclass(frozen=True)
class Coplayers:
    """How a curriculum plays the population: which team, which policy, the groups.

    Attributes:
        players: the game's players (every team's live policy).
        team: the co-player team.
        options: the population's options.
        n_envs: environments of a cycle (global).
        wins: `episodes -> (T, N)` the learners' win of the episodes ending at each step,
            in [0, 1] (the family's `team_success`): the result recorded against each
            slot; `None`: their mean episode return.
    """

    players: Players
    team: str
    options: CoplayerOptions
    n_envs: int
    wins: Callable[[dict[str, Any]], jax.Array] | None = None

    @property
    def policy(self) -> str:
        """The co-player team's policy name (its entry in the train state)."""
        return self.players.team_policy[self.team]

    @property
    def learners(self) -> tuple[str, ...]:
        """The teams that learn against the co-players."""
        return tuple(t for t in self.players.teams if t != self.team)

    @property
    def group_size(self) -> int:
        return self.n_envs // self.options.groups

    def init(self, learners: dict[str, Any]) -> Population:
        return create(learners[self.policy].params, self.options.population)

    def draw(self, key: jax.Array, probs: jax.Array) -> jax.Array:
        """One slot per group `(groups,) int32` (the same on every device)."""
        g = self.options.groups
        return jax.random.choice(key, probs.shape[0], (g,), p=probs).astype(jnp.int32)

    def env_slots(self, slots: jax.Array, ids: jax.Array) -> jax.Array:
        """Each local environment's slot `(n_local,)` (global indices `ids`)."""
        return slots[ids // self.group_size]

    def rollout(
        self,
        state: TrainState,
        pop: Population,
        slots: jax.Array,
        key: jax.Array,
        levels: Any,
        ids: jax.Array,
        n_steps: int,
    ) -> Played:
        """Every team plays this device's `levels` (each env replaying its own), the
        co-player team driven in each group by its slot; advantages per team."""
        n_local = ids.shape[0]
        s = min(self.group_size, n_local)  # local block: one group, or a device's part of one
        block_slots = self.env_slots(slots, ids[::s])
        everyone = with_live(pop, state.learner[self.policy].params)
        params = {**state.learner, self.policy: jax.tree.map(lambda x: x[block_slots], everyone)}
        learner = self.players.learners[self.policy]
        acting = dataclasses.replace(
            self.players,
            learners={
                **self.players.learners,
                self.policy: dataclasses.replace(
                    learner, policy=Blockwise(learner.policy, n_local // s)
                ),
            },
        )
        trajs, carry0, episodes = replay_rollout(acting, params, key, levels, ids, n_steps)
        return Played(trajs, carry0, self.players.advantages(trajs), episodes)

    def learning_masks(
        self, played: Played, env_slot: jax.Array, focus: jax.Array | None = None
    ) -> Played:
        """The rollout as the learners learn from it: the co-player team's steps only where
        its live policy played; the learners' only in the environments `focus (n_local,)`
        (all when `None`)."""
        live = (env_slot == self.options.population).astype(jnp.float32)
        masks = {self.team: live}
        if focus is not None:
            masks.update({t: focus.astype(jnp.float32) for t in self.learners})
        traj = dict(played.traj)
        for t, m in masks.items():
            per_seq = jnp.repeat(m, self.players.env.num_agents(t))[None]
            traj[t] = traj[t].replace(mask=traj[t].mask * per_seq)
        return played._replace(traj=traj)

    def after_update(
        self,
        pop: Population,
        learners: dict[str, Any],
        slots: jax.Array,
        env_slot: jax.Array,
        played: Played,
        live_trained: jax.Array,
        axis_name: str | None,
    ) -> tuple[Population, jax.Array]:
        """Record the learners' results against each slot, then snapshot the live
        co-player when due. Returns the population and the slot taken (`-1`: none)."""
        scorer = self.players.scorer if self.players.scorer in self.learners else self.learners[0]
        ep = played.episodes
        result = ep["returns"][scorer] if self.wins is None else self.wins(ep)
        pop = record(pop, env_slot, ep["done"], result, self.options.result_ema, axis_name)
        return snapshot(
            pop, learners[self.policy].params, live_trained, self.options.snapshot_every
        )


def coplayers_of(s: Setup, options: CoplayerOptions) -> tuple[Players, Coplayers]:
    """The players (scoring by the first learning team unless a score team is set) and
    the population's plan for a run's setup."""
    team = options.coplayer_team or s.players.teams[-1]
    players = s.players
    if not players.score_team:
        first = next(t for t in players.teams if t != team)
        players = dataclasses.replace(players, score_team=first)
    wins = None
    if options.records_wins:  # the first learning team's (the team scoring levels)
        learners = [t for t in players.teams if t != team]
        scorer = players.scorer if players.scorer in learners else learners[0]
        wins = functools.partial(players.success, scorer)
    return players, Coplayers(players, team, options, s.n_envs, wins)
