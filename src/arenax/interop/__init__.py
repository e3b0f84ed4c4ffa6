"""Use arenax environments from other libraries.

* `to_gymnasium` — a `gymnasium.vector.VectorEnv` of `n_envs` copies of a
  single-agent environment (maze, classic control), auto-resetting in Gymnasium's
  `SAME_STEP` mode; `to_gymnasium_env` — one `gymnasium.Env` (no auto-reset).
* `to_pettingzoo` — a PettingZoo `ParallelEnv` of a many-agent environment (Tag):
  one agent name per agent (`"tagger_0"`, `"runner_3"`…); agents leaving the game leave
  `env.agents`.

`arenax.nn.minimax.student_from_minimax` maps a maze student trained by minimax (the
reference JAX UED library) onto arenax's student network.

Each episode starts on a level from `levels`: a generator (`key -> level`, e.g.
`env.generate` or `arenax.make_generator("maze/dr", ...)`), or a list / dict of fixed
levels (a held-out suite; one is drawn uniformly per episode). The step (with the auto-reset)
is compiled once; arrays stay on the device until they are handed over as NumPy arrays.

Gymnasium and PettingZoo are optional: `pip install -e ".[interop]"`.
"""

from arenax.interop.gym import ArenaxGymEnv, ArenaxVectorEnv, to_gymnasium, to_gymnasium_env
from arenax.interop.levels import LevelSource, level_sampler
from arenax.interop.pz import ArenaxParallelEnv, to_pettingzoo

__all__ = [
    "ArenaxGymEnv",
    "ArenaxParallelEnv",
    "ArenaxVectorEnv",
    "LevelSource",
    "level_sampler",
    "to_gymnasium",
    "to_gymnasium_env",
    "to_pettingzoo",
]
