"""What exploration worker processes buy: elegantrl's `train_and_evaluate_mp` against itself in one process.

Three measurements, each a row with its own report in ``benchmarks/results/<row>.md`` and ``.csv``:

- ``workers-explore-throughput`` (`run_explore_throughput`): env steps per second delivered to a
  learner that does no gradient steps, with 1 and 2 worker processes, in the lockstep and the
  asynchronous learner loop, against one process calling ``agent.explore_env`` itself.
- ``workers-learner-throughput`` (`run_learner_throughput`): SAC gradient steps per second of the
  asynchronous learner loop while one worker process explores, against ``agent.update_net`` alone.
- ``workers-sac-lunarlandercontinuous``, ``workers-ppo-lunarlander``, ``workers-sac-pendulum``
  (`TRAINER_ROWS`): wall time to a target return, ``train_and_evaluate_mp`` with 2 workers against
  ``train_and_evaluate``, same seeds, same evaluation, each job in a fresh interpreter, one at a time.

Both probes drive the real machinery of ``elegantrl/parallel.py``: the `Learner` of
`train_multiprocess`, started without an Evaluator (``start(..., with_evaluator=False)``), with its
worker processes, shared slots and weights, and its own loop (``run_rounds``) (`LearnerRig`).

    python benchmarks/workers.py --rows workers-explore-throughput workers-learner-throughput
    python benchmarks/workers.py --rows workers-sac-pendulum --seeds 0 1 2

The issue's goals: 2 workers deliver at least 1.7× the env steps/s of 1; the learner keeps at least
0.9 of its updates/s beside a worker; 2 workers reach the LunarLander targets in at most 0.85× the
one-process wall time on two cores. The reports give the numbers; the sentence on when workers pay
and when they do not goes in with ``--note`` once all three time-to-target rows are in.

It reuses the benchmarks package's report pieces (`machine`, `median`, `ratio_cells`, `summarise`, ...) and rows
(env, target, budget and elegantrl settings of ``sac-pendulum``, ``sac-lunarlandercontinuous``,
``ppo-lunarlander``).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import functools
import json
import os
import pickle
import shlex
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

import torch
import torch.multiprocessing

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository, for `import benchmarks`
from benchmarks.cli import check_distinct_seeds, positive_int, random_seed  # noqa: E402
from benchmarks.report import fmt, machine, median, source_commit  # noqa: E402
from benchmarks.rows import HERE, ROWS, Row  # noqa: E402
from benchmarks.runner import Job, commit_problem, fresh_job_folder, summarise, write_job_record  # noqa: E402
from benchmarks.throughput import per_second, ratio_cells, write_throughput_report  # noqa: E402
from elegantrl import agent as agent_module
from elegantrl.agent import AgentBase, AgentSAC
from elegantrl.env import PreprocessEnv, env_recipe
from elegantrl.parallel import Learner
from elegantrl.run import (
    Arguments,
    agent_init_kwargs,
    build_agent,
    train_and_evaluate,
    train_and_evaluate_mp,
)
from elegantrl.tuned import tuned_entry

NEVER = 2**62  # an eval_gap beyond every budget: the probes' learner never hands a snapshot to an Evaluator
LOCKSTEP, ASYNC = "lockstep", "async"


# ---- the learner side of train_multiprocess, without an Evaluator -----------------------------


class LearnerRig:
    """`rollout_num` real worker processes and the real `Learner`, built as `train_multiprocess` builds them.

    The agent is `AgentSAC` with its defaults (net_dim 128, batch 256, target_step 64 per env) unless
    `fields` (extra `Arguments` fields) say otherwise. Differences from a training run, all outside the
    loop being timed: no Evaluator process (eval_gap is `NEVER`, so the learner never hands off), no
    warm-up (every round explores with the policy), and two slots per worker so that the same workers
    serve both the lockstep and the asynchronous loop. Use it as a context manager: leaving it stops
    the workers.
    """

    def __init__(self, env_id: str, rollout_num: int, folder: str, seed: int = 0, **fields: Any):
        """Starts the workers and waits until each has built its env and agent."""
        args = Arguments(agent=AgentSAC(), env=PreprocessEnv(env_id), random_seed=seed, cwd=folder, if_remove=True, device="cpu",
                         num_threads=1, if_print=False, rollout_num=rollout_num, warmup_steps=0, eval_gap=NEVER,
                         max_memo=2**17, if_async_workers=True, **fields)  # async: two slots a worker, for both loops
        args.init_before_training()
        # in train_multiprocess's order: the workers' blueprint is the agent before build_agent gives it networks
        self.recipe, self.blueprint = env_recipe(args.env), pickle.dumps(args.agent)
        self.seed = build_agent(args)
        self.init_kwargs = agent_init_kwargs(args, device="cpu")
        self.args, self.agent = args, args.agent
        self.learner = Learner(args, self.seed)
        self.processes = self.learner.processes
        try:
            self.learner.start((self.recipe, self.recipe), self.blueprint, with_evaluator=False)  # returns once they all started
        except BaseException:
            self.close()
            raise

    def segment(self, steps: int, mode: str) -> int:
        """Runs the Learner's own loop (lockstep or async) until `steps` more env steps are learned from; returns them.

        A segment is a short training run: the budget (`break_step`) ends it, so the async loop starts
        with its slots empty and ends with them drained, as a run does.
        """
        before = self.agent.total_steps
        self.args.break_step = before + steps
        self.args.if_async_workers = mode == ASYNC  # the lockstep loop uses the first slot of each worker
        self.learner.run_rounds()  # without Learner.run's final evaluation, which needs an Evaluator
        return self.agent.total_steps - before

    def single_process_explorer(self) -> Callable[[int], int]:
        """The one-process baseline: a worker's own agent and env, stepped by ``explore_env`` in this process.

        Built as `worker_main` builds them (blueprint, the same ``init`` arguments, the env recipe); returns
        a function that explores rounds of `target_step` per env until `steps` env steps and returns them.
        """
        agent: AgentBase = pickle.loads(self.blueprint)
        agent.init(**self.init_kwargs)
        env = self.recipe()
        agent.reset_exploration(env, self.seed)
        horizon = self.args.target_step

        def explore(steps: int) -> int:
            before = agent.total_steps
            while agent.total_steps - before < steps:
                agent.explore_env(env, horizon)
            return agent.total_steps - before
        return explore

    def close(self) -> None:
        """Stops the workers (no orphans)."""
        self.processes.shutdown(grace=5.0)

    def __enter__(self) -> LearnerRig:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


# ---- (1) exploration throughput: 1 and 2 workers against one process --------------------------


def run_explore_throughput(out: str, command: str, repeats: int, work_dir: str, steps: int = 4096,
                           env_id: str = "BipedalWalker-v3") -> bool:
    """Measures env steps per second delivered to a learner that does no gradient steps, 1 and 2 workers.

    Two rigs (`LearnerRig`, AgentSAC defaults, 1 env per worker) with 1 and 2 workers; the learner's
    ``repeat_times`` is 1e-9, so `store_and_update` stores every rollout in the replay buffer and
    publishes the weights each round as in training, but no rollout ever pays for a gradient step.
    Per repeat, interleaved: one process (``explore_env`` in rounds of target_step), then for the
    lockstep and the async loop, 1 worker and 2 workers; `steps` env steps per timing, `repeats`
    timings of each after a warm-up. Writes ``out/workers-explore-throughput.md`` and ``.csv``.
    """
    torch.set_num_threads(1)
    name = "workers-explore-throughput"
    records: list[dict[str, Any]] = []
    folder = os.path.join(work_dir, name)
    with LearnerRig(env_id, 1, os.path.join(folder, "rig1"), repeat_times=1e-9) as rig1, \
            LearnerRig(env_id, 2, os.path.join(folder, "rig2"), repeat_times=1e-9) as rig2:
        cases: list[tuple[str, int, Callable[[int], int]]] = [("one process", 0, rig1.single_process_explorer())]  # 0 worker processes
        for mode in (LOCKSTEP, ASYNC):
            cases += [(mode, rig.args.rollout_num, functools.partial(rig.segment, mode=mode)) for rig in (rig1, rig2)]
        for _, _, explore in cases:  # warm-up: first-call costs, the buffers' pages, the workers' first weights
            explore(steps // 4)
        for repeat in range(repeats):
            for loop, workers, explore in cases:
                rate = per_second(functools.partial(explore, steps))
                records.append(dict(env_id=env_id, loop=loop, workers=workers, repeat=repeat, steps_per_s=rate))
                case = f"{loop}, {workers} worker(s)" if workers else loop
                print(f"[{name} repeat {repeat}] {case}: {rate:,.0f} env steps/s", flush=True)
        target_step = rig1.args.target_step

    def rates(loop: str, workers: int) -> list[float]:
        return [r["steps_per_s"] for r in records if r["loop"] == loop and r["workers"] == workers]

    single = rates("one process", 0)
    against_one = ["| learner loop | workers | env steps/s delivered | one process env steps/s | ratio of medians "
                   "| per-pair ratios: median (quartiles) |", "|---|---|---|---|---|---|"]
    two_to_one = ["| learner loop | 2 workers env steps/s | 1 worker env steps/s | ratio of medians 2 / 1 (goal ≥ 1.7) "
                  "| per-pair ratios: median (quartiles) |", "|---|---|---|---|---|"]
    for loop in (LOCKSTEP, ASYNC):
        for workers in (1, 2):
            against_one.append(f"| {loop} | {workers} | {ratio_cells(rates(loop, workers), single)} |")
        two_to_one.append(f"| {loop} | {ratio_cells(rates(loop, 2), rates(loop, 1))} |")
    table = ("Against one process:\n\n" + "\n".join(against_one) + "\n\n2 workers against 1:\n\n" + "\n".join(two_to_one) + "\n")
    setup = (
        f"- Setup: {env_id}, AgentSAC with its defaults (net_dim 128, target_step {target_step} per env), 1 env per worker, "
        "CPU, one torch thread per process.\n"
        "- Workers: the real `elegantrl.parallel` machinery: `worker_main` processes (spawn) started by `Processes`, "
        "rollouts in `shared_rollout` slots, weights through `SharedWeights`, driven by the real `Learner` loop "
        "(`Learner.run_rounds`, lockstep or async, one call per timing, its budget ending the call). The learner does no gradient steps "
        "(repeat_times 1e-9) but does all the rest: receives, copies the slots, stores in its replay buffer, publishes the weights. "
        "No Evaluator process. The number is env steps learned from per second of the loop.\n"
        "- One process: the same agent and env built as a worker builds them, `agent.explore_env(env, target_step)` in a loop "
        "in the measuring process (no storing).\n"
        f"- Timing: a warm-up of each, then {repeats} repeats interleaved (one process, lockstep 1 and 2 workers, async 1 and 2 "
        f"workers), {steps:,d} env steps per timing; medians over repeats; the ratio is of the medians; the per-pair ratios "
        "compare neighbouring timings (median and interquartile range).\n\n"
    )
    write_throughput_report(name, "env steps per second delivered by 1 and 2 exploration workers, and by one process",
                            records, setup, table, out, command)
    return True


# ---- (2) learner throughput: SAC updates while a worker explores, against the learner alone ------


def run_learner_throughput(out: str, command: str, repeats: int, work_dir: str, steps: int = 1024,
                           env_id: str = "BipedalWalker-v3", prefill: int = 10_000) -> bool:
    """Measures SAC gradient steps per second while one worker explores asynchronously, against the learner alone.

    One rig (`LearnerRig`, 1 worker, AgentSAC defaults: net_dim 128, batch 256, repeat_times 128,
    target_step 64), its replay buffer prefilled with `prefill` random transitions. Interleaved, after a
    warm-up of each: "with a worker" is one call of the Learner's async loop over `steps` env steps
    (the worker explores into the shared slots while the learner receives, stores, does the gradient
    steps they pay for and publishes the weights); "alone" is ``agent.update_net(buffer, steps)``, the
    same number of gradient steps on the same agent and buffer, the worker idle. Writes
    ``out/workers-learner-throughput.md`` and ``.csv``.
    """
    torch.set_num_threads(1)
    name = "workers-learner-throughput"
    records: list[dict[str, Any]] = []
    with LearnerRig(env_id, 1, os.path.join(work_dir, name)) as rig:
        agent, buffer, args = rig.agent, rig.learner.buffer, rig.args
        agent.reset_exploration(args.env, rig.seed)
        buffer.extend(agent.explore_env(args.env, prefill, if_random=True))  # as the warm-up would

        def with_worker(env_steps: int = steps) -> int:
            before = agent.update_count
            rig.segment(env_steps, ASYNC)
            return agent.update_count - before

        def alone(env_steps: int = steps) -> int:
            before = agent.update_count
            agent.update_net(buffer, env_steps)  # the gradient steps that `env_steps` new transitions pay for, as in a segment
            return agent.update_count - before

        cases = (("with 1 worker exploring", with_worker), ("alone", alone))
        for _, update in cases:
            update(steps // 4)
        for repeat in range(repeats):
            for case, update in cases:
                rate = per_second(update)
                records.append(dict(env_id=env_id, net_dim=args.net_dim, case=case, repeat=repeat, updates_per_s=rate))
                print(f"[{name} repeat {repeat}] {case}: {rate:.1f} updates/s", flush=True)
        settings = (f"net_dim {args.net_dim}, batch {args.batch_size}, repeat_times {args.repeat_times:g}, "
                    f"target_step {args.target_step}")

    with_rates = [r["updates_per_s"] for r in records if r["case"] != "alone"]
    alone_rates = [r["updates_per_s"] for r in records if r["case"] == "alone"]
    table = ("| updates/s with 1 worker exploring | updates/s alone | ratio of medians (goal ≥ 0.9) | per-pair ratios: median (quartiles) |\n"
             f"|---|---|---|---|\n| {ratio_cells(with_rates, alone_rates)} |\n")
    setup = (
        f"- Setup: {env_id}, AgentSAC with its defaults ({settings}), its `ReplayBuffer` prefilled with {prefill:,d} random "
        "transitions; CPU, one torch thread per process.\n"
        "- With 1 worker exploring: one real `worker_main` process (1 env) and the real `Learner.run_rounds` async loop, one call per "
        f"timing over {steps:,d} env steps: the worker explores into two `shared_rollout` slots while the learner receives, copies, "
        "stores, runs `agent.update_net` for the gradient steps the rollouts pay for, and publishes the weights through "
        "`SharedWeights`. A timing includes the wait for its first rollout (one rollout of target_step env steps: tens of milliseconds). "
        "No Evaluator process.\n"
        f"- Alone: `agent.update_net(buffer, {steps})` on the same agent and buffer, the same number of gradient steps, the "
        "worker idle.\n"
        f"- Timing: a warm-up of each, then {repeats} repeats interleaved (with a worker, alone, ...); updates/s counts critic "
        "gradient steps; medians over repeats; the ratio is of the medians; the per-pair ratios compare neighbouring timings.\n\n"
    )
    write_throughput_report(name, "SAC learner updates per second while a worker explores, against the learner alone",
                            records, setup, table, out, command)
    return True


# ---- (3) wall time to target: train_and_evaluate_mp against train_and_evaluate ---------------

ONE_PROCESS, WORKERS_LOCKSTEP, WORKERS_ASYNC = "one-process", "workers-lockstep", "workers-async"
TRAINERS = (ONE_PROCESS, WORKERS_LOCKSTEP, WORKERS_ASYNC)
ROLLOUT_NUM = 2


@dataclass(frozen=True)
class TrainerRow:
    """One time-to-target comparison of the trainers, on the env and settings of a benchmark row (benchmarks/rows.py)."""

    base: str  # the benchmark row (rows.py) giving the env, target, budget, eval_episodes, elegantrl_args and agent_kwargs
    agent: str  # an elegantrl.agent class name
    trainers: tuple[str, ...]  # ONE_PROCESS first: the others' ratios are to it
    eval_gap: int | None = None  # None: the base row's

    @property
    def row(self) -> Row:
        """The benchmark row this one shares its settings with."""
        return ROWS[self.base]

    @property
    def gap(self) -> int:
        """Env steps between evaluations."""
        return self.eval_gap or self.row.eval_gap


TRAINER_ROWS: dict[str, TrainerRow] = {
    # eval_gap 1,000 for the off-policy rows, as the issue asks (the SB3 row evaluates every 5,000)
    "workers-sac-lunarlandercontinuous": TrainerRow("sac-lunarlandercontinuous", "AgentSAC", TRAINERS, eval_gap=1000),
    "workers-ppo-lunarlander": TrainerRow("ppo-lunarlander", "AgentDiscretePPO", (ONE_PROCESS, WORKERS_LOCKSTEP)),
    "workers-sac-pendulum": TrainerRow("sac-pendulum", "AgentSAC", TRAINERS),
}


def trainer_fields(trainer_row: TrainerRow, trainer: str) -> dict[str, Any]:
    """The `Arguments` fields a trainer adds to the base row's: for the workers, rollout_num and the envs per worker.

    The envs are split, not doubled: the base row's 16 envs in one process become 2 workers × 8, so a
    round collects the same transitions and an on-policy update sees the same batch. An off-policy row
    with 1 env gets 1 env per worker (2 in all): the same gradient steps per env step either way.
    """
    fields = dict(trainer_row.row.elegantrl_args)
    if trainer == ONE_PROCESS:
        return fields
    # the envs of one process: the row's own, else the tuned entry's (ppo-lunarlander's 16), else the family's 1
    _, tuned = tuned_entry(getattr(agent_module, trainer_row.agent)(), trainer_row.row.env_id)
    num_envs = fields.get("num_envs") or tuned.get("num_envs") or 1
    return {**fields, "rollout_num": ROLLOUT_NUM, "num_envs": max(1, num_envs // ROLLOUT_NUM),
            "if_async_workers": trainer == WORKERS_ASYNC}


def run_job(job_json: str) -> None:
    """Entry point of a job subprocess: trains one run (a `benchmark.Job` whose `library` names the trainer)."""
    job = Job(**json.loads(job_json))
    torch.set_num_threads(1)
    trainer_row = TRAINER_ROWS[job.row]
    row = trainer_row.row
    args = Arguments(
        agent=getattr(agent_module, job.agent)(**row.agent_kwargs), env=PreprocessEnv(row.env_id), random_seed=job.seed,
        cwd=job.folder, if_remove=True, device="cpu", num_threads=1, if_print=False,
        eval_times1=row.eval_episodes, eval_times2=0, eval_gap=trainer_row.gap, break_step=job.budget,
        target_return=row.target, **trainer_fields(trainer_row, job.library),
    )
    (train_and_evaluate if job.library == ONE_PROCESS else train_and_evaluate_mp)(args)


def launch_job(job: Job) -> None:
    """Runs `job` in a fresh interpreter and writes ``job.folder/job.json``: exit status, wall seconds from start to exit,
    and the commit that ran it."""
    fresh_job_folder(job.folder)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([HERE, *filter(None, [os.environ.get("PYTHONPATH")])])}
    # `python -c`, not this script: spawned workers import the main script again, and this one would also import
    # Stable-Baselines3 (through the benchmarks package) in each of them at start-up, which a user's training script does not
    command = [sys.executable, "-c", "import sys, workers; workers.run_job(sys.argv[1])", json.dumps(asdict(job))]
    commit, start = source_commit(), time.perf_counter()
    returncode = subprocess.run(command, env=env).returncode
    write_job_record(job, commit, returncode=returncode, job_seconds=time.perf_counter() - start)


def job_result(job: Job, target: float) -> dict[str, Any]:
    """One result line: the benchmark's summary of the job's recorder.csv (without the stability figures and the
    curve: these runs stop at the target), plus the job's own wall seconds."""
    path = os.path.join(job.folder, "job.json")
    outcome = {"returncode": None, "job_seconds": float("nan")}
    if os.path.isfile(path):
        with open(path) as file:
            outcome = json.load(file)
    result = summarise(job, target, outcome["returncode"] == 0)
    for key in ("curve", "later_evaluations", "later_held", "fell", "finished"):
        result.pop(key)
    return {"trainer": result.pop("library"), **result, "job_seconds": outcome["job_seconds"]}


