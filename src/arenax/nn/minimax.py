"""A maze student trained by minimax (the reference JAX UED library), as an arenax policy.

minimax's `GridWorldACStudentModel` (its `default_student_cnn`) and arenax's maze student
(`arenax.nn.student`) are the same network: a 3x3 VALID conv with ReLU, a direction
embedding, an LSTM, and tanh policy and value heads. Only the parameters are laid out
differently:

| minimax | arenax |
|---|---|
| `cnn` | `Conv_0` |
| `fc_scalar/embedding` | `Embed_0/embedding` |
| `rnn/OptimizedLSTMCell_0/i{i,f,g,o}/kernel` (per gate, no bias) | `core/input/kernel`, the gates side by side |
| `rnn/OptimizedLSTMCell_0/h{i,f,g,o}/kernel`, `/bias` | `core/recurrent`; the biases are `core/input/bias` |
| `fc_pi_1`, `fc_pi_final` | `Dense_0`, `Dense_1` |
| `v_head/Dense_0`, `v_head/fc_value_final` | `Dense_2`, `Dense_3` |

flax's LSTM cell orders its gates i, f, g, o, which is the order arenax's core splits.
With the mapped parameters arenax's network gives minimax's logits and values on the same
observations (checked in `tests/conformance/test_minimax_replay.py` against a recording
of minimax itself). Give the student observations as minimax trained it: `normalize_obs`
(images divided by 10), as its published maze configurations do.

    import numpy as np
    from arenax.envs.maze.evaluation import evaluate
    from arenax.nn.minimax import student_from_minimax

    flat = dict(np.load("student.npz"))  # flax.traverse_util.flatten_dict(params, sep="/")
    policy, params = student_from_minimax(flat)
    results = evaluate(policy, params, "classic", episodes=100)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from arenax.nn.student import ModelConfig, StudentPolicy

_LSTM = "rnn/OptimizedLSTMCell_0/"
_GATES = ("i", "f", "g", "o")


def student_from_minimax(flat: Mapping[str, Any]) -> tuple[StudentPolicy, dict]:
    """minimax's student parameters as `(policy, params)` of arenax's maze student.

    Args:
        flat: the parameters as `'/'`-joined paths (`flatten_dict(params, sep="/")`),
            with or without the leading `params/` and with or without the population's
            leading axis of one student (`(1, ...)` arrays, as minimax's runner state
            holds them).

    Returns:
        The `StudentPolicy` with the sizes read from the arrays (core width, filters,
        embedding, head width, actions) and its parameters (`jnp` arrays).

    Raises:
        ValueError: the parameters are not an LSTM student's (another recurrent cell, a
            population of several students, or names that are not minimax's).
    """
    p = {k.removeprefix("params/"): np.asarray(v) for k, v in flat.items()}
    if "cnn/kernel" not in p or f"{_LSTM}hi/kernel" not in p:
        raise ValueError(
            "not minimax's LSTM maze student: expected 'cnn/kernel' and "
            f"'{_LSTM}hi/kernel' among {sorted(p)[:6]}…"
        )
    if p["cnn/kernel"].ndim == 5:
        if p["cnn/kernel"].shape[0] != 1:
            raise ValueError(f"a population of {p['cnn/kernel'].shape[0]} students: pass one")
        p = {k: v[0] for k, v in p.items()}
    params = {
        "Conv_0": {"kernel": p["cnn/kernel"], "bias": p["cnn/bias"]},
        "Embed_0": {"embedding": p["fc_scalar/embedding"]},
        "core": {
            "input": {
                "kernel": np.concatenate([p[f"{_LSTM}i{g}/kernel"] for g in _GATES], -1),
                "bias": np.concatenate([p[f"{_LSTM}h{g}/bias"] for g in _GATES], -1),
            },
            "recurrent": np.concatenate([p[f"{_LSTM}h{g}/kernel"] for g in _GATES], -1),
        },
        "Dense_0": {"kernel": p["fc_pi_1/kernel"], "bias": p["fc_pi_1/bias"]},
        "Dense_1": {"kernel": p["fc_pi_final/kernel"], "bias": p["fc_pi_final/bias"]},
        "Dense_2": {"kernel": p["v_head/Dense_0/kernel"], "bias": p["v_head/Dense_0/bias"]},
        "Dense_3": {
            "kernel": p["v_head/fc_value_final/kernel"],
            "bias": p["v_head/fc_value_final/bias"],
        },
    }
    model = ModelConfig(
        cell="lstm",
        hidden=int(p[f"{_LSTM}hi/kernel"].shape[0]),
        conv_filters=int(p["cnn/kernel"].shape[-1]),
        dir_embed=int(p["fc_scalar/embedding"].shape[-1]),
        head_hidden=int(p["fc_pi_1/kernel"].shape[-1]),
    )
    policy = StudentPolicy.of(model, n_actions=int(p["fc_pi_final/kernel"].shape[-1]))
    return policy, jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), {"params": params})
