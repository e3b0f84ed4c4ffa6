"""Plays minimax's student in minimax's own maze environments and records everything the
other side needs to replay it: the levels, the observations, the sampled actions, the
rewards and ends, and the network's logits and values at every step.

Run with the Python of minimax's virtual environment (it imports minimax, never arenax);
`benchmarks/minimax_crosseval.py` calls it and replays the recording in arenax:

    /path/to/minimax-venv/bin/python benchmarks/minimax_probe.py --params student.npz \\
        --out probe.npz --episodes 50

`--params` is a file written by `minimax_driver.py --save` (a trained student); without
it the student is minimax's initialisation at `--seed`. Environments: minimax's training
maze (`Maze`, 13 x 13, 60 walls, the PLR configurations' options) and the held-out
`Maze-<name>` of `--mazes`; each plays `--episodes` episodes in parallel for the maze's
step limit, sampling actions from the student, exactly as minimax's `EvalRunner` does
(observations divided by 10, the carry zeroed when an episode ends). The output `.npz`
holds, per environment `<env>`: `<env>/wall_map (N, H, W)`, `goal_pos`, `agent_pos`,
`agent_dir_idx` (N, ...) of each episode's start, and `(T, N, ...)` arrays `image` (the
observation times 10, uint8, as the environment encodes it),
`direction`, `action`, `reward`, `done`, `logits`, `value`; plus `solved/<env>`, minimax's
own solved rate of the first episodes (return > 0); and the student's parameters,
`student/<path>`.
"""

from __future__ import annotations

import argparse
import os
import sys