def trainer_jobs(name: str, seed: int, budget: int, work_dir: str, trainers: tuple[str, ...]) -> list[Job]:
    """The jobs of one row and seed, in the order they run (one process first)."""
    agent = TRAINER_ROWS[name].agent
    return [Job(name, trainer, agent, seed, budget, os.path.join(work_dir, name, f"{trainer}-seed{seed}")) for trainer in trainers]


def run_trainer_rows(names: list[str], seeds: list[int], budget: int | None, trainers: list[str] | None, out: str,
                     work_dir: str, command: str, note: str, report_only: bool = False) -> bool:
    """Runs (or, with `report_only`, only reports) each row's trainers per seed, one job at a time; False on any error.

    Per seed the trainers run back to back, so a drift in machine speed hits them alike. With
    `report_only`, a seed counts only if every one of its jobs finished, and the report's Note names
    the seeds left out (for a run that was stopped); jobs that ran at another commit are refused (`commit_problem`).
    """
    ok = True
    for name in names:
        trainer_row = TRAINER_ROWS[name]
        row_trainers = tuple(t for t in trainer_row.trainers if trainers is None or t in trainers or t == ONE_PROCESS)
        row_budget = budget or trainer_row.row.budget
        results, missing = [], []
        for seed in seeds:
            jobs = trainer_jobs(name, seed, row_budget, work_dir, row_trainers)
            if report_only and not all(os.path.isfile(os.path.join(job.folder, "job.json")) for job in jobs):
                missing.append(seed)
                continue
            for job in jobs:
                if not report_only:
                    launch_job(job)
                results.append(job_result(job, trainer_row.row.target))
                r = results[-1]
                print(f"[{name} seed {seed}] {job.library}: {r['status']} at {fmt(r['steps'], 0)} env steps, {fmt(r['seconds'])} s "
                      f"(job {fmt(r['job_seconds'])} s), best {fmt(r['best_return'])}", flush=True)
        if not results:
            print(f"{name}: no seed has finished all its jobs in {work_dir}", file=sys.stderr)
            ok = False
            continue
        if report_only and (problem := commit_problem(name, [job for seed in seeds if seed not in missing for job in
                                                               trainer_jobs(name, seed, row_budget, work_dir, row_trainers)], work_dir)):
            print(problem, file=sys.stderr)
            ok = False
            continue
        row_note = f"Rebuilt from the finished jobs' run folders; seeds {missing} had not finished and are left out. {note}" if missing else note
        baseline = {r["seed"]: r["seconds"] for r in results if r["trainer"] == ONE_PROCESS}
        for r in results:
            r["seconds_ratio"] = r["seconds"] / baseline[r["seed"]] if r["trainer"] != ONE_PROCESS else float("nan")
        print(f"\n## {name}\n\n" + write_trainer_report(name, row_budget, results, out, command, row_note.strip()))
        ok = ok and all(r["status"] != "error" for r in results)
    return ok


