"""Every ```python snippet of the README and of docs/ runs, as written, in a fresh
interpreter (in a temporary directory, so runs it starts land there)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]


def snippets() -> list[tuple[str, str]]:
    out = []
    for path in DOCS:
        text = path.read_text()
        for m in re.finditer(r"```python\n(.*?)```", text, re.S):
            line = text[: m.start()].count("\n") + 1
            out.append((f"{path.relative_to(ROOT)}:{line}", m.group(1)))
    return out


SNIPPETS = snippets()


def test_the_snippets_are_found() -> None:
    """The extractor sees the README's snippet and the docs' (a regex that silently
    matched nothing would make every snippet test vacuous)."""
    assert any(where.startswith("README.md") for where, _ in SNIPPETS)
    assert len({where.split(":")[0] for where, _ in SNIPPETS}) >= 5  # files with snippets


@pytest.mark.parametrize("where,code", SNIPPETS, ids=[s[0] for s in SNIPPETS])
def test_snippet_runs(where: str, code: str, tmp_path: Path) -> None:
    # src for arenax, the root for examples/ (docs/extending.md imports examples.corridor)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    env.setdefault("JAX_COMPILATION_CACHE_DIR", str(ROOT / ".jax_cache"))
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert res.returncode == 0, f"{where}:\n{res.stderr[-3000:]}"


def test_every_preset_is_documented() -> None:
    from arenax.training import PRESETS

    text = (ROOT / "docs" / "training.md").read_text()
    missing = [name for name in PRESETS if f"| `{name}` |" not in text]
    assert not missing, f"docs/training.md's preset table lacks {missing}"
