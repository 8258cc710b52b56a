"""Summarising the jobs: ratios of medians with bootstrap intervals, the markdown and CSV reports."""

from __future__ import annotations

import csv
import datetime
import math
import os
import platform
import statistics
import subprocess
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import stable_baselines3
import torch

from benchmarks.rows import ROOT, ROWS, SB3, TARGET_HOLD, Row, gradient_steps_per_env_step, sb3_settings, train_freq_steps


def add_ratios(results: list[dict[str, Any]]) -> None:
    """Adds ours/SB3 ratios of env steps and seconds on the same seed (nan for SB3's own lines)."""
    baseline = {r["seed"]: r for r in results if r["library"] == SB3}
    for result in results:
        base = baseline.get(result["seed"]) if result["library"] != SB3 else None
        result["steps_ratio"] = result["steps"] / base["steps"] if base else math.nan
        result["seconds_ratio"] = result["seconds"] / base["seconds"] if base else math.nan


def median(values: list[float]) -> float:
    """The median of the non-nan values, or nan when there are none."""
    finite = [v for v in values if not math.isnan(v)]
    return statistics.median(finite) if finite else math.nan


def fmt(value: float, digits: int = 1) -> str:
    """A table cell: thousands separators and `digits` decimals; a dash for nan."""
    return "–" if math.isnan(value) else f"{value:,.{digits}f}"


def label(result: dict[str, Any]) -> str:
    """How a run is named in the tables, e.g. "SB3 DQN (zoo)" or "elegantrl D3QN"."""
    if result["library"] == SB3:
        return f"SB3 {result['agent']} (zoo)"
    return f"elegantrl {result['agent'].removeprefix('Agent')}"


def ratio_of_medians(ours: list[float], base: list[float], resamples: int = 10_000) -> tuple[float, float, float]:
    """median(ours) / median(base), with a 90% bootstrap interval: (ratio, low, high).

    Each side's seeds are resampled with replacement on their own, since a seed number pairs two
    unrelated random streams; the interval is the 5th and 95th percentiles of the resampled ratios.
    With 3 seeds a side it is coarse, and honest about it. A fixed generator keeps the report
    reproducible from its raw data.
    """
    ours, base = [v for v in ours if not math.isnan(v)], [v for v in base if not math.isnan(v)]
    if not ours or not base:
        return math.nan, math.nan, math.nan
    rng = np.random.default_rng(0)
    ours_medians = np.median(rng.choice(ours, (resamples, len(ours))), axis=1)
    base_medians = np.median(rng.choice(base, (resamples, len(base))), axis=1)
    low, high = np.percentile(ours_medians / base_medians, [5, 95])
    return statistics.median(ours) / statistics.median(base), float(low), float(high)


def interquartile_mean(values: list[float]) -> float:
    """The mean of the middle half of the non-nan values (a quarter cut from each end, rounded down)."""
    finite = sorted(v for v in values if not math.isnan(v))
    cut = len(finite) // 4
    return statistics.mean(finite[cut:len(finite) - cut]) if finite else math.nan


def interval_cell(ratio: tuple[float, float, float]) -> str:
    """A ratio-of-medians cell, e.g. "0.35 [0.21, 0.60]"."""
    value, low, high = ratio
    return "–" if math.isnan(value) else f"{value:.2f} [{low:.2f}, {high:.2f}]"


