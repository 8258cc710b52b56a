"""Side-by-side benchmark of elegantrl against Stable-Baselines3, in one run, on one machine.

Each row of `ROWS` names an env, a target return, a budget of env steps, the SB3 baseline (with
the rl-baselines3-zoo hyperparameters) and the elegantrl agents to compare with it. For every
seed the SB3 job runs first, then each elegantrl agent, each job in a fresh interpreter, one at a
time. Both libraries are evaluated the same way: every `eval_gap` env steps the deterministic
policy plays `eval_episodes` episodes on a separate env whose episode seeds come from
``np.random.default_rng(seed + 1)``, with the clock paused; a run stops at the first evaluation
whose mean return reaches the target.

    python benchmarks/benchmark.py --rows dqn-cartpole --seeds 0 1 2

writes ``benchmarks/results/<row>.md`` (tables, command, machine) and ``<row>.csv`` (one line per
run). See benchmarks/README.md for the protocol and how to add a row.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import stable_baselines3
import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env

HERE = os.path.dirname(os.path.abspath(__file__))
SB3 = "sb3"
OURS = "elegantrl"


# ---- the rows --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One comparison: an env and target, a budget, the SB3 baseline and the elegantrl agents.

    `sb3_hyperparams(budget)` returns the keyword arguments of the SB3 algorithm class (plus an
    optional ``n_envs``); it takes the budget so that schedules written as fractions of the zoo's
    own ``n_timesteps`` can be kept in env steps when our budget differs.
    """

    env_id: str
    target: float
    budget: int  # env steps; a run that has not reached the target by then has failed
    sb3_algo: str  # a class name in stable_baselines3, e.g. "DQN"
    sb3_hyperparams: Callable[[int], dict[str, Any]]
    agents: tuple[str, ...]  # class names in elegantrl.agent, e.g. "AgentD3QN"
    eval_gap: int = 1000  # env steps between evaluations
    eval_episodes: int = 10
    sb3_note: str = ""  # how the zoo's settings were adapted, printed in the report
    elegantrl_args: dict[str, Any] = field(default_factory=dict)  # extra `Arguments` fields, if any


def zoo_dqn_cartpole(budget: int) -> dict[str, Any]:
    """SB3 DQN on CartPole-v1 as rl-baselines3-zoo tunes it (hyperparams/dqn.yml, n_timesteps 5e4).

    SB3 anneals epsilon over `exploration_fraction` of the steps passed to ``learn()``. The zoo's
    0.16 of 5e4 steps means epsilon reaches its floor after 8,000 env steps; we keep those 8,000
    steps whatever our budget, so a longer budget does not slow SB3's exploration schedule.
    """
    zoo_timesteps, zoo_fraction = 50_000, 0.16
    return dict(
        policy="MlpPolicy",
        learning_rate=2.3e-3,
        batch_size=64,
        buffer_size=100_000,
        learning_starts=1000,
        gamma=0.99,
        target_update_interval=10,
        train_freq=256,
        gradient_steps=128,
        exploration_fraction=zoo_fraction * zoo_timesteps / budget,
        exploration_final_eps=0.04,
        policy_kwargs=dict(net_arch=[256, 256]),
    )


ROWS: dict[str, Row] = {
    "dqn-cartpole": Row(
        env_id="CartPole-v1",
        target=475.0,
        budget=100_000,
        sb3_algo="DQN",
        sb3_hyperparams=zoo_dqn_cartpole,
        agents=("AgentDQN", "AgentDoubleDQN", "AgentDuelingDQN", "AgentD3QN"),
        sb3_note="exploration_fraction = 0.16 × 50,000 / budget: epsilon reaches 0.04 after 8,000 env steps, as in the zoo's 5e4-step run",
    ),
}


# ---- one training job (runs in its own interpreter) ------------------------------------------


@dataclass
class Job:
    """What one subprocess trains; it writes its evaluations to ``folder/recorder.csv``."""

    row: str
    library: str  # SB3 or OURS
    agent: str  # the SB3 algorithm or the elegantrl agent class name
    seed: int
    budget: int
    folder: str


