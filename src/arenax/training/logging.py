"""Metric sinks: CSV and JSONL (always; a metric with an array per cycle, JSONL only),
TensorBoard (when tensorboardX is installed),
Weights & Biases (when asked for).

Rows are keyed by `cycle`. When a run resumes from the checkpoint of cycle `c`, rows
after `c` (written before the interruption) are dropped so the files read as if the run
had never stopped. A line that cannot be read (a crash mid-write tears the last one) is
dropped with a warning.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np


def read_jsonl(path: Path, warn: Any = None) -> list[dict[str, Any]]:
    """The rows of a JSONL log; unreadable lines are dropped (`warn(message)` is told)."""
    rows = []
    if not path.exists():
        return rows
    lines = path.read_text(errors="replace").splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            int(row["cycle"])
        except (ValueError, KeyError, TypeError):
            if warn is not None:
                what = (
                    "its last line (torn by an interrupted write)"
                    if i == len(lines) - 1
                    else f"line {i + 1}"
                )
                warn(f"{path.name}: dropped {what}")
            continue
        rows.append(row)
    return rows


def array_rows(metrics: dict[str, np.ndarray], first_cycle: int) -> dict[str, list[dict]]:
    """The metrics with an array per cycle (leaves `(cycles, ...)`; e.g. MAESTRO's
    `pairs/score (cycles, groups)`) as tables: `{table: [{"cycle": c, name: list}, ...]}`,
    the table the key's first part, the name the rest (`pairs/level/walls` -> table
    `pairs`, column `level/walls`)."""
    tables: dict[str, list[dict]] = {}
    for k, v in metrics.items():
        if np.ndim(v) < 2:
            continue
        table, _, name = k.partition("/")
        rows = tables.setdefault(table, [{"cycle": first_cycle + i + 1} for i in range(len(v))])
        for row, x in zip(rows, np.asarray(v), strict=True):
            row[name or table] = x.tolist()
    return tables


def _truncate_jsonl(path: Path, max_cycle: int, warn: Any = None) -> list[dict[str, Any]]:
    return [r for r in read_jsonl(path, warn) if r["cycle"] <= max_cycle]


class CsvJsonl:
    """One table as `<name>.csv` and `<name>.jsonl` in the run directory (without `with_csv`,
    only the JSONL: a table whose cells are lists)."""

    def __init__(
        self,
        run_dir: Path,
        name: str,
        resume_cycle: int | None = None,
        warn: Any = None,
        with_csv: bool = True,
    ) -> None:
        self.csv_path = Path(run_dir) / f"{name}.csv" if with_csv else None
        self.jsonl_path = Path(run_dir) / f"{name}.jsonl"
        self.columns: list[str] | None = None
        rows = (
            _truncate_jsonl(self.jsonl_path, resume_cycle, warn) if resume_cycle is not None else []
        )
        self.jsonl_path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        if self.csv_path is not None:
            self.csv_path.write_text("")
            if rows:
                self._write_csv(rows)

    def _write_csv(self, rows: list[dict[str, Any]]) -> None:
        if self.csv_path is None:
            return
        new = self.columns is None
        if new:
            self.columns = list(rows[0])
        with self.csv_path.open("a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=self.columns, extrasaction="ignore")
            if new:
                w.writeheader()
            w.writerows(rows)

    def write(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        with self.jsonl_path.open("a") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        self._write_csv(rows)


class Logger:
    """All sinks of a run. `log(rows)` for training rows, `log_eval(rows)` for evals."""

    def __init__(
        self,
        run_dir: Path,
        config: dict[str, Any],
        resume_cycle: int | None = None,
        tensorboard: bool = True,
        wandb: bool = False,
        wandb_project: str = "arenax",
        warn: Any = None,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.metrics = CsvJsonl(self.run_dir, "metrics", resume_cycle, warn)
        self.evals = CsvJsonl(self.run_dir, "eval", resume_cycle, warn)
        self.tables: dict[str, CsvJsonl] = {}
        self._resume = (resume_cycle, warn)
        self.tb = None
        if tensorboard:
            try:
                from tensorboardX import SummaryWriter
            except ImportError:
                self.tb = None
            else:
                self.tb = SummaryWriter(str(self.run_dir / "tensorboard"), purge_step=resume_cycle)
        self.wandb = None
        if wandb:
            try:
                import wandb as wb
            except ImportError:
                raise RuntimeError(
                    "--wandb needs Weights & Biases: pip install wandb (or pass --no-wandb)"
                ) from None
            id_file = self.run_dir / "wandb_id.txt"
            run_id = id_file.read_text().strip() if id_file.exists() else wb.util.generate_id()
            id_file.write_text(run_id)
            self.wandb = wb.init(
                project=wandb_project,
                id=run_id,
                resume="allow",
                name=self.run_dir.name,
                dir=str(self.run_dir),
                config=config,
            )

    def log(self, rows: list[dict[str, Any]]) -> None:
        self.metrics.write(rows)
        for row in rows:
            step = row["cycle"]
            for k, v in row.items():
                if k == "cycle" or not isinstance(v, (int, float)) or not math.isfinite(v):
                    continue
                if self.tb is not None:
                    self.tb.add_scalar(k, v, step)
            if self.wandb is not None:
                self.wandb.log(row, step=step)

    def log_table(self, name: str, rows: list[dict[str, Any]]) -> None:
        """Rows of a table whose cells are lists (one per cycle), to `<name>.jsonl` only."""
        if name not in self.tables:
            self.tables[name] = CsvJsonl(self.run_dir, name, *self._resume, with_csv=False)
        self.tables[name].write(rows)

    def log_eval(self, rows: list[dict[str, Any]], summary: dict[str, float]) -> None:
        self.evals.write(rows)
        if rows:
            step = rows[0]["cycle"]
            if self.tb is not None:
                for k, v in summary.items():
                    self.tb.add_scalar(k, v, step)
            if self.wandb is not None:
                self.wandb.log(summary, step=step)

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()
        if self.wandb is not None:
            self.wandb.finish()
