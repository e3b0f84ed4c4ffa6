"""The level sampler: the buffer rules a replay curriculum's options set, and its methods
against the buffer functions they compose (the same draws and insertions, bit for bit);
MAESTRO composes it and shows only the options it uses."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from arenax.curricula import MaestroConfig, PLRConfig
from arenax.curricula import buffer as B
from arenax.curricula.sampler import LevelSampler


def _buffer(sampler: LevelSampler) -> B.LevelBuffer:
    buf = sampler.create(jnp.zeros((2,), jnp.int32))
    levels = jnp.arange(12, dtype=jnp.int32).reshape(6, 2)
    scores = jnp.array([0.5, 0.1, 0.9, 0.3, 0.7, 0.2], jnp.float32)
    return sampler.insert(buf, levels, scores, scores)


def _same(a: object, b: object) -> None:
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_the_options_set_the_samplers_rules() -> None:
    c = PLRConfig(buffer_size=7, staleness_coef=0.2, temperature=0.5, prioritization="topk",
                  topk=3, inserted_staleness="inherit", staleness_clock="draws",
                  duplicate_ignores=("agent_dir",), sampling="one_at_a_time",
                  taken_slot="higher_score")  # fmt: skip
    assert c.sampler == LevelSampler(7, 0.2, 0.5, "topk", 3, "inherit", "draws",
                                     ("agent_dir",), "one_at_a_time", "higher_score")  # fmt: skip
    assert c.sampler.priority == (0.2, 0.5, "topk", 3)


def test_the_sampler_draws_and_inserts_as_the_buffer_functions() -> None:
    s = LevelSampler(capacity=8, inserted_staleness="inherit", staleness_clock="draws")
    buf = _buffer(s)
    key = jax.random.key(3)
    _same(s.sample(buf, key, 4), B.sample(buf, key, 4, B.replay_probs(buf, *s.priority)))
    one = dataclasses.replace(s, sampling="one_at_a_time")
    _same(one.sample(buf, key, 4), B.sample_one_at_a_time(buf, key, 4, *s.priority))
    new = jnp.array([[40, 41], [0, 1], [42, 43]], jnp.int32)
    scores = jnp.array([0.8, 0.95, -jnp.inf], jnp.float32)
    want, _ = B.insert(buf, new, scores, scores, *s.priority, inherit_staleness=True, tick=False)
    _same(s.insert(buf, new, scores, scores), want)
    idx = jnp.array([0, 2], jnp.int32)
    _same(s.rescore(buf, idx, scores[:2], scores[:2]),
          B.update_scores(buf, idx, scores[:2], scores[:2]))  # fmt: skip
    assert int(s.age_without_replay(buf, 5).clock) == int(buf.clock) + 5  # draws age them
    levels = dataclasses.replace(s, staleness_clock="levels")
    assert int(levels.age_without_replay(buf, 5).clock) == int(buf.clock)  # inserts did


def test_maestro_shows_only_the_options_it_uses(tmp_path: Path) -> None:
    """MAESTRO composes PLR's sampler and its own edits: ACCEL's options it refused or
    ignored (the mutation criterion, ACCEL∥'s cold children, easy / hard parents) are gone,
    and a run saved with them loads."""
    fields = {f.name for f in dataclasses.fields(MaestroConfig)}
    assert not fields & {"mutation_criterion", "cold_children", "mutation_parents"}
    assert {"edits", "n_edits", "mutation_count", "buffer_size", "population"} <= fields
    from arenax.training import PRESETS
    from arenax.training.saved import load_config, save_config

    save_config(PRESETS["tag-grid-maestro"], tmp_path / "config.json")
    data = json.loads((tmp_path / "config.json").read_text())
    data["curriculum"].update(mutation_criterion="all", cold_children="new", mutation_parents=4)
    (tmp_path / "config.json").write_text(json.dumps(data))
    assert load_config(tmp_path / "config.json") == PRESETS["tag-grid-maestro"]
