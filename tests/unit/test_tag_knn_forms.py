"""`benchmarks/tag_knn_forms.py`: its candidate forms of continuous Tag's k-nearest
observation give today's neighbours and observation bit for bit (the script checks each
against today's and raises otherwise), and put in the env's place they change nothing in
its first 10 steps."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import tag_knn_forms


def test_every_form_runs_and_matches_todays(monkeypatch) -> None:
    monkeypatch.setenv("ARENAX_GATHERS", "dear")  # today's forms are the accelerators'
    rows = tag_knn_forms.forms_table(envs=6, agents=12, k=4, repeats=1)
    assert [r[0] for r in rows] == [
        "passes",
        "top_k",
        "passes-loop",
        "observe",
        "observe-loop",
        "observe-split",
    ]
    assert not [r for r in rows if r[2].startswith("failed")], rows


def test_the_candidate_forms_in_the_env_change_nothing(monkeypatch) -> None:
    monkeypatch.setenv("ARENAX_GATHERS", "dear")  # (on the CPU the env takes its C++ kernel)
    rows = tag_knn_forms.env_table(repeats=1, quick=True)
    assert [r[0] for r in rows] == [
        "env, today's",
        "env, passes-loop",
        "env, observe-loop",
        "env, observe-split",
    ]
    assert not [r for r in rows if r[2].startswith("failed")], rows
