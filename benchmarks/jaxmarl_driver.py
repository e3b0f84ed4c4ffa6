"""Times JaxMARL's MPE `simple_tag` env step (random actions, its own auto-reset) at a
given number of envs, taggers (its adversaries) and runners (its good agents); prints one
JSON object.

Run by `benchmarks/jaxmarl_tag_speed.py` with the Python of JaxMARL's own virtual
environment (it imports jaxmarl, never arenax):

    /path/to/jaxmarl-venv/bin/python benchmarks/jaxmarl_driver.py --envs 1000 \
        --taggers 5 --runners 100 --steps 100 --repeats 3

The timed program is the same as `benchmarks/tag_throughput.py`'s env-only mode: a
compiled scan of `--steps` steps of `--envs` envs (vmapped), each agent's action drawn
uniformly from its 5 discrete moves every step, observations, rewards and episode ends
folded into a checksum so XLA cannot drop them; the best of `--repeats` timed calls after
the compiling one.
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--envs", type=int, default=1000)
    ap.add_argument("--taggers", type=int, default=5)
    ap.add_argument("--runners", type=int, default=100)
    ap.add_argument("--obstacles", type=int, default=0, help="simple_tag's landmarks")
    ap.add_argument("--steps", type=int, default=100, help="steps per timed call")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    import jaxmarl

    env = jaxmarl.make(
        "MPE_simple_tag_v3",
        num_good_agents=args.runners,
        num_adversaries=args.taggers,
        num_obs=args.obstacles,
    )
    n, agents = args.envs, list(env.agents)
    n_actions = {a: env.action_space(a).n for a in agents}
    _, state = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(1), n))

    @jax.jit
    def run(state, seed):
        key = jax.random.fold_in(jax.random.PRNGKey(2), seed)

        def step(carry, t):
            state, acc = carry
            k_act, k_step = jax.random.split(jax.random.fold_in(key, t))
            ks = jax.random.split(k_act, len(agents))
            actions = {
                a: jax.random.randint(ks[i], (n,), 0, n_actions[a]) for i, a in enumerate(agents)
            }
            obs, state, rew, dones, _ = jax.vmap(env.step)(
                jax.random.split(k_step, n), state, actions
            )
            acc = (
                acc + sum(jnp.sum(o) for o in obs.values()) + sum(jnp.sum(r) for r in rew.values())
            )
            return (state, acc + jnp.sum(dones["__all__"])), None

        (state, acc), _ = jax.lax.scan(step, (state, jnp.float32(0)), jnp.arange(args.steps))
        return state, acc

    t0 = time.perf_counter()
    compiled = run.lower(state, 0).compile()
    state, acc = compiled(state, 0)
    jax.block_until_ready(acc)
    compile_s = time.perf_counter() - t0
    best = float("inf")
    for i in range(args.repeats):
        t0 = time.perf_counter()
        state, acc = compiled(state, i + 1)
        jax.block_until_ready(acc)
        best = min(best, time.perf_counter() - t0)
    obs_sizes = {
        a: int(s.shape[-1])
        for a, s in jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), 1))[0].items()
    }
    print(json.dumps({
        "event": "result", "jax": jax.__version__, "jaxmarl": getattr(jaxmarl, "__version__", "?"),
        "compile_s": compile_s, "env_steps_per_s": n * args.steps / best,
        "agents": len(agents), "obs": sorted(set(obs_sizes.values())), "finite": bool(jnp.isfinite(acc)),
    }), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
