"""docs/benchmarks.md: every committed row's headline in one page, rebuilt from the rows' raw results.

It reads only ``benchmarks/results/<row>.csv`` (one line per run) and the commit line of
``<row>.md``, so ``python -m benchmarks --index`` rebuilds it at any time without training, and a
training run rebuilds it at its end. The ratios are recomputed from the per-run figures: the ratio
of medians with its bootstrap interval, whatever the row's own report printed when it was made.
"""

from __future__ import annotations

import csv
import os
import re
from typing import Any

from benchmarks.report import interval_cell, ratio_of_medians
from benchmarks.rows import HERE, ROOT, ROWS, SB3

DOCS = os.path.join(ROOT, "docs", "benchmarks.md")


def read_row(results: str, name: str) -> tuple[list[dict[str, Any]], str]:
    """The runs of one row's CSV (numbers parsed) and the commit its report names ("" if none)."""
    with open(os.path.join(results, f"{name}.csv"), newline="") as file:
        runs = [{k: _number(v) for k, v in line.items()} for line in csv.DictReader(file)]
    commit = ""
    if os.path.isfile(os.path.join(results, f"{name}.md")):
        with open(os.path.join(results, f"{name}.md")) as file:
            found = re.search(r"elegantrl at git (\S+)", file.read())
            commit = found.group(1) if found else ""
    return runs, commit


def _number(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        return text


def headline(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per elegantrl agent of a row: successes of both sides, the two ratios of medians, the stability."""
    base = [r for r in runs if r["library"] == SB3]
    lines = []
    for agent in dict.fromkeys(r["agent"] for r in runs if r["library"] != SB3):
        ours = [r for r in runs if r["agent"] == agent and r["library"] != SB3]
        later = sum(r.get("later_evaluations", 0) or 0 for r in ours)
        held = sum(r.get("later_held", 0) or 0 for r in ours)
        lines.append(dict(
            agent=agent.removeprefix("Agent"), seeds=len(ours),
            success=f"{sum(r['status'] == 'reached' for r in ours)}/{len(ours)} vs {sum(r['status'] == 'reached' for r in base)}/{len(base)}",
            steps=ratio_of_medians([r["steps"] for r in ours], [r["steps"] for r in base]),
            seconds=ratio_of_medians([r["seconds"] for r in ours], [r["seconds"] for r in base]),
            held=f"{held / later:.0%}" if later else "not measured",
        ))
    return lines


def write_index(results: str = os.path.join(HERE, "results"), path: str = DOCS) -> str:
    """Writes docs/benchmarks.md from the rows' CSVs in `results`; returns its path."""
    lines = [
        "# Benchmarks: elegantrl side by side with Stable-Baselines3",
        "",
        "Rebuilt by `python -m benchmarks --index` from the committed per-run results in `benchmarks/results/` "
        "(each row's own report there has the command that made it, the machine, both sides' settings and every seed); "
        "`python -m benchmarks --suite quick` or `--suite full` trains the rows anew and rebuilds this page. "
        "The protocol is in [benchmarks/README.md](../benchmarks/README.md).",
        "",
        "Each ratio is median(elegantrl) / median(SB3) over the seeds, with a 90% bootstrap interval; below 1 "
        "elegantrl was faster. These rows are *as users run them*: each library with its own tuned settings, "
        "which differ in network width and gradient steps per env step (each report says what each side ran), so "
        "they measure settings as much as the library; rows at matched compute are not made yet. A failed run counts "
        "at its budget (see the success column). \"Held\" is the share of evaluations after the first hit at or above "
        "the target, for rows made since runs train on past the target; older rows stopped at the hit.",
        "",
        "| row | env, target | elegantrl agent | seeds | success (ours vs SB3) | env steps ratio | wall time ratio | held | results from |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in ROWS.items():
        if not os.path.isfile(os.path.join(results, f"{name}.csv")):
            continue
        runs, commit = read_row(results, name)
        for line in headline(runs):
            lines.append(f"| [{name}](../benchmarks/results/{name}.md) | {row.env_id}, {row.target:g} | {line['agent']} | "
                         f"{line['seeds']} | {line['success']} | {interval_cell(line['steps'])} | {interval_cell(line['seconds'])} | "
                         f"{line['held']} | {commit or 'unknown'} |")
    curves = [name for name in ROWS if os.path.isfile(os.path.join(results, f"{name}.png"))]
    if curves:
        lines += ["", "## Learning curves", ""]
        lines += [f"![{name}](../benchmarks/results/{name}.png)" for name in curves]
    lines += ["", "A commit marked `-dirty` ran with uncommitted changes and cannot be regenerated exactly; such rows are "
              "due to be made again from a clean commit.", ""]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as file:
        file.write("\n".join(lines))
    return path


if __name__ == "__main__":
    print(write_index())
