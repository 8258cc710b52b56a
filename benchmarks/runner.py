"""Running the jobs: each (library, agent, seed) trains in a fresh single-threaded interpreter, one at a time or one per core."""

from __future__ import annotations

import concurrent.futures
import csv
import io
import json
import math
import os
import queue
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.noise import NormalActionNoise
from stable_baselines3.common.vec_env import VecNormalize

from benchmarks.cli import end_with_runner, job_environment
from benchmarks.report import finish_row, fmt, label, source_commit
from benchmarks.rows import OURS, ROOT, ROWS, SB3, TARGET_HOLD, Row, sb3_class
from elegantrl.run import RUN_FILE

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
    core: int | None = None  # the CPU the job's process pins itself to (several jobs at once), or None


class TargetCallback(BaseCallback):
    """Evaluates an SB3 model the way elegantrl's Evaluator does, and stops where elegantrl's `target_hold` stops.

    Every `eval_gap` env steps it pauses the clock, plays `episodes` deterministic episodes on its
    own env, resumes the clock, and records (step, training seconds, mean, std). Once an evaluation's
    mean has reached `target` at env step h, training goes on to the first env step at or past
    ``hold × h``, is evaluated there, and stops (``_on_step`` returns False); or at `budget`.
    """

    def __init__(self, env_id: str, target: float, budget: int, eval_gap: int, episodes: int, seed: int, hold: float = TARGET_HOLD):
        """Builds the evaluation env and the episode-seed generator."""
        super().__init__()
        self.eval_env = gym.make(env_id)
        self.target, self.budget, self.eval_gap, self.episodes = target, budget, eval_gap, episodes
        self.seed, self.hold = seed, hold
        self.hit_step: int | None = None
        self.next_eval_step = eval_gap
        self.records: list[dict[str, float]] = []
        self.start_time = self.eval_seconds = 0.0

    def _on_training_start(self) -> None:
        """Starts the clock once the model and its buffer are built, as elegantrl's Evaluator does."""
        self.start_time = time.perf_counter()

    def _episode_return(self, seed: int) -> float:
        """The return of one deterministic episode on the evaluation env, reset with `seed`."""
        obs, _ = self.eval_env.reset(seed=seed)
        normalizer = self.model.get_vec_normalize_env()  # the zoo's `normalize: true`: the policy sees normalised states
        total, done = 0.0, False
        while not done:
            action, _ = self.model.predict(normalizer.normalize_obs(obs) if normalizer else obs, deterministic=True)
            obs, reward, terminated, truncated, _ = self.eval_env.step(action)
            total += float(reward)
            done = terminated or truncated
        return total

    def _on_step(self) -> bool:
        """Evaluates on the cadence (or at the budget, or at the hold's end); returns False to stop training."""
        at_budget = self.num_timesteps >= self.budget
        if self.num_timesteps < self.next_eval_step and not at_budget and not self._held():
            return True
        # A fixed cadence in env steps that stays on multiples of eval_gap with vectorised envs.
        self.next_eval_step = (self.num_timesteps // self.eval_gap + 1) * self.eval_gap
        start = time.perf_counter()
        from elegantrl.run import evaluation_seeds  # the same episode seeds as elegantrl's Evaluator

        returns = [self._episode_return(seed) for seed in evaluation_seeds(self.seed, self.num_timesteps, self.eval_gap, self.episodes)]
        self.eval_seconds += time.perf_counter() - start
        seconds = time.perf_counter() - self.start_time - self.eval_seconds
        mean = float(np.mean(returns))
        self.records.append(dict(step=self.num_timesteps, seconds=seconds, return_mean=mean, return_std=float(np.std(returns))))
        if mean >= self.target and self.hit_step is None:
            self.hit_step = self.num_timesteps
        return not (at_budget or self._held())

    def _held(self) -> bool:
        return self.hit_step is not None and self.num_timesteps >= self.hold * self.hit_step


def train_sb3(job: Job, row: Row) -> Any:
    """Trains the row's SB3 baseline, writes its evaluations to ``job.folder/recorder.csv``, returns the model."""
    hyperparams = row.sb3_hyperparams(job.budget)
    env = make_vec_env(row.env_id, n_envs=hyperparams.pop("n_envs", 1), seed=job.seed)
    if hyperparams.pop("normalize", False):  # as the zoo does: observations and rewards, returns discounted by gamma
        env = VecNormalize(env, gamma=hyperparams.get("gamma", 0.99))
    if "noise_std" in hyperparams:  # the zoo's action-noise keys, built as the zoo builds them
        if hyperparams.pop("noise_type") != "normal":
            raise ValueError("only the zoo's noise_type 'normal' is supported here")
        sigma = hyperparams.pop("noise_std") * np.ones(env.action_space.shape)
        hyperparams["action_noise"] = NormalActionNoise(mean=np.zeros(env.action_space.shape), sigma=sigma)
    model = sb3_class(row.sb3_algo)(env=env, seed=job.seed, device="cpu", verbose=0, **hyperparams)
    callback = TargetCallback(row.env_id, row.target, job.budget, row.eval_gap, row.eval_episodes, job.seed, TARGET_HOLD)
    model.learn(total_timesteps=job.budget, callback=callback)
    with open(os.path.join(job.folder, "recorder.csv"), "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=list(callback.records[0]))
        writer.writeheader()
        writer.writerows(callback.records)
    return model


def train_elegantrl(job: Job, row: Row) -> None:
    """Trains one elegantrl agent; its Evaluator writes ``job.folder/recorder.csv`` itself."""
    from elegantrl import agent as agent_module
    from elegantrl.env import PreprocessEnv
    from elegantrl.run import Arguments, train_and_evaluate

    args = Arguments(
        agent=getattr(agent_module, job.agent)(**row.agent_kwargs), env=PreprocessEnv(row.env_id), random_seed=job.seed,
        cwd=job.folder, if_remove=True, device="cpu", num_threads=1, if_print=False,
        eval_times1=row.eval_episodes, eval_times2=0,  # no confirmation episodes: SB3 gets none either
        eval_gap=row.eval_gap, break_step=job.budget, target_return=row.target, target_hold=TARGET_HOLD, **row.elegantrl_args,
    )
    train_and_evaluate(args)


def run_job(job: Job) -> None:
    """Entry point of a job subprocess: pinned to its core if it has one, one thread for torch, then train."""
    end_with_runner()
    if job.core is not None:
        os.sched_setaffinity(0, {job.core})
    torch.set_num_threads(1)  # both libraries get one core; the other is left for the OS
    row = ROWS[job.row]
    (train_sb3 if job.library == SB3 else train_elegantrl)(job, row)


# ---- running the jobs and summarising them ---------------------------------------------------


def job_folder_files(path: str) -> list[str]:
    """The files of an earlier job in its run folder at `path` (an elegantrl run's, SB3's recorder.csv, job.json;
    none where nothing is there). A folder that holds anything else is not a job's: FileExistsError."""
    if not os.path.lexists(path):
        return []
    names = os.listdir(path) if os.path.isdir(path) and not os.path.islink(path) else None
    strangers = [name for name in names or () if not ((RUN_FILE.fullmatch(name) or name == "job.json")
                                                     and os.path.isfile(os.path.join(path, name))
                                                     and not os.path.islink(os.path.join(path, name)))]
    if names is None or strangers:
        what = f"it holds {strangers}" if names is not None else "it is a file or a link, not a folder"
        raise FileExistsError(f"{path} is not a benchmark job's run folder ({what}): nothing was deleted. Move it away, "
                              f"or choose another --work-dir")
    return names


def fresh_job_folder(path: str) -> None:
    """Makes a job's run folder at `path`, emptied of an earlier job's files (`job_folder_files`); one that holds
    anything else is refused, deleting nothing, so that a --work-dir pointed at a folder of the user's loses nothing."""
    for name in job_folder_files(path):
        os.remove(os.path.join(path, name))
    os.makedirs(path, exist_ok=True)


def launch(job: Job, core: int | None = None) -> bool:
    """Runs `job` in a fresh interpreter, which pins itself to `core` if given, and waits for it; returns whether it exited cleanly.

    The child pins itself (`run_job`): a ``preexec_fn`` is not safe in a process with threads, and the
    jobs are launched from a thread pool.
    """
    fresh_job_folder(job.folder)
    # One thread for numpy/BLAS too, so neither library steals the second core.
    env = job_environment(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([ROOT, *filter(None, [env.get("PYTHONPATH")])])  # for `-m benchmarks` from any folder
    command = [sys.executable, "-m", "benchmarks", "--job", json.dumps({**asdict(job), "core": core})]
    commit, returncode = source_commit(), None  # the code the job loads now, before a commit made meanwhile moves HEAD
    try:
        returncode = subprocess.run(command, env=env).returncode
    finally:  # a job stopped with the runner still records what ran, for --report-only
        write_job_record(job, commit, returncode=returncode)
    return returncode == 0


def write_job_record(job: Job, commit: str, **fields: Any) -> None:
    """Writes ``job.folder/job.json`` once the job has ended: `fields` and `commit`, the `source_commit` of the code
    it ran (read as it started), which --report-only checks before it describes the run with this code's row settings."""
    with open(os.path.join(job.folder, "job.json"), "w") as file:
        json.dump({**fields, "commit": commit}, file)


def read_job_record(job: Job) -> dict[str, Any]:
    """The job's ``job.json`` (`write_job_record`); {} for a job that has none (not run, or run before it was written)."""
    try:
        with open(os.path.join(job.folder, "job.json")) as file:
            record = json.load(file)
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def commit_problem(name: str, jobs: list[Job], work_dir: str) -> str:
    """Why row `name`'s finished `jobs` cannot be reported from this checkout ('' if they can): a report names the
    commit it was written at and describes the runs with that commit's row settings, so the jobs must have run there."""
    now, work_dir = source_commit(), os.path.abspath(work_dir)
    ran = sorted({str(read_job_record(job).get("commit", "an unrecorded commit")) for job in jobs})
    if ran == [now]:  # a "-dirty" commit matches any uncommitted change on it: its report says -dirty, not exact
        return ""
    return (f"{name}: its jobs in {work_dir} ran at git {', '.join(ran)}, and this code is at git {now}, whose row settings "
            f"the report would describe them with. Nothing was written. Rebuild it in a checkout of the commit they ran at "
            f"(git worktree add --detach DIR COMMIT, then the same --report-only command in DIR with --work-dir {work_dir}); "
            f"jobs that ran with uncommitted changes (-dirty) or recorded no commit cannot be reported exactly: run them again")


def read_evaluations(path: str) -> list[dict[str, float]]:
    """The evaluations in a job's recorder.csv at `path`, each a row of numbers with its step, seconds and mean return.

    A row torn by a kill mid-write (a job stopped with its runner, the case --report-only is for) is left out,
    not taken for a crash of the whole report: the last line when it has no line end (a cut "-150.3" could
    read as -15), a row with more or fewer cells than columns (e.g. a torn row with the next appended), and
    any row that does not read as numbers. An empty cell is a figure not logged at that evaluation (e.g.
    TD3's obj_actor before its first actor step).
    """
    with open(path, newline="", errors="replace") as file:
        text = file.read().replace("\x00", "")  # a block of zeros from a cut write; csv refuses NUL before Python 3.11
    if not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    records = []
    try:
        for line in csv.DictReader(io.StringIO(text)):
            if None in line or None in line.values():  # more or fewer cells than columns: torn (both writers write every cell)
                continue
            try:
                record = {key: float(value) for key, value in line.items() if value != ""}
            except ValueError:
                continue
            if all(key in record for key in ("step", "seconds", "return_mean")):
                records.append(record)
    except csv.Error:  # damage the csv module cannot read past: the rows before it stand
        pass
    return records


def summarise(job: Job, target: float, ok: bool) -> dict[str, Any]:
    """One result line from the job's ``recorder.csv``: status, steps and seconds to target, returns, stability.

    A run that never reaches the target counts at its full budget: the step and training seconds
    of its last evaluation (taken at the budget). A job that crashed has status "error". Stability
    is read from the evaluations after the first hit (the run trains on to `TARGET_HOLD` times its
    step): how many there were, how many stayed at or above the target, and whether one fell below
    half of it (``target - |target| / 2``: 237.5 for CartPole's 475, -300 for Pendulum's -200).
    """
    result: dict[str, Any] = dict(library=job.library, agent=job.agent, seed=job.seed, status="error", steps=math.nan,
                                  seconds=math.nan, best_return=math.nan, final_return=math.nan, evaluations=0,
                                  later_evaluations=0, later_held=0, fell=0, finished=0, curve=[])
    path = os.path.join(job.folder, "recorder.csv")
    records = read_evaluations(path) if ok and os.path.isfile(path) else []
    if not records:
        return result
    hit = next((record for record in records if record["return_mean"] >= target), None)
    end = hit or records[-1]
    result.update(status="reached" if hit else "failed", steps=int(end["step"]), seconds=end["seconds"],
                  best_return=max(r["return_mean"] for r in records), final_return=records[-1]["return_mean"],
                  evaluations=len(records))
    result["curve"] = [(int(r["step"]), r["seconds"], r["return_mean"]) for r in records]  # for <row>-curves.csv and the plot
    # finished: at the budget, or past the target's hold (a job stopped during its hold is not)
    hold_end = math.ceil(TARGET_HOLD * hit["step"]) if hit else job.budget
    result["finished"] = int(records[-1]["step"] >= min(job.budget, hold_end))
    if hit:
        later = [r["return_mean"] for r in records if r["step"] > hit["step"]]
        result.update(later_evaluations=len(later), later_held=sum(value >= target for value in later),
                      fell=int(any(value < target - abs(target) / 2 for value in later)))
    return result


def seed_jobs(name: str, seed: int, budget: int, work_dir: str) -> list[Job]:
    """The jobs of one row and seed, in the order they run: the SB3 baseline, then each elegantrl agent."""
    row = ROWS[name]
    sb3_budget = min(budget, row.sb3_budget or budget)
    return [Job(name, library, agent, seed, sb3_budget if library == SB3 else budget,
                os.path.join(work_dir, name, f"{library}-{agent}-seed{seed}"))
            for library, agent in [(SB3, row.sb3_algo)] + [(OURS, agent) for agent in row.agents]]


def run_seed(name: str, seed: int, budget: int, work_dir: str, cores: queue.Queue | None = None) -> list[dict[str, Any]]:
    """Runs the SB3 job of one row and seed, then each elegantrl agent's, one after another.

    With `cores` (several seeds at once), the seed takes a free core from it for all its jobs and
    gives it back after, so that two seeds never share a core and a seed's libraries share one.
    """
    row = ROWS[name]
    core = None if cores is None else cores.get()
    try:
        return [launch_and_summarise(job, row.target, core) for job in seed_jobs(name, seed, budget, work_dir)]
    finally:
        if cores is not None:
            cores.put(core)


def launch_and_summarise(job: Job, target: float, core: int | None) -> dict[str, Any]:
    """Launches one job and prints its one-line result."""
    result = summarise(job, target, launch(job, core))
    print(f"[{job.row} seed {job.seed}] {label(result)}: {result['status']} at {fmt(result['steps'], 0)} env steps, "
          f"{fmt(result['seconds'])} s, best {fmt(result['best_return'])}", flush=True)
    return result


def run_rows(names: list[str], seeds: list[int], budget: int | None, out: str, work_dir: str, command: str, jobs: int = 1,
             note: str = "") -> bool:
    """Runs every (row, seed) of `names`, `jobs` of them at a time; writes each row's report; False on any error.

    A (row, seed) runs its libraries back to back, so a drift in machine speed hits both alike. With
    ``jobs > 1`` several seeds train at once, each job a single-threaded process pinned to its own
    core (of those this process may use): the machine is busier, but equally so for both libraries,
    and the report says how many ran at once.
    """
    ok = True
    cores: queue.Queue | None = None
    if jobs > 1:
        cores = queue.Queue()
        for core in sorted(os.sched_getaffinity(0))[:jobs]:  # logical CPUs, as nproc counts them
            cores.put(core)
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        pending = {name: [pool.submit(run_seed, name, seed, budget or ROWS[name].budget, work_dir, cores) for seed in seeds]
                   for name in names}
        for name, futures in pending.items():  # a row's report is written as soon as its own seeds are done
            results = [result for future in futures for result in future.result()]
            finish_row(name, budget or ROWS[name].budget, results, out, command, jobs, note)
            ok = ok and all(r["status"] != "error" for r in results)
    return ok


def report_rows(names: list[str], seeds: list[int], budget: int | None, out: str, work_dir: str, command: str, jobs: int = 1,
                note: str = "") -> bool:
    """Writes each row's report from the finished jobs already in `work_dir`, training nothing.

    For a run that was stopped before its last seed: a seed counts only if every job of it
    finished (its last evaluation reached the target or the budget), and the report names the
    seeds left out. Returns False if a row has no finished seed, or its jobs ran at another commit
    than this code's (`commit_problem`).
    """
    ok = True
    for name in names:
        row, row_budget = ROWS[name], budget or ROWS[name].budget
        results, missing = [], []
        for seed in seeds:
            seed_summaries = [(job, summarise(job, row.target, True)) for job in seed_jobs(name, seed, row_budget, work_dir)]
            summaries = [summary for _, summary in seed_summaries]
            if all(r["finished"] for _, r in seed_summaries):
                results += summaries
            else:
                missing.append(seed)
        if not results:
            print(f"{name}: no seed has finished all its jobs in {work_dir}", file=sys.stderr)
            ok = False
            continue
        if problem := commit_problem(name, [job for seed in seeds if seed not in missing
                                                 for job in seed_jobs(name, seed, row_budget, work_dir)], work_dir):
            print(problem, file=sys.stderr)
            ok = False
            continue
        left_out = f"Rebuilt from the finished jobs' run folders; seeds {missing} had not finished and are left out." if missing else ""
        finish_row(name, row_budget, results, out, command, jobs, " ".join(filter(None, [left_out, note])))
    return ok