TRAINER_LABELS = {ONE_PROCESS: "one process", WORKERS_LOCKSTEP: f"{ROLLOUT_NUM} workers, lockstep",
                  WORKERS_ASYNC: f"{ROLLOUT_NUM} workers, async"}


def trainer_tables(results: list[dict[str, Any]]) -> str:
    """The summary (medians over seeds, ratio of medians to one process) and the per-seed table, in markdown."""
    columns = [("steps", 0), ("seconds", 1), ("job_seconds", 1), ("best_return", 1), ("seconds_ratio", 2)]
    summary = ["| trainer | success | env steps to target | wall s to target | job wall s | best return | time ratio to one "
               "process: median of seeds | ratio of medians |", "|---|---|---|---|---|---|---|---|"]
    base_seconds = median([r["seconds"] for r in results if r["trainer"] == ONE_PROCESS])
    for trainer in dict.fromkeys(r["trainer"] for r in results):
        runs = [r for r in results if r["trainer"] == trainer]
        successes = sum(r["status"] == "reached" for r in runs)
        ratio = fmt(median([r["seconds"] for r in runs]) / base_seconds, 2) if trainer != ONE_PROCESS else "–"
        cells = [fmt(median([r[key] for r in runs]), digits) for key, digits in columns]
        summary.append(f"| {TRAINER_LABELS[trainer]} | {successes}/{len(runs)} | " + " | ".join(cells) + f" | {ratio} |")
    per_seed = ["| trainer | seed | status | env steps | wall s | job wall s | best return | time ratio |", "|---|---|---|---|---|---|---|---|"]
    for r in sorted(results, key=lambda r: r["seed"]):
        cells = [fmt(r[key], digits) for key, digits in columns]
        per_seed.append(f"| {TRAINER_LABELS[r['trainer']]} | {r['seed']} | {r['status']} | " + " | ".join(cells) + " |")
    return ("Medians over seeds. A run that never reaches the target counts at the full budget (read a ratio with the success "
            "column). A time ratio under 1 means the workers reached the target sooner.\n\n"
            + "\n".join(summary) + "\n\nPer seed (time ratio: this trainer / one process, same seed):\n\n" + "\n".join(per_seed) + "\n")


