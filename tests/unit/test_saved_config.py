"""A run folder's `config.json` read back (`arenax.training.saved`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arenax.options import ConfigError
from arenax.training.saved import load_config, save_config
from helpers import tiny_preset


def test_a_plugin_run_read_without_its_plugin_names_arenax_plugins(tmp_path: Path) -> None:
    """A run trained with a plug-in's curriculum, read where the plug-in is not imported,
    says how to import it (it once said only "unknown kind")."""
    path = tmp_path / "config.json"
    save_config(tiny_preset("maze-dr", tmp_path), path)
    assert load_config(path).curriculum.KIND == "dr"  # read back as written
    data = json.loads(path.read_text())
    data["curriculum"]["kind"] = "topk_not_imported"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    message = str(err.value)
    assert "curriculum: unknown kind 'topk_not_imported'; allowed: dr, " in message
    assert "set ARENAX_PLUGINS=module" in message and "\n" not in message
