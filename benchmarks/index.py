"""docs/benchmarks.md and its chart docs/benchmark-ratios.png: every committed row's headline, rebuilt from the rows' raw results.

It reads only ``benchmarks/results/<row>.csv`` (one line per run) and the commit line of
``<row>.md``, so ``python -m benchmarks --index`` rebuilds it at any time without training, and a
training run rebuilds it at its end. The ratios are recomputed from the per-run figures: the ratio
of medians with its bootstrap interval, whatever the row's own report printed when it was made. Rows
as users run them and rows at matched compute (``Row.matched``) get a section each, since only the
latter measure the library rather than its settings.
"""

from __future__ import annotations

import csv
import os
import re
from typing import Any

from benchmarks.report import interval_cell, plot_ratios, ratio_of_medians
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


TABLE_HEAD = [
    "| row | env, target | elegantrl agent | seeds | success (ours vs SB3) | env steps ratio | wall time ratio | held | results from |",
    "|---|---|---|---|---|---|---|---|---|",
]


def section(title: str, blurb: str, measured: dict[str, tuple[list[dict[str, Any]], str]], names: list[str]) -> list[str]:
    """The markdown of one kind of row: its table, and the defined rows of that kind with no results yet."""
    lines = ["", f"## {title}", "", blurb, ""]
    done = [name for name in names if name in measured]
    if done:
        lines += TABLE_HEAD
        for name in done:
            row, (runs, commit) = ROWS[name], measured[name]
            for line in headline(runs):
                lines.append(f"| [{name}](../benchmarks/results/{name}.md) | {row.env_id}, {row.target:g} | {line['agent']} | "
                             f"{line['seeds']} | {line['success']} | {interval_cell(line['steps'])} | {interval_cell(line['seconds'])} | "
                             f"{line['held']} | {commit or 'unknown'} |")
        lines.append("")
    missing = [name for name in names if name not in measured]
    if missing:
        lines.append(f"{'Not measured yet' if done else '**Not measured yet**'}: {', '.join(f'`{name}`' for name in missing)}; "
                     f"`python -m benchmarks --rows {' '.join(missing)} --seeds 0 1 2 3 4` makes "
                     f"{'them' if len(missing) > 1 else 'it'}.")
    elif not done:
        lines.append("**Not measured yet**, and no such row is defined in `benchmarks/rows.py` yet.")
    return lines


def write_index(results: str = os.path.join(HERE, "results"), path: str = DOCS) -> str:
    """Writes docs/benchmarks.md, and beside it benchmark-ratios.png, from the rows' CSVs in `results`; returns the page's path."""
    measured = {name: read_row(results, name) for name in ROWS if os.path.isfile(os.path.join(results, f"{name}.csv"))}
    chart = os.path.join(os.path.dirname(path), "benchmark-ratios.png")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    # users' rows first, as in the page, so that the chart reads in the same order as the tables
    order = sorted(measured, key=lambda name: ROWS[name].matched)
    bars = [(f"{name} · {line['agent']}", ROWS[name].matched, line["seconds"], line["steps"])
            for name in order for line in headline(measured[name][0])]
    if bars:
        plot_ratios(bars, chart)
    lines = [
        "# Benchmarks: elegantrl side by side with Stable-Baselines3",
        "",
        "Rebuilt by `python -m benchmarks --index` from the committed per-run results in `benchmarks/results/` "
        "(each row's own report there has the command that made it, the machine, both sides' settings and every seed); "
        "`python -m benchmarks --suite quick` or `--suite full` trains the rows anew and rebuilds this page. "
        "The protocol is in [benchmarks/README.md](../benchmarks/README.md).",
        "",
        "Each ratio is median(elegantrl) / median(SB3) over the seeds, with a 90% bootstrap interval; below 1 "
        "elegantrl was faster, or needed fewer env steps. The rows come in two kinds. *As users run them*: each library "
        "with its own tuned settings, which differ in network width and gradient steps per env step (each report says "
        "what each side ran), so they measure settings as much as the library. *At matched compute*: both sides run "
        "the same widths, batch size, gradient steps per env step and warm-up, so that the ratio measures the library. "
        "A failed run counts at its budget (see the success column). \"Held\" is the share of evaluations after the "
        "first hit at or above the target, for rows made since runs train on past the target; older rows stopped at the hit.",
    ]
    if bars:
        lines += ["", f"![wall-time and env-steps ratios of every row](./{os.path.basename(chart)})", "",
                  "The chart shows every row's ratios per elegantrl agent, wall time to the target on the left and env steps "
                  "on the right: a bar runs from 1 (a tie) to the ratio of medians, its whiskers are the 90% bootstrap interval, "
                  "and the axis is logarithmic, so a bar to the left of the line means elegantrl was better by that factor. "
                  f"{'Hatched orange bars are' if any(bar[1] for bar in bars) else 'None is yet from'} matched-compute rows; "
                  "an interval whose whiskers cross the line at 1 is no verdict either way."]
    lines += section("As users run them", "Each library with its own tuned settings.", measured,
                     [name for name, row in ROWS.items() if not row.matched])
    lines += section("At matched compute", "Both libraries with the same widths, batch size, gradient steps per env step and warm-up.",
                     measured, [name for name, row in ROWS.items() if row.matched])
    curves = [name for name in ROWS if os.path.isfile(os.path.join(results, f"{name}.png"))]
    if curves:
        lines += ["", "## Learning curves", ""]
        lines += [f"![{name}](../benchmarks/results/{name}.png)" for name in curves]
    lines += ["", "A commit marked `-dirty` ran with uncommitted changes and cannot be regenerated exactly; such rows are "
              "due to be made again from a clean commit.", ""]
    with open(path, "w") as file:
        file.write("\n".join(lines))
    return path


if __name__ == "__main__":
    print(write_index())