class TargetCallback(BaseCallback):
    """Evaluates an SB3 model the way elegantrl's Evaluator does, and stops at the target.

    Every `eval_gap` env steps it pauses the clock, plays `episodes` deterministic episodes on its
    own env, resumes the clock, and records (step, training seconds, mean, std). Training stops
    (``_on_step`` returns False) at the first evaluation whose mean reaches `target`, or at `budget`.
    """

    def __init__(self, env_id: str, target: float, budget: int, eval_gap: int, episodes: int, seed: int):
        """Builds the evaluation env and the episode-seed generator."""
        super().__init__()
        self.eval_env = gym.make(env_id)
        self.target, self.budget, self.eval_gap, self.episodes = target, budget, eval_gap, episodes
        self.rng = np.random.default_rng(seed + 1)  # the same episode seeds as elegantrl's Evaluator
        self.next_eval_step = eval_gap
        self.records: list[dict[str, float]] = []
        self.start_time = self.eval_seconds = 0.0

    def _on_training_start(self) -> None:
        """Starts the clock once the model and its buffer are built, as elegantrl's Evaluator does."""
        self.start_time = time.perf_counter()

    def _episode_return(self) -> float:
        """The return of one deterministic episode on the evaluation env."""
        obs, _ = self.eval_env.reset(seed=int(self.rng.integers(2**31)))
        total, done = 0.0, False
        while not done:
            action, _ = self.model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, _ = self.eval_env.step(action)
            total += float(reward)
            done = terminated or truncated
        return total

    def _on_step(self) -> bool:
        """Evaluates on the cadence (or at the budget); returns False to stop training."""
        at_budget = self.num_timesteps >= self.budget
        if self.num_timesteps < self.next_eval_step and not at_budget:
            return True
        # A fixed cadence in env steps that stays on multiples of eval_gap with vectorised envs.
        self.next_eval_step = (self.num_timesteps // self.eval_gap + 1) * self.eval_gap
        start = time.perf_counter()
        returns = [self._episode_return() for _ in range(self.episodes)]
        self.eval_seconds += time.perf_counter() - start
        seconds = time.perf_counter() - self.start_time - self.eval_seconds
        mean = float(np.mean(returns))
        self.records.append(dict(step=self.num_timesteps, seconds=seconds, return_mean=mean, return_std=float(np.std(returns))))
        return mean < self.target and not at_budget


def train_sb3(job: Job, row: Row) -> None:
    """Trains the row's SB3 baseline and writes its evaluations to ``job.folder/recorder.csv``."""
    hyperparams = row.sb3_hyperparams(job.budget)
    env = make_vec_env(row.env_id, n_envs=hyperparams.pop("n_envs", 1), seed=job.seed)
    model = getattr(stable_baselines3, row.sb3_algo)(env=env, seed=job.seed, device="cpu", verbose=0, **hyperparams)
    callback = TargetCallback(row.env_id, row.target, job.budget, row.eval_gap, row.eval_episodes, job.seed)
    model.learn(total_timesteps=job.budget, callback=callback)
    with open(os.path.join(job.folder, "recorder.csv"), "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=list(callback.records[0]))
        writer.writeheader()
        writer.writerows(callback.records)


def train_elegantrl(job: Job, row: Row) -> None:
    """Trains one elegantrl agent; its Evaluator writes ``job.folder/recorder.csv`` itself."""
    from elegantrl import agent as agent_module
    from elegantrl.env import PreprocessEnv
    from elegantrl.run import Arguments, train_and_evaluate

    args = Arguments(
        agent=getattr(agent_module, job.agent)(), env=PreprocessEnv(row.env_id), random_seed=job.seed,
        cwd=job.folder, if_remove=True, device="cpu", num_threads=1, if_print=False,
        eval_times1=row.eval_episodes, eval_times2=0,  # no confirmation episodes: SB3 gets none either
        eval_gap=row.eval_gap, break_step=job.budget, target_return=row.target, **row.elegantrl_args,
    )
    train_and_evaluate(args)


def run_job(job: Job) -> None:
    """Entry point of a job subprocess: one thread for torch, then train."""
    torch.set_num_threads(1)  # both libraries get one core; the other is left for the OS
    row = ROWS[job.row]
    (train_sb3 if job.library == SB3 else train_elegantrl)(job, row)


# ---- running the jobs and summarising them ---------------------------------------------------


def launch(job: Job) -> bool:
    """Runs `job` in a fresh interpreter and waits for it; returns whether it exited cleanly."""
    shutil.rmtree(job.folder, ignore_errors=True)
    os.makedirs(job.folder)
    # One thread for numpy/BLAS too, so neither library steals the second core.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    command = [sys.executable, os.path.abspath(__file__), "--job", json.dumps(asdict(job))]
    return subprocess.run(command, env=env).returncode == 0


def summarise(job: Job, target: float, ok: bool) -> dict[str, Any]:
    """One result line from the job's ``recorder.csv``: status, steps and seconds to target, returns.

    A run that never reaches the target counts at its full budget: the step and training seconds
    of its last evaluation (taken at the budget). A job that crashed has status "error".
    """
    result: dict[str, Any] = dict(library=job.library, agent=job.agent, seed=job.seed, status="error", steps=math.nan,
                                  seconds=math.nan, best_return=math.nan, final_return=math.nan, evaluations=0)
    path = os.path.join(job.folder, "recorder.csv")
    records = []
    if ok and os.path.isfile(path):
        with open(path, newline="") as file:
            records = [{key: float(value) for key, value in line.items()} for line in csv.DictReader(file)]
    if not records:
        return result
    hit = next((record for record in records if record["return_mean"] >= target), None)
    end = hit or records[-1]
    result.update(status="reached" if hit else "failed", steps=int(end["step"]), seconds=end["seconds"],
                  best_return=max(r["return_mean"] for r in records), final_return=records[-1]["return_mean"],
                  evaluations=len(records))
    return result


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


def tables(results: list[dict[str, Any]]) -> str:
    """The summary table (medians over seeds) and the per-seed table, in markdown."""
    columns = [("steps", 0), ("seconds", 1), ("best_return", 1), ("final_return", 1), ("steps_ratio", 2), ("seconds_ratio", 2)]
    summary = ["| run | success | env steps to target | wall s to target | best return | final return "
               "| steps ratio ours/SB3 | time ratio ours/SB3 |", "|---|---|---|---|---|---|---|---|"]
    for name in dict.fromkeys(label(r) for r in results):  # in order of first appearance
        runs = [r for r in results if label(r) == name]
        successes = sum(r["status"] == "reached" for r in runs)
        cells = [fmt(median([r[key] for r in runs]), digits) for key, digits in columns]
        summary.append(f"| {name} | {successes}/{len(runs)} | " + " | ".join(cells) + " |")
    per_seed = ["| run | seed | status | env steps | wall s | best return | final return | steps ratio | time ratio |",
                "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(results, key=lambda r: r["seed"]):
        cells = [fmt(r[key], digits) for key, digits in columns]
        per_seed.append(f"| {label(r)} | {r['seed']} | {r['status']} | " + " | ".join(cells) + " |")
    return ("Medians over seeds. A run that never reaches the target counts at the full budget, so a ratio "
            "with a failed run of ours is a lower bound (read it with the success column).\n\n"
            + "\n".join(summary) + "\n\nPer seed (ratios are ours / SB3 on the same seed):\n\n" + "\n".join(per_seed) + "\n")


def machine() -> str:
    """The machine and the library versions, for the report."""
    cpu = platform.processor() or "unknown CPU"
    if os.path.isfile("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as file:
            cpu = next((line.split(":", 1)[1].strip() for line in file if line.startswith("model name")), cpu)
    commit = subprocess.run(["git", "-C", HERE, "describe", "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
    return (f"{len(os.sched_getaffinity(0))} CPUs (nproc), {cpu}; Python {platform.python_version()}, torch {torch.__version__}, "
            f"stable-baselines3 {stable_baselines3.__version__}, gymnasium {gym.__version__}, elegantrl at git {commit or 'unknown'}")


def write_report(name: str, row: Row, budget: int, results: list[dict[str, Any]], out: str, command: str) -> str:
    """Writes ``out/<row>.csv`` (one line per run) and ``out/<row>.md``; returns the tables."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{name}.csv"), "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=["row", "env_id", "target", "budget", *results[0]])
        writer.writeheader()
        writer.writerows({"row": name, "env_id": row.env_id, "target": row.target, "budget": budget, **r} for r in results)
    body = tables(results)
    hyperparams = ", ".join(f"{k}={v}" for k, v in row.sb3_hyperparams(budget).items())
    with open(os.path.join(out, f"{name}.md"), "w") as file:
        file.write(
            f"# {name}: {row.env_id}, target {row.target:g}, budget {budget:,d} env steps\n\n"
            f"- Command: `{command}`\n"
            f"- Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}\n"
            f"- Machine: {machine()}\n"
            f"- Evaluation: {row.eval_episodes} deterministic episodes every {row.eval_gap:,d} env steps on a separate env "
            f"(episode seeds from default_rng(seed + 1)); wall time excludes evaluation; one torch thread; one job at a time.\n"
            f"- SB3 {row.sb3_algo} (rl-baselines3-zoo): {hyperparams}{'; ' + row.sb3_note if row.sb3_note else ''}\n"
            f"- elegantrl: each agent's own defaults{', plus ' + str(row.elegantrl_args) if row.elegantrl_args else ''}.\n\n"
            + body
        )
    return body


def run_row(name: str, seeds: list[int], budget: int | None, out: str, work_dir: str, command: str) -> bool:
    """Runs every job of one row, interleaved per seed; writes the report; returns False on any error."""
    row = ROWS[name]
    budget = budget or row.budget
    runs = [(SB3, row.sb3_algo)] + [(OURS, agent) for agent in row.agents]
    results = []
    for seed in seeds:  # interleaved per seed, so a drift in machine speed hits both libraries alike
        for library, agent in runs:
            job = Job(name, library, agent, seed, budget, os.path.join(work_dir, name, f"{library}-{agent}-seed{seed}"))
            result = summarise(job, row.target, launch(job))
            results.append(result)
            print(f"[{name} seed {seed}] {label(result)}: {result['status']} at {fmt(result['steps'], 0)} env steps, "
                  f"{fmt(result['seconds'])} s, best {fmt(result['best_return'])}", flush=True)
    add_ratios(results)
    print(f"\n## {name}: {row.env_id}, target {row.target:g}, budget {budget:,d}\n\n" + write_report(name, row, budget, results, out, command))
    return all(r["status"] != "error" for r in results)


def main() -> int:
    """The command line: run the chosen rows, or (internally) one training job."""
    parser = argparse.ArgumentParser(description="Benchmark elegantrl against Stable-Baselines3, side by side.")
    parser.add_argument("--rows", nargs="+", choices=list(ROWS), default=list(ROWS), help="rows to run (default: all)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="seeds (default: 0 1 2)")
    parser.add_argument("--budget", type=int, default=None, help="env steps per run, overriding each row's budget (for smoke tests)")
    parser.add_argument("--out", default=os.path.join(HERE, "results"), help="where the .md and .csv reports go (default: benchmarks/results)")
    parser.add_argument("--work-dir", default=os.path.join(HERE, "runs"), help="run folders of the jobs (default: benchmarks/runs, git-ignored)")
    parser.add_argument("--job", help=argparse.SUPPRESS)  # internal: the JSON of one Job, run in this process
    options = parser.parse_args()
    if options.job:
        run_job(Job(**json.loads(options.job)))
        return 0
    command = "python " + shlex.join(sys.argv)
    ok = [run_row(name, options.seeds, options.budget, options.out, options.work_dir, command) for name in options.rows]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