def tables(results: list[dict[str, Any]]) -> str:
    """The summary table (medians over seeds, ratios of medians) and the per-seed table, in markdown."""
    medians = [("steps", 0), ("seconds", 1), ("best_return", 1), ("final_return", 1)]
    summary = ["| run | success | env steps to target | wall s to target | best return | final return (median, IQM) "
               "| evaluations after the hit at or above the target | runs that fell below target - abs(target) / 2 "
               "| steps ratio ours/SB3 [90% CI] | time ratio ours/SB3 [90% CI] |", "|---|---|---|---|---|---|---|---|---|---|"]
    baseline = [r for r in results if r["library"] == SB3]
    for name in dict.fromkeys(label(r) for r in results):  # in order of first appearance
        runs = [r for r in results if label(r) == name]
        successes = sum(r["status"] == "reached" for r in runs)
        cells = [fmt(median([r[key] for r in runs]), digits) for key, digits in medians]
        cells[-1] += f", {fmt(interquartile_mean([r['final_return'] for r in runs]))}"
        later = sum(r.get("later_evaluations", 0) for r in runs)
        held = sum(r.get("later_held", 0) for r in runs)
        cells.append(f"{held / later:.0%} ({held}/{later})" if later else "–")
        cells.append(f"{sum(r.get('fell', 0) for r in runs)}/{successes}" if later else "–")
        for key in ("steps", "seconds"):
            ours = runs[0]["library"] != SB3
            cells.append(interval_cell(ratio_of_medians([r[key] for r in runs], [r[key] for r in baseline])) if ours else "–")
        summary.append(f"| {name} | {successes}/{len(runs)} | " + " | ".join(cells) + " |")
    columns = medians + [("steps_ratio", 2), ("seconds_ratio", 2)]
    per_seed = ["| run | seed | status | env steps | wall s | best return | final return | steps ratio | time ratio |",
                "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(results, key=lambda r: r["seed"]):
        cells = [fmt(r[key], digits) for key, digits in columns]
        per_seed.append(f"| {label(r)} | {r['seed']} | {r['status']} | " + " | ".join(cells) + " |")
    return ("Medians over seeds; each ratio is the ratio of the two medians, with a 90% bootstrap interval (each "
            "side's seeds resampled on their own). A run that never reaches the target counts at the full budget, "
            "so a ratio with a failed run of ours is a lower bound and one with a failed run of SB3's an upper "
            "bound (read them with the success column); a row's note says where SB3's budget is smaller. A run that reaches it trains on to "
            f"{TARGET_HOLD:g}× that env step (or its budget, if sooner); the final return is its last evaluation, and the stability columns count "
            "the evaluations after the first hit (pooled over the runs) and the runs with one below target - |target| / 2.\n\n"
            + "\n".join(summary) + "\n\nPer seed (ratios are ours / SB3 on the same seed, for reference only):\n\n"
            + "\n".join(per_seed) + "\n")


# What a benchmark run writes itself: a committed report being made again must not mark its own run "-dirty".
OUTPUTS = ("benchmarks/results", "docs/benchmarks.md", "docs/benchmark-ratios.png")


def source_commit() -> str:
    """The commit the benchmark's code is at, with "-dirty" if a tracked file other than the outputs differs from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD")
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", *(f":(exclude){path}" for path in OUTPUTS))
    return commit + ("-dirty" if commit and changed else "")


def machine() -> str:
    """The machine and the library versions, for the report."""
    cpu = platform.processor() or "unknown CPU"
    if os.path.isfile("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as file:
            cpu = next((line.split(":", 1)[1].strip() for line in file if line.startswith("model name")), cpu)
    try:
        import sb3_contrib

        contrib = f", sb3-contrib {sb3_contrib.__version__}"
    except ImportError:
        contrib = ""
    commit = source_commit()
    return (f"{len(os.sched_getaffinity(0))} CPUs (nproc), {cpu}; Python {platform.python_version()}, torch {torch.__version__}, "
            f"stable-baselines3 {stable_baselines3.__version__}{contrib}, gymnasium {gym.__version__}, elegantrl at git {commit or 'unknown'}")


def built_in_settings(row: Row) -> str:
    """What a user of each of the row's agents gets without setting anything: the tuned entry, if any."""
    from elegantrl import agent as agent_module
    from elegantrl.tuned import tuned_entry

    if row.elegantrl_args.get("if_tuned") is False:
        return "the family's defaults: no tuned entry"
    notes = []
    for name in row.agents:
        family, entry = tuned_entry(getattr(agent_module, name)(), row.env_id)
        notes.append(f"{name}: the tuned entry ({family!r}, {row.env_id!r}) {entry}" if entry else f"{name}: the family's defaults")
    return "; ".join(notes)


# The widths of SB3's MlpPolicy when net_arch is not given (its policy classes' defaults, not the algorithms' signatures).
SB3_DEFAULT_NET_ARCH = {"DQN": [64, 64], "QRDQN": [64, 64], "SAC": [256, 256], "TD3": [400, 300], "DDPG": [400, 300], "PPO": [64, 64]}


def work_per_env_step(row: Row, budget: int) -> str:
    """What each side of `row` computes, from the settings its runs take: widths, batch size, gradient steps per env step, warm-up.

    Written next to every ratio, since the ratios of rows as users run them measure these as much as the library.
    """
    from elegantrl import agent as agent_module
    from elegantrl.run import Arguments

    settings = sb3_settings(row.sb3_algo, row.sb3_hyperparams(budget))
    width = (settings.get("policy_kwargs") or {}).get("net_arch") or SB3_DEFAULT_NET_ARCH.get(row.sb3_algo, "?")
    if "n_epochs" in settings:  # on-policy: n_epochs passes over each rollout in minibatches
        sb3 = (f"SB3 {row.sb3_algo} {width} wide, {settings.get('n_envs', 1)} envs × {settings['n_steps']} steps a rollout, "
               f"batch {settings['batch_size']}, {per_env_step(settings['n_epochs'] / settings['batch_size'])}")
    else:
        sb3 = (f"SB3 {row.sb3_algo} {width} wide, batch {settings['batch_size']}, {per_env_step(gradient_steps_per_env_step(settings))}, "
               f"{settings['learning_starts']:,d} warm-up steps")
        if "exploration_fraction" in settings:  # the DQN family's target network: a copy now and then, counted in env steps
            sb3 += f", target moved by {settings['tau']:g} every {settings['target_update_interval']:,d} env steps"
            train_freq = train_freq_steps(settings)
            if settings["target_update_interval"] < train_freq:  # it moves while SB3 collects, not between gradient steps
                sb3 += f" of collection (in effect between bursts of {train_freq:,d} env steps' gradient steps)"
            sb3 += clipping(settings["max_grad_norm"])
    ours = []
    for name in row.agents:
        args = Arguments(agent=getattr(agent_module, name)(**row.agent_kwargs), env=row.env_id, if_print=False, **row.elegantrl_args)
        args.check()  # fills what the run would take: the tuned entry, then the family's defaults
        if args.if_on_policy:
            epochs = max(1, round(args.repeat_times))
            ours.append(f"elegantrl {name} [{args.net_dim}, {args.net_dim}] wide, {args.num_envs} envs × {args.target_step} steps a "
                        f"rollout, batch {args.batch_size}, {per_env_step(epochs / args.batch_size)}")
        else:
            gap = args.agent.target_update_gap
            envs = f", {args.num_envs} envs × {args.target_step} steps a round" if args.num_envs > 1 else ""
            ours.append(f"elegantrl {name} [{args.net_dim}, {args.net_dim}] wide{envs}, batch {args.batch_size}, "
                        f"{per_env_step(args.repeat_times / args.batch_size)}, {args.warmup_steps:,d} warm-up steps, "
                        f"target moved by {args.soft_update_tau:.3g} every " + (f"{gap:,d} gradient steps" if gap > 1 else "gradient step")
                        + (clipping(args.agent.max_grad_norm) if "exploration_fraction" in settings else ""))
    return "; ".join([sb3, *ours])


def per_env_step(steps: float) -> str:
    """``steps`` gradient steps per env step, in words: "1 gradient step per env step", "0.5 gradient steps per env step"."""
    count = f"{steps:.3g}"
    return f"{count} gradient step{'' if count == '1' else 's'} per env step"


def clipping(max_grad_norm: float | None) -> str:
    """How a DQN-family side of a "Work per env step" line clips its gradient."""
    return ", gradient not clipped" if max_grad_norm is None else f", gradient clipped at norm {max_grad_norm:g}"


def plot_curves(name: str, row: Row, results: list[dict[str, Any]], curves: dict[tuple, list[tuple]], path: str) -> None:
    """Both libraries' learning curves on one axis: the median over seeds and the interquartile band.

    A run's return between evaluations is its last evaluation's, and after its end (at the target's
    hold, or the budget) it stays at its final one, so that every seed counts at every step; each
    curve stops where its longest run stopped, so that a flat line never stands for steps not trained.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4))
    FigureCanvasAgg(figure)
    axis = figure.add_subplot()
    end = max((point[0] for curve in curves.values() for point in curve), default=0)
    grid = np.linspace(0, end, 200)
    for run_name in dict.fromkeys(label(r) for r in results):
        keys = [(r["library"], r["agent"], r["seed"]) for r in results if label(r) == run_name and curves.get((r["library"], r["agent"], r["seed"]))]
        if not keys:
            continue
        steps, low, middle, high = curve_band([curves[key] for key in keys], grid)
        axis.plot(steps, middle, label=f"{run_name} ({len(keys)} seeds)")
        axis.fill_between(steps, low, high, alpha=0.2)
    axis.axhline(row.target, color="gray", linestyle="--", linewidth=1, label=f"target {row.target:g}")
    axis.set(xlabel="env steps", ylabel="evaluation return (median, IQR)", title=f"{name}: {row.env_id}")
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def plot_ratios(bars: list[tuple[str, bool, tuple[float, float, float], tuple[float, float, float]]], path: str) -> None:
    """One horizontal bar per (label, matched, wall-time ratio, env-steps ratio), wall time and env steps side by side.

    Each ratio is (ratio, low, high) as `ratio_of_medians` returns it. A bar runs from 1 to the
    ratio, so that its direction tells who won before its length is read, and the whiskers are the
    interval; the axis is logarithmic because 0.5 and 2 are the same distance from a tie. The first
    bar is drawn at the top, in the order of the table it summarises.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    styles = {False: dict(color="tab:blue", label="as users run them"),
              True: dict(color="tab:orange", hatch="//", label="matched compute")}
    height = 1.9 + 0.32 * len(bars)  # inches: the titles, axis labels and legend, then a fixed pitch per bar
    figure = Figure(figsize=(11, height))
    FigureCanvasAgg(figure)
    # one x scale for both panels, so that a bar's length compares across them too
    axes = figure.subplots(1, 2, sharey=True, sharex=True)
    positions = np.arange(len(bars))
    every = np.array([bar[2 + column] for bar in bars for column in (0, 1)], dtype=float)  # (2 * bars, 3)
    every = every[np.isfinite(every).all(axis=1)]
    # a little room past the widest interval, and never narrower than 0.5-2 so that a tie looks like one
    low_end = min(every[:, 1].min(), 0.5) if len(every) else 0.5
    high_end = max(every[:, 2].max(), 2.0) if len(every) else 2.0
    for column, (axis, title) in enumerate(zip(axes, ["wall time to target", "env steps to target"])):
        ratios = np.array([bar[2 + column] for bar in bars], dtype=float)  # (bars, 3): ratio, low, high
        for matched, style in styles.items():
            chosen = np.array([bar[1] == matched for bar in bars]) & np.isfinite(ratios[:, 0])
            if not chosen.any():
                continue
            value, low, high = ratios[chosen].T
            axis.barh(positions[chosen], value - 1, left=1, height=0.7, color=style["color"], alpha=0.75,
                      hatch=style.get("hatch"), edgecolor="white" if "hatch" in style else None)
            # a percentile interval need not hold the sample's own ratio (a skewed few seeds), and matplotlib refuses negative whiskers
            axis.errorbar(value, positions[chosen], xerr=np.clip([value - low, high - value], 0, None), fmt="none", ecolor="black",
                          elinewidth=1, capsize=3)
        axis.axvline(1, color="black", linewidth=1)
        axis.set_xscale("log")
        axis.set_xlim(low_end / 1.5, high_end * 1.5)
        axis.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
        axis.xaxis.set_minor_formatter(NullFormatter())
        axis.grid(axis="x", which="major", alpha=0.3)
        axis.set_title(f"{title}: elegantrl / SB3", fontsize=10)
        axis.set_xlabel("ratio of medians, 90% bootstrap interval (log; < 1: elegantrl better)", fontsize=8)
    axes[0].set_yticks(positions, [bar[0] for bar in bars], fontsize=8)
    axes[0].set_ylim(len(bars) - 0.5, -0.5)  # the first bar at the top
    used = [style for matched, style in styles.items() if any(bar[1] == matched for bar in bars)]
    # above the panels rather than inside one, where it would hide a bar whatever corner it took
    figure.legend(handles=[Patch(facecolor=s["color"], alpha=0.75, hatch=s.get("hatch"), edgecolor="white", label=s["label"])
                           for s in used], fontsize=8, loc="upper center", ncol=len(used), frameon=False)
    figure.tight_layout(rect=(0, 0, 1, 1 - 0.3 / height))
    figure.savefig(path, dpi=100)


def curve_band(runs: list[list[tuple]], grid: np.ndarray) -> tuple[np.ndarray, ...]:
    """The grid steps up to the longest run's last evaluation, and the 25th, 50th and 75th percentiles
    over `runs` there; a run that ended sooner counts at its final return."""
    steps = grid[grid <= max(curve[-1][0] for curve in runs)]
    values = np.array([step_values(curve, steps) for curve in runs])
    with warnings.catch_warnings():  # the steps before the first evaluation are NaN in every run, by design
        warnings.simplefilter("ignore", RuntimeWarning)
        return (steps, *np.nanpercentile(values, [25, 50, 75], axis=0))


def step_values(curve: list[tuple], grid: np.ndarray) -> np.ndarray:
    """The curve's return at each grid step: the last evaluation at or before it (nan before the first)."""
    steps = np.array([point[0] for point in curve])
    returns = np.array([point[2] for point in curve])
    index = np.searchsorted(steps, grid, side="right") - 1
    return np.where(index >= 0, returns[np.clip(index, 0, None)], np.nan)


def write_report(name: str, row: Row, budget: int, results: list[dict[str, Any]], out: str, command: str, jobs: int = 1,
                 note: str = "") -> str:
    """Writes ``out/<row>.csv`` (one line per run) and ``out/<row>.md``, with `note` under the command; returns the tables."""
    os.makedirs(out, exist_ok=True)
    curves = {(r["library"], r["agent"], r["seed"]): r.pop("curve", []) for r in results}
    with open(os.path.join(out, f"{name}.csv"), "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=["row", "env_id", "target", "budget", *results[0]])
        writer.writeheader()
        writer.writerows({"row": name, "env_id": row.env_id, "target": row.target, "budget": budget, **r} for r in results)
    with open(os.path.join(out, f"{name}-curves.csv"), "w", newline="") as file:  # every evaluation of every run: the raw data
        writer = csv.writer(file)
        writer.writerow(["library", "agent", "seed", "step", "seconds", "return_mean"])
        writer.writerows([*key, *point] for key, curve in curves.items() for point in curve)
    plot_curves(name, row, results, curves, os.path.join(out, f"{name}.png"))
    body = tables(results)
    sb3_budget = min(budget, row.sb3_budget or budget)
    hyperparams = ", ".join(f"{k}={v}" for k, v in row.sb3_hyperparams(sb3_budget).items())
    with open(os.path.join(out, f"{name}.md"), "w") as file:
        file.write(
            f"# {name}: {row.env_id}, target {row.target:g}, budget {budget:,d} env steps"
            f"{f' (SB3: {sb3_budget:,d})' if sb3_budget < budget else ''}\n\n"
            f"- Command: `{command}`\n"
            + (f"- Note: {note}\n" if note else "") +
            f"- Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}\n"
            f"- Machine: {machine()}\n"
            f"- Evaluation: {row.eval_episodes} deterministic episodes every {row.eval_gap:,d} env steps on a separate env "
            f"(episode seeds from elegantrl.run.evaluation_seeds, the same for both); wall time excludes evaluation; "
            f"a run trains on to {TARGET_HOLD:g}× the env step of its first hit; one torch thread per job; "
            f"{'one job at a time' if jobs == 1 else f'{jobs} jobs at a time, one per core'}.\n"
            f"- SB3 {row.sb3_algo} (rl-baselines3-zoo): {hyperparams}{'; ' + row.sb3_note if row.sb3_note else ''}\n"
            f"- elegantrl: each agent's built-in settings ({built_in_settings(row)})"
            f"{', plus ' + str(row.elegantrl_args) if row.elegantrl_args else ''}"
            f"{', agent arguments ' + str(row.agent_kwargs) if row.agent_kwargs else ''}.\n"
            f"- Work per env step{' (matched compute)' if row.matched else ''}: {work_per_env_step(row, sb3_budget)}.\n\n"
            + body
        )
    return body


def finish_row(name: str, budget: int, results: list[dict[str, Any]], out: str, command: str, jobs: int, note: str = "") -> None:
    """Adds the ratios to a row's results, writes its report and prints its tables."""
    row = ROWS[name]
    add_ratios(results)
    print(f"\n## {name}: {row.env_id}, target {row.target:g}, budget {budget:,d}\n\n"
          + write_report(name, row, budget, results, out, command, jobs, note))
