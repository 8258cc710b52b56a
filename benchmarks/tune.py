"""The sweeps behind the tuned settings in `elegantrl.tuned`: candidate settings on seeds 100 and up.

Each candidate is a set of `Arguments` fields (and optionally agent arguments) given as JSON; every
(candidate, seed) trains in its own single-threaded interpreter, `--jobs` at a time, with the same
evaluation as the benchmark (10 deterministic episodes every `--eval-gap` env steps, clock paused),
and stops at the target or the budget. The report gives, per candidate, the success rate and the
medians of env steps and training seconds to the target, and is written to
``benchmarks/results/tune/tune-<agent>-<env>.md`` with the command that made it.

With ``--hold 2`` a run that reaches the target trains on to twice that env step, as the benchmark's
runs do, and the report adds their stability: the share of evaluations after the first hit at or
above the target, and the runs that fell below ``target - |target| / 2``. Use it to choose settings
that keep what they learn, not only those that get there first.

    python benchmarks/tune.py --agent AgentQRDQN --env LunarLander-v3 --target 200 --budget 300000 \\
        --eval-gap 10000 --seeds 100 101 102 --jobs 2 \\
        --candidate defaults '{}' --candidate wide '{"net_dim": 256, "gamma": 0.995}'

A change to the code, not to a setting, is swept as an agent class of `benchmarks/variants.py`
(``--agent AgentPPOLayerStart``), so that its report, too, comes from a clean commit.

Seeds below 100 are refused here: the benchmark reports seeds 0-4 (some rows 0-9), and no setting is chosen on them.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
if __package__ in (None, ""):  # run as `python benchmarks/tune.py`: the benchmarks package is one folder up
    sys.path.insert(0, os.path.dirname(HERE))
PROTOCOL_FIELDS = {"random_seed", "cwd", "if_remove", "device", "num_threads", "if_print", "eval_times1", "eval_times2", "eval_gap",
                   "break_step", "target_return", "target_hold"}  # the same for every candidate, set by `train`
REPORTED_SEEDS = range(0, 100)  # the benchmark reports seeds 0-4; tuning keeps well away from them


def arguments(agent: str, env_id: str, fields: dict[str, Any], agent_kwargs: dict[str, Any], seed: int, budget: int,
              target: float, eval_gap: int, folder: str, hold: float = 1.0) -> Any:
    """The `Arguments` of one run: the benchmark's elegantrl job, stopping at `hold` times the first hit's env step."""
    from benchmarks.variants import agent_class
    from elegantrl.run import Arguments

    args = Arguments(agent=agent_class(agent)(**agent_kwargs), env=env_id, random_seed=seed, cwd=folder, if_remove=True, device="cpu",
                     num_threads=1, if_print=False, eval_times1=10, eval_times2=0, eval_gap=eval_gap, break_step=budget,
                     target_return=target, target_hold=hold)
    for name, value in fields.items():  # one by one: a typo gets Arguments' "has no field ...; did you mean ...?"
        if name in args.__dataclass_fields__ and not args.__dataclass_fields__[name].init:
            raise ValueError(f"{name!r} is set by the run itself, not by a candidate")
        setattr(args, name, value)
    return args


def train(**job: Any) -> None:
    """One training run, in this process, of the `arguments` that `job` names."""
    import torch

    from elegantrl.run import train_and_evaluate

    torch.set_num_threads(1)
    train_and_evaluate(arguments(**job))


def read_candidates(parser: argparse.ArgumentParser, pairs: list[list[str]]) -> dict[str, dict[str, Any]]:
    """The --candidate NAME JSON pairs as {name: settings}; a parse error for bad JSON, a non-object or a repeated name."""
    candidates: dict[str, dict[str, Any]] = {}
    for name, text in pairs:
        try:
            settings = json.loads(text)
        except json.JSONDecodeError as error:
            parser.error(f"--candidate {name}: {text!r} is not JSON ({error}); write e.g. '{{\"net_dim\": 256}}'")
        if not isinstance(settings, dict) or not isinstance(settings.get("agent_kwargs", {}), dict):
            parser.error(f"--candidate {name}: the settings are a JSON object of Arguments fields, with the agent's arguments as an "
                         f"object under \"agent_kwargs\", got {text!r}")
        if name in candidates:  # a dict would keep only the last of them, silently
            parser.error(f"--candidate {name} is named twice; give each candidate its own name")
        clash = sorted(set(settings) & PROTOCOL_FIELDS)
        if clash:
            parser.error(f"candidate {name!r} sets {clash}, which tune.py sets itself: use --eval-gap, --budget, --target, --seeds")
        candidates[name] = settings
    return candidates


def job_of(options: argparse.Namespace, name: str, settings: dict[str, Any], seed: int) -> dict[str, Any]:
    """The keyword arguments of `arguments` for one (candidate, seed)."""
    folder = os.path.join(options.work_dir, f"{options.agent}-{options.env}", f"{name}-seed{seed}")
    return dict(agent=options.agent, env_id=options.env, fields={k: v for k, v in settings.items() if k != "agent_kwargs"},
                agent_kwargs=settings.get("agent_kwargs", {}), seed=seed, budget=options.budget, target=options.target,
                eval_gap=options.eval_gap, folder=folder, hold=options.hold)


def run_one(options: argparse.Namespace, name: str, settings: dict[str, Any], seed: int) -> dict[str, Any]:
    """Trains one (candidate, seed) in a fresh interpreter and summarises its ``recorder.csv``."""
    job = job_of(options, name, settings, seed)
    folder = job["folder"]
    from benchmarks.cli import job_environment

    env = job_environment(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--job", json.dumps(job)], env=env)
    from benchmarks.runner import OURS, Job, summarise  # imported by main() before the first run: this is a lookup

    summary = summarise(Job(f"tune-{options.env}", OURS, options.agent, seed, options.budget, folder), options.target, done.returncode == 0)
    result = dict(candidate=name, **{key: summary[key] for key in ("seed", "status", "steps", "seconds", "best_return",
                                                                 "later_evaluations", "later_held", "fell")})
    print(f"[{name} seed {seed}] {result['status']} at {result['steps']:,.0f} env steps, {result['seconds']:.1f} s, "
          f"best {result['best_return']:.1f}", flush=True)
    return result


def git_commit() -> str:
    """The commit this tree is at, "-dirty" if it has changes: the sweep is tied to the code it ran."""
    done = subprocess.run(["git", "-C", HERE, "describe", "--always", "--dirty"], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def report(options: argparse.Namespace, candidates: dict[str, dict[str, Any]], results: list[dict[str, Any]], command: str) -> str:
    """The markdown report: one line per candidate (medians; failed runs count at the budget), then per seed."""
    hold = options.hold > 1
    lines = [f"# Tuning {options.agent} on {options.env}: target {options.target:g}, budget {options.budget:,d} env steps", "",
             f"- Command: `{command}`",
             f"- Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}; elegantrl at git {git_commit()}",
             f"- Seeds {', '.join(map(str, options.seeds))} (tuning seeds; the benchmark reports seeds 0-4); "
             f"10 deterministic episodes every {options.eval_gap:,d} env steps; one torch thread a job, {options.jobs} job(s) at a time.",
             "- Settings not named are the agent family's defaults (and, where it has one, the tuned entry for this env).",
             f"- A run that reaches the target trains on to {options.hold:g}× that env step; the stability columns count the evaluations "
             "after the first hit, pooled over the candidate's runs, and the runs with one below target - |target| / 2." if hold else
             "- A run stops at its first evaluation at or above the target.", "",
             "| candidate | settings | success | median env steps | median training s | median best return |"
             + (" held after the hit | runs that fell |" if hold else ""), "|---|---|---|---|---|---|" + ("---|---|" if hold else "")]
    for name, settings in candidates.items():
        runs = [r for r in results if r["candidate"] == name]
        cells = [statistics.median(r[key] for r in runs) for key in ("steps", "seconds", "best_return")]
        success = sum(r["status"] == "reached" for r in runs)
        line = f"| {name} | `{json.dumps(settings)}` | {success}/{len(runs)} | {cells[0]:,.0f} | {cells[1]:.1f} | {cells[2]:.1f} |"
        if hold:
            later, held = sum(r["later_evaluations"] for r in runs), sum(r["later_held"] for r in runs)
            line += f" {held / later:.0%} ({held}/{later}) |" if later else " – |"
            line += f" {sum(r['fell'] for r in runs)}/{success} |"
        lines.append(line)
    lines += ["", "| candidate | seed | status | env steps | training s | best return |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['candidate']} | {r['seed']} | {r['status']} | {r['steps']:,.0f} | {r['seconds']:.1f} | {r['best_return']:.1f} |"
              for r in results]
    return "\n".join(lines) + "\n"


def main() -> int:
    """The command line (see the module docstring)."""
    from benchmarks.cli import check_distinct_seeds, end_with_runner, finite_float, positive_int, random_seed

    parser = argparse.ArgumentParser(description="Sweep candidate settings of one elegantrl agent on one env, on tuning seeds.")
    parser.add_argument("--agent", help="an elegantrl.agent class name, e.g. AgentQRDQN, or one from benchmarks/variants.py")
    parser.add_argument("--env", help="a Gymnasium env id")
    parser.add_argument("--target", type=finite_float, help="the target return")
    parser.add_argument("--budget", type=positive_int, help="env steps per run")
    parser.add_argument("--eval-gap", type=positive_int, default=1000, help="env steps between evaluations (default: 1000)")
    parser.add_argument("--seeds", nargs="+", type=random_seed, default=[100, 101, 102], help="tuning seeds, 100 and up (default: 100 101 102)")
    parser.add_argument("--candidate", nargs=2, action="append", metavar=("NAME", "JSON"), default=[],
                        help='a candidate: a name and its settings as JSON, e.g. wide \'{"net_dim": 256}\'; '
                             'agent arguments go under "agent_kwargs"')
    parser.add_argument("--hold", type=float, default=1.0,
                        help="train on to this multiple of the first hit's env step and report stability after it (default: 1, stop at the hit)")
    parser.add_argument("--name", default="", help="a suffix for the report's file name, e.g. seed102")
    parser.add_argument("--jobs", type=positive_int, default=1, help="runs at once, each a single-threaded process (default: 1)")
    parser.add_argument("--out", default=os.path.join(HERE, "results", "tune"), help="where the report goes (default: benchmarks/results/tune)")
    parser.add_argument("--work-dir", default=os.path.join(HERE, "runs", "tune"), help="run folders (default: benchmarks/runs/tune)")
    parser.add_argument("--job", help=argparse.SUPPRESS)  # internal: one run, as JSON
    options = parser.parse_args()
    if options.job:
        end_with_runner()
        train(**json.loads(options.job))
        return 0
    missing = [flag for flag in ("agent", "env", "target", "budget") if getattr(options, flag) is None]
    if missing:
        parser.error("the following arguments are required: " + ", ".join("--" + flag for flag in missing))
    if not options.candidate:
        parser.error("name at least one --candidate NAME JSON, e.g. --candidate defaults '{}'")
    if not (math.isfinite(options.hold) and options.hold >= 1):
        parser.error(f"--hold is a multiple of the first hit's env step, a finite number of 1 or more (got {options.hold})")
    import benchmarks.runner  # noqa: F401  (needs SB3: fail here, not after the first run; a --job subprocess does without it)
    from benchmarks.variants import agent_class

    try:
        agent_class(options.agent)
    except ValueError as error:
        parser.error(str(error))
    if any(seed in REPORTED_SEEDS for seed in options.seeds):
        parser.error(f"tune on seeds 100 and up; seeds below 100 are kept for the reported benchmark (got {options.seeds})")
    check_distinct_seeds(parser, options.seeds)
    candidates = read_candidates(parser, options.candidate)
    for name, settings in candidates.items():  # here, once, with elegantrl's message: not once per seed in every job
        try:
            arguments(**job_of(options, name, settings, options.seeds[0])).check()  # validates, touching no file
        except (TypeError, ValueError, AttributeError, ImportError) as error:  # ImportError: an env whose extra is missing (box2d)
            parser.error(f"--candidate {name} (with --agent {options.agent} --env {options.env}): {error}")
    pairs = [(name, seed) for seed in options.seeds for name in candidates]
    with concurrent.futures.ThreadPoolExecutor(max_workers=options.jobs) as pool:
        results = list(pool.map(lambda pair: run_one(options, pair[0], candidates[pair[0]], pair[1]), pairs))
    text = report(options, candidates, results, "python " + shlex.join(sys.argv))
    os.makedirs(options.out, exist_ok=True)
    name = f"tune-{options.agent.removeprefix('Agent').lower()}-{options.env.lower()}" + (f"-{options.name}" if options.name else "")
    with open(os.path.join(options.out, name + ".md"), "w") as file:
        file.write(text)
    print("\n" + text)
    return 0 if all(r["status"] != "error" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