def write_trainer_report(name: str, budget: int, results: list[dict[str, Any]], out: str, command: str, note: str) -> str:
    """Writes ``out/<name>.csv`` (one line per run) and ``out/<name>.md``; returns the tables."""
    trainer_row = TRAINER_ROWS[name]
    row = trainer_row.row
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{name}.csv"), "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=["row", "env_id", "target", "budget", *results[0]])
        writer.writeheader()
        writer.writerows({"row": name, "env_id": row.env_id, "target": row.target, "budget": budget, **r} for r in results)
    body = trainer_tables(results)
    trainers = list(dict.fromkeys(r["trainer"] for r in results))
    settings = "; ".join(f"{TRAINER_LABELS[t]}: {trainer_fields(trainer_row, t) or 'none'}" for t in trainers)
    with open(os.path.join(out, f"{name}.md"), "w") as file:
        file.write(
            f"# {name}: {trainer_row.agent.removeprefix('Agent')} on {row.env_id}, target {row.target:g}, budget {budget:,d} env "
            f"steps: {ROLLOUT_NUM} exploration workers against one process\n\n"
            f"- Command: `{command}`\n" + (f"- Note: {note}\n" if note else "")
            + f"- Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}\n"
            f"- Machine: {machine()}\n"
            f"- Trainers: one process is `train_and_evaluate(args)`; workers are `train_and_evaluate_mp(args)` with rollout_num "
            f"{ROLLOUT_NUM} (each a process with its own envs), the learner in the job's process and an Evaluator process; "
            f"lockstep (the default) or `if_async_workers=True`. Same run seeds (workers explore with seeds derived from it, "
            f"so their curves differ from one process's), agent and settings: {trainer_row.agent}"
            f"{'(' + str(row.agent_kwargs) + ')' if row.agent_kwargs else ''} with its own defaults plus the fields of "
            f"the benchmark's `{trainer_row.base}` row, and per trainer: {settings}.\n"
            f"- Evaluation, the same for all: {row.eval_episodes} deterministic episodes (eval_times1={row.eval_episodes}, "
            f"eval_times2=0) every {trainer_row.gap:,d} env steps on a separate env, episode seeds from "
            "`elegantrl.run.evaluation_seeds(seed, step)`; the run stops at the first evaluation reaching the target. One torch "
            "thread per process; one job at a time, each in a fresh interpreter.\n"
            "- Clocks (`wall s` is recorder.csv's `seconds`): one process: training time, evaluation excluded, from just after the "
            "agent is built. Workers: the learner's wall time when it handed the Evaluator the snapshot that reached the target, "
            "from just before the Evaluator and worker processes are started (their start-up is included). Evaluation runs in "
            "the Evaluator process, off the learner's clock but on the same cores, so while it runs it slows the learner and the "
            "workers; and it takes the newest snapshot when free, so it may skip some and reach the target a little later. "
            "`job wall s`: the whole job, interpreter start to exit, start-up and evaluation included, for every trainer.\n\n"
            + body
        )
    return body


