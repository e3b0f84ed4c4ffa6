"""``benchmarks/accelerator.py --quick`` runs every case (the learning case too), reports a
table and JSON, and writes nothing outside its output folder."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASES = {"maze-env-2^4", "maze-dr-train-x1", "maze-dr-train-x16", "tag-grid-env",
         "tag-continuous-env", "tag-continuous-train"}  # fmt: skip


@pytest.mark.slow
def test_quick_accelerator_benchmark(tmp_path: Path) -> None:
    home, cwd, out = tmp_path / "home", tmp_path / "cwd", tmp_path / "out"
    home.mkdir()
    cwd.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "accelerator.py"), "--quick", "--out", str(out),
         "--repeats", "1"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    table, _, payload = r.stdout.partition("JSON:\n")
    data = json.loads(payload)
    assert {row["case"] for row in data["results"]} == CASES and data["quick"] is True
    for row in data["results"]:
        assert row["env_steps_per_s"] > 0 and row["compile_s"] > 0, row
        assert row["agent_steps_per_s"] == pytest.approx(
            row["env_steps_per_s"] * row["agents"], rel=1e-3
        )
        assert f"| {row['case']} |" in table
    # the learning case: the run stops at its budget of 4 updates, within its time limit,
    # and its held-out table (every maze of the suite) is in the results
    learn = data["learning"]
    assert (learn["updates"], learn["total_updates"]) == (4, 4)
    assert learn["env_steps"] == 4 * learn["steps_per_cycle"] and learn["wall_s"] > 0
    assert learn["projected_s"] >= learn["updates"] * learn["seconds_per_update"]
    mazes = [r["maze"] for r in learn["eval_rows"]]
    assert "FourRooms" in mazes and all(f"│ {m}" in learn["eval_table"] for m in mazes)
    assert "maze-dr-learn (" in table and "4 of 4 updates" in table
    # several seeds trained together: each spends the budget of 4 updates
    seeds = data["seeds"]
    assert (seeds["seeds"], seeds["updates"], seeds["total_updates"]) == (2, 4, 4)
    assert seeds["env_steps_per_s"] > 0 and "maze-dr-seeds (2 runs" in table
    # the same runs as a sweep over two learning rates: one program, each its budget
    sweep = data["sweep"]
    assert (sweep["seeds"], sweep["updates"], sweep["total_updates"]) == (2, 4, 4)
    assert sweep["sweep"].startswith("agent.ppo.lr=") and "maze-dr-sweep (2 runs" in table
    assert sweep["runs_per_hour"] == pytest.approx(2 * 3600 / sweep["projected_s"], rel=0.01)
    assert json.loads((out / "results.json").read_text())["results"] == data["results"]
    assert (out / "results.md").read_text().strip() == table.strip()
    # nothing written outside --out (the kernel cache, if any, lives inside it)
    assert not any(home.rglob("*")) and not any(cwd.rglob("*"))