TRAIN_ENV = dict(
    height=13,
    width=13,
    n_walls=60,
    replace_wall_pos=True,
    sample_n_walls=False,
    see_agent=False,
    normalize_obs=True,
    max_episode_steps=250,
)
STUDENT = dict(
    recurrent_arch="lstm",
    recurrent_hidden_dim=256,
    hidden_dim=32,
    n_hidden_layers=1,
    n_conv_filters=16,
    n_scalar_embeddings=4,
    scalar_embed_dim=5,
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--params", default=None, help="student parameters (.npz); none: init")
    ap.add_argument("--out", required=True)
    ap.add_argument("--mazes", default="SixteenRooms,Labyrinth,StandardMaze")
    ap.add_argument("--episodes", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=0, help="steps per env (0: its step limit)")
    ap.add_argument("--hidden", type=int, default=256, help="LSTM units of an initial student")
    ap.add_argument(
        "--random-params",
        type=float,
        default=0.0,
        help="draw every parameter of the initial student from N(0, this^2) (a policy whose "
        "logits vary, for checking a parameter mapping; 0: minimax's initialisation)",
    )
    opts = ap.parse_args()
    problem = _check(opts)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(2)
    try:
        probe(opts)
    except KeyboardInterrupt:
        print("interrupted: nothing written", file=sys.stderr)
        raise SystemExit(130) from None


def _check(opts: argparse.Namespace) -> str | None:
    """Why the options cannot run, or None (before minimax and JAX are imported)."""
    for name in ("episodes", "hidden"):
        if getattr(opts, name) < 1:
            return f"--{name} {getattr(opts, name)}: must be at least 1"
    if opts.steps < 0:
        return f"--steps {opts.steps}: must be 0 (the step limit) or more"
    if opts.params and not os.path.isfile(opts.params):
        return f"--params {opts.params}: no such file"
    folder = os.path.dirname(os.path.abspath(opts.out))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        return f"--out {opts.out}: its folder {folder} does not exist or is not writable"
    return None


def probe(opts: argparse.Namespace) -> None:
    """Record the episodes of every environment and write `opts.out`."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from flax.traverse_util import flatten_dict, unflatten_dict
    from minimax import envs, models

    model = models.make(
        "Maze",
        "default_student_cnn",
        output_dim=7,
        **{**STUDENT, "recurrent_hidden_dim": opts.hidden},
    )
    n = opts.episodes
    key = jax.random.PRNGKey(opts.seed)

    def zero_carry(batch: int):
        return model.initialize_carry(jax.random.PRNGKey(0), (batch,))

    if opts.params:
        raw = dict(np.load(opts.params))
        params = unflatten_dict({tuple(k.split("/")): jnp.asarray(v) for k, v in raw.items()})
        params = jax.tree_util.tree_map(lambda x: x[0], params)  # the population's one agent
    else:
        env0, _ = envs.make("Maze", env_kwargs=TRAIN_ENV)
        obs0, _ = env0.reset(key)
        dummy = jax.tree_util.tree_map(lambda x: x[None, None], obs0)
        params = model.init(key, dummy, zero_carry(1), jnp.zeros((1, 1), bool))
        if opts.random_params:
            leaves, tree = jax.tree_util.tree_flatten(params)
            keys = jax.random.split(jax.random.PRNGKey(opts.seed + 1), len(leaves))
            leaves = [
                opts.random_params * jax.random.normal(k, x.shape)
                for k, x in zip(keys, leaves, strict=True)
            ]
            params = jax.tree_util.tree_unflatten(tree, leaves)

    out: dict[str, np.ndarray] = {}
    names = ["Maze"] + [f"Maze-{m}" for m in opts.mazes.split(",") if m]
    for name in names:
        kwargs = TRAIN_ENV if name == "Maze" else dict(see_agent=False, normalize_obs=True)
        env, _ = envs.make(name, env_kwargs=kwargs)
        steps = opts.steps or int(env.params.max_episode_steps)
        key, k_reset, k_roll = jax.random.split(key, 3)
        obs, state = jax.vmap(env.reset)(jax.random.split(k_reset, n))

        @jax.jit
        def rollout(obs, state, key, env=env, steps=steps):
            def step(carry, key):
                obs, state, rnn = carry
                x = jax.tree_util.tree_map(lambda a: a[None], obs)
                value, logits, rnn2 = model.apply(params, x, rnn, jnp.zeros((1, n), bool))
                k_act, k_env = jax.random.split(key)
                action = jax.random.categorical(k_act, logits[0]).astype(jnp.uint32)
                obs2, state2, reward, done, _ = jax.vmap(env.step)(
                    jax.random.split(k_env, n), state, action
                )
                rnn2 = jax.tree_util.tree_map(
                    lambda z, h: jnp.where(done[:, None], z, h), zero_carry(n), rnn2
                )
                rec = dict(
                    image=jnp.round(obs["image"] * 10).astype(jnp.uint8),
                    direction=obs["agent_dir"],
                    action=action,
                    reward=reward,
                    done=done,
                    logits=logits[0],
                    value=value[0, :, 0],
                )
                return (obs2, state2, rnn2), rec

            _, recs = jax.lax.scan(step, (obs, state, zero_carry(n)), jax.random.split(key, steps))
            return recs

        recs = jax.device_get(rollout(obs, state, k_roll))
        for k, v in recs.items():
            out[f"{name}/{k}"] = np.asarray(v)
        for k in ("wall_map", "goal_pos", "agent_pos", "agent_dir_idx"):
            out[f"{name}/{k}"] = np.asarray(getattr(state, k))
        first_end = np.argmax(recs["done"], axis=0)
        ended = recs["done"].any(axis=0)
        out[f"solved/{name}"] = np.asarray(
            ended & (recs["reward"][first_end, np.arange(n)] > 0), dtype=np.float32
        )
        print(f"{name}: solved {out[f'solved/{name}'].mean():.2f} over {n} episodes", flush=True)
    flat = flatten_dict(jax.device_get(params), sep="/")
    out.update({f"student/{k}": np.asarray(v) for k, v in flat.items()})
    np.savez_compressed(opts.out, **out)


if __name__ == "__main__":
    main()