# ---- the command line ------------------------------------------------------------------------

THROUGHPUT_ROWS: dict[str, Callable[..., bool]] = {
    "workers-explore-throughput": run_explore_throughput,
    "workers-learner-throughput": run_learner_throughput,
}


def main() -> int:
    """The command line: run the chosen rows."""
    parser = argparse.ArgumentParser(description="What exploration worker processes buy: elegantrl's train_and_evaluate_mp "
                                                 "against itself in one process (see the module docstring).")
    every_row = [*THROUGHPUT_ROWS, *TRAINER_ROWS]
    parser.add_argument("--rows", nargs="+", choices=every_row, default=every_row, help="rows to run (default: all; hours)")
    parser.add_argument("--seeds", nargs="+", type=random_seed, default=[0, 1, 2], help="seeds of the time-to-target rows (default: 0 1 2)")
    parser.add_argument("--budget", type=positive_int, default=None, help="env steps per run, overriding each row's budget (for smoke tests)")
    parser.add_argument("--trainers", nargs="+", choices=TRAINERS[1:], default=None,
                        help="worker trainers to run beside one process in the time-to-target rows (default: each row's)")
    parser.add_argument("--repeats", type=positive_int, default=30, help="timings per case in the throughput rows (default: 30)")
    parser.add_argument("--steps", type=positive_int, default=None,
                        help="env steps per timing in the throughput rows (default: 4096 explore, 1024 learner; for smoke tests)")
    parser.add_argument("--note", default="", help="a sentence for the time-to-target reports' Note line (e.g. how to read them)")
    parser.add_argument("--out", default=os.path.join(HERE, "results"), help="where the .md and .csv reports go (default: benchmarks/results)")
    parser.add_argument("--work-dir", default=os.path.join(HERE, "runs"), help="run folders (default: benchmarks/runs, git-ignored)")
    parser.add_argument("--report-only", action="store_true",
                        help="train nothing: rewrite the time-to-target reports from the finished jobs in --work-dir")
    options = parser.parse_args()
    check_distinct_seeds(parser, options.seeds)
    command = "python " + shlex.join(sys.argv)
    training = [name for name in options.rows if name in TRAINER_ROWS]
    ok = True
    if training:
        ok = run_trainer_rows(training, options.seeds, options.budget, options.trainers, options.out, options.work_dir, command,
                              options.note, options.report_only)
    for name in options.rows:  # timings last, so that no training job runs beside them
        if name in THROUGHPUT_ROWS and not options.report_only:
            steps = {} if options.steps is None else {"steps": options.steps}
            ok = THROUGHPUT_ROWS[name](options.out, command, options.repeats, options.work_dir, **steps) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
