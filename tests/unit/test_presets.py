"""The presets compose lazily: a command that parses one preset composes that one, not
every family's (issue 72, item 3); the mapping still reads as the full table."""

from __future__ import annotations

import dataclasses

import pytest

from arenax.training import presets as P


def test_parsing_one_preset_composes_only_that_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from arenax.cli.train import parse_preset

    monkeypatch.setattr(P, "_COMPOSED", {})
    name, value = parse_preset("train", ["maze-plr", "--n-envs", "8"])
    assert name == "maze-plr" and value.n_envs == 8
    assert list(P._COMPOSED) == [("maze", "maze-plr")]


def test_the_lazy_table_reads_as_every_family_composed() -> None:
    from arenax.registry import BUILTIN, FAMILIES

    names = [n for f in FAMILIES if f in BUILTIN for n in FAMILIES[f].presets]
    assert list(P.PRESETS) == names and len(P.PRESETS) == len(names)
    for name in names:  # each the composition of its family's plain data, composed once
        family = next(FAMILIES[f] for f in FAMILIES if name in FAMILIES[f].presets)
        assert P.PRESETS[name] == P.compose(family, family.presets[name], name)
        assert P.PRESETS[name] is P.all_presets()[name]
    assert "maze-nope" not in P.PRESETS
    with pytest.raises(KeyError):
        P.PRESETS["maze-nope"]


def test_a_name_set_on_the_table_is_kept_as_given() -> None:
    table = P.Presets(plugins=False)
    variant = dataclasses.replace(table["maze-dr"], n_envs=7)
    table["maze-dr (7 envs)"] = variant
    assert table["maze-dr (7 envs)"] is variant and list(table)[-1] == "maze-dr (7 envs)"
    assert "maze-dr (7 envs)" not in P.PRESETS  # another table: not changed
    del table["maze-dr (7 envs)"]
    assert "maze-dr (7 envs)" not in table


def test_a_family_registered_anew_is_composed_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache keeps the plain data each preset was composed from: a family registered
    again with other data (a plugin reloaded) is not served its old composition."""
    from arenax.registry import FAMILIES

    family = FAMILIES["maze"]
    stale = dataclasses.replace(P.PRESETS["maze-dr"], n_envs=3)
    other = dataclasses.replace(family.presets["maze-dr"])  # equal data, another record
    monkeypatch.setattr(P, "_COMPOSED", {("maze", "maze-dr"): (other, stale)})
    assert P.PRESETS["maze-dr"].n_envs != 3
    assert P.PRESETS["maze-dr"] == P.compose(family, family.presets["maze-dr"], "maze-dr")
