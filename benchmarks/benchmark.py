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

``--rows sac-throughput`` is a different measurement (`run_sac_throughput`): gradient steps per
second of elegantrl's SAC learner against `PlainSAC`, the same update written directly in torch.
``--rows env-throughput`` (`run_env_throughput`) measures env steps per second collected by
elegantrl's ``explore_env`` against the raw gymnasium env stepped with random actions.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import copy
import csv
import datetime
import functools
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
import torch.nn.functional as F
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.noise import NormalActionNoise
from stable_baselines3.common.utils import LinearSchedule
from torch import nn

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
    sb3_algo: str  # a class name in stable_baselines3 or sb3_contrib, e.g. "DQN" or "QRDQN"
    sb3_hyperparams: Callable[[int], dict[str, Any]]
    agents: tuple[str, ...]  # class names in elegantrl.agent, e.g. "AgentD3QN"
    eval_gap: int = 1000  # env steps between evaluations
    eval_episodes: int = 10
    sb3_note: str = ""  # how the zoo's settings were adapted, printed in the report
    elegantrl_args: dict[str, Any] = field(default_factory=dict)  # extra `Arguments` fields, if any
    agent_kwargs: dict[str, Any] = field(default_factory=dict)  # arguments of the elegantrl agents' constructors


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


def zoo_qrdqn_cartpole(budget: int) -> dict[str, Any]:
    """sb3-contrib QR-DQN on CartPole-v1 as rl-baselines3-zoo tunes it (hyperparams/qrdqn.yml, n_timesteps 5e4).

    The zoo's DQN settings for this env with 10 quantiles; epsilon kept in env steps as in
    `zoo_dqn_cartpole` (it reaches 0.04 after 8,000 env steps).
    """
    return dict(zoo_dqn_cartpole(budget), policy_kwargs=dict(net_arch=[256, 256], n_quantiles=10))


def zoo_qrdqn_lunarlander(budget: int) -> dict[str, Any]:
    """sb3-contrib QR-DQN on LunarLander as rl-baselines3-zoo tunes it (hyperparams/qrdqn.yml, LunarLander-v2, n_timesteps 1e5).

    The zoo's ``lin_1.5e-3`` decays the learning rate linearly to 0 over its 1e5 steps and
    ``exploration_fraction: 0.24`` anneals epsilon over its first 24,000; both are kept in env steps
    (stretched by 1e5 / budget) so that the run is the zoo's own whatever our budget. After 1e5 env
    steps the rate is 0: a run that has not reached the target by then does not learn any more.
    ``gradient_steps=-1`` is one gradient step per env step, taken 256 at a time.
    """
    zoo_timesteps = 100_000
    return dict(
        policy="MlpPolicy",
        learning_rate=LinearSchedule(start=1.5e-3, end=0.0, end_fraction=zoo_timesteps / budget),
        batch_size=128,
        buffer_size=100_000,
        learning_starts=10_000,
        gamma=0.995,
        target_update_interval=1,
        train_freq=256,
        gradient_steps=-1,
        exploration_fraction=0.24 * zoo_timesteps / budget,
        exploration_final_eps=0.18,
        policy_kwargs=dict(net_arch=[256, 256], n_quantiles=170),
    )


def zoo_sac_pendulum(budget: int) -> dict[str, Any]:
    """SB3 SAC on Pendulum-v1 as rl-baselines3-zoo tunes it (hyperparams/sac.yml, n_timesteps 2e4).

    The zoo sets only the learning rate; everything else is SB3's default (see the row's note).
    """
    return dict(policy="MlpPolicy", learning_rate=1e-3)


def zoo_sac_lunarlandercontinuous(budget: int) -> dict[str, Any]:
    """SB3 SAC on LunarLanderContinuous as rl-baselines3-zoo tunes it (hyperparams/sac.yml, n_timesteps 5e5).

    The zoo's ``lin_7.3e-4`` decays the learning rate linearly to 0 over its 5e5 steps. SB3 feeds
    schedules the fraction of *our* budget left, so we stretch the line by 5e5 / budget: the rate at
    env step t is 7.3e-4 × (1 - t / 5e5) whatever the budget, as in the zoo's own run.
    """
    zoo_timesteps = 500_000
    return dict(
        policy="MlpPolicy",
        batch_size=256,
        learning_rate=LinearSchedule(start=7.3e-4, end=0.0, end_fraction=zoo_timesteps / budget),
        buffer_size=1_000_000,
        ent_coef="auto",
        gamma=0.99,
        tau=0.01,
        train_freq=1,
        gradient_steps=1,
        learning_starts=10_000,
        policy_kwargs=dict(net_arch=[400, 300]),
    )


def zoo_td3(budget: int) -> dict[str, Any]:
    """SB3 TD3 as rl-baselines3-zoo tunes it for Pendulum-v1 and LunarLanderContinuous (hyperparams/td3.yml).

    Both entries are the same (n_timesteps 2e4 and 3e5; no schedule depends on it).
    ``noise_type``/``noise_std`` are the zoo's keys; `train_sb3` turns them into the action noise.
    """
    return dict(
        policy="MlpPolicy",
        gamma=0.98,
        buffer_size=200_000,
        learning_starts=10_000,
        noise_type="normal",
        noise_std=0.1,
        gradient_steps=1,
        train_freq=1,
        learning_rate=1e-3,
        policy_kwargs=dict(net_arch=[400, 300]),
    )


def zoo_ppo_cartpole(budget: int) -> dict[str, Any]:
    """SB3 PPO on CartPole-v1 as rl-baselines3-zoo tunes it (hyperparams/ppo.yml, n_timesteps 1e5).

    The zoo's ``lin_0.001`` and ``lin_0.2`` decay the learning rate and the clip range linearly to 0
    over its 1e5 steps. SB3 feeds schedules the fraction of *our* budget left, so we stretch the line
    by 1e5 / budget: at env step t the value is start × (1 - t / 1e5) whatever the budget.
    """
    zoo_timesteps = 100_000
    return dict(
        policy="MlpPolicy",
        n_envs=8,
        n_steps=32,
        batch_size=256,
        gae_lambda=0.8,
        gamma=0.98,
        n_epochs=20,
        ent_coef=0.0,
        learning_rate=LinearSchedule(start=1e-3, end=0.0, end_fraction=zoo_timesteps / budget),
        clip_range=LinearSchedule(start=0.2, end=0.0, end_fraction=zoo_timesteps / budget),
    )


def zoo_ppo_lunarlander(budget: int) -> dict[str, Any]:
    """SB3 PPO on LunarLander as rl-baselines3-zoo tunes it (hyperparams/ppo.yml, LunarLander-v2, n_timesteps 1e6).

    No schedule: the rest (learning_rate 3e-4, clip_range 0.2, net_arch [64, 64]) is SB3's default.
    """
    return dict(
        policy="MlpPolicy",
        n_envs=16,
        n_steps=1024,
        batch_size=64,
        gae_lambda=0.98,
        gamma=0.999,
        n_epochs=4,
        ent_coef=0.01,
    )


SAC_DEFAULTS_NOTE = ("SB3 defaults for the rest: buffer_size=1e6, batch_size=256, learning_starts=100, tau=0.005, "
                     "gamma=0.99, train_freq=1, gradient_steps=1, ent_coef='auto', net_arch=[256, 256]")
TD3_NOTE = ("zoo td3.yml as updated with SB3 2.3 (train_freq=1, gradient_steps=1; older zoo versions had "
            "train_freq=(1, 'episode'), gradient_steps=-1: the same one gradient step per env step); "
            "noise_type=normal, noise_std=0.1 is NormalActionNoise(0, 0.1) in SB3's [-1, 1] action units; "
            "batch_size is SB3's default 256; the first 10,000 env steps are uniformly random (learning_starts)")

PPO_DEFAULTS_NOTE = ("SB3 defaults for the rest: vf_coef=0.5, max_grad_norm=0.5, normalize_advantage=True, "
                     "net_arch=dict(pi=[64, 64], vf=[64, 64]) with tanh, no observation or reward normalisation")

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
    "qrdqn-cartpole": Row(
        env_id="CartPole-v1",
        target=475.0,
        budget=100_000,
        sb3_algo="QRDQN",
        sb3_hyperparams=zoo_qrdqn_cartpole,
        agents=("AgentQRDQN",),
        sb3_note="sb3-contrib's QRDQN; exploration_fraction = 0.16 × 50,000 / budget: epsilon reaches 0.04 after 8,000 env steps, "
                 "as in the zoo's 5e4-step run",
    ),
    "qrdqn-lunarlander": Row(
        env_id="LunarLander-v3",
        target=200.0,
        budget=200_000,
        sb3_algo="QRDQN",
        sb3_hyperparams=zoo_qrdqn_lunarlander,
        agents=("AgentQRDQN",),
        eval_gap=10_000,
        sb3_note="sb3-contrib's QRDQN with the zoo's LunarLander-v2 entry (gymnasium 1.x has only -v3, the same task with bug fixes); "
                 "learning_rate lin_1.5e-3 and exploration_fraction 0.24 kept in env steps as in the zoo's 1e5-step run: "
                 "the rate is 1.5e-3 × (1 - t / 1e5) and 0 after 1e5 env steps, epsilon reaches 0.18 at 24,000",
    ),
    "sac-pendulum": Row(
        env_id="Pendulum-v1",
        target=-200.0,
        budget=30_000,
        sb3_algo="SAC",
        sb3_hyperparams=zoo_sac_pendulum,
        agents=("AgentSAC", "AgentModSAC", "AgentInterSAC"),
        sb3_note=SAC_DEFAULTS_NOTE + " (the zoo's entry sets only learning_rate)",
        # tuned for this env as the zoo tunes SB3's learning rate: Pendulum needs no more than 64-wide
        # nets (SAC seeds 0-2: 11.3 s median to target against 19.2 s at the family's 128); on
        # LunarLanderContinuous 64 fell short (140 at 105k steps where 128 reached 249 at 65k)
        elegantrl_args=dict(net_dim=64),
    ),
    "td3-pendulum": Row(
        env_id="Pendulum-v1",
        target=-200.0,
        budget=30_000,
        sb3_algo="TD3",
        sb3_hyperparams=zoo_td3,
        agents=("AgentTD3", "AgentDDPG"),
        sb3_note=TD3_NOTE,
    ),
    "sac-lunarlandercontinuous": Row(
        env_id="LunarLanderContinuous-v3",
        target=200.0,
        budget=300_000,
        sb3_algo="SAC",
        sb3_hyperparams=zoo_sac_lunarlandercontinuous,
        agents=("AgentSAC",),
        eval_gap=5000,
        sb3_note="the zoo's LunarLanderContinuous entry (-v2 in the zoo's file; gymnasium 1.x has only -v3, the same task with bug fixes); "
                 "learning_rate lin_7.3e-4 kept in env steps: 7.3e-4 × (1 - t / 5e5), i.e. end_fraction = 5e5 / budget",
    ),
    "td3-lunarlandercontinuous": Row(
        env_id="LunarLanderContinuous-v3",
        target=200.0,
        budget=300_000,
        sb3_algo="TD3",
        sb3_hyperparams=zoo_td3,
        agents=("AgentTD3",),
        eval_gap=5000,
        sb3_note="the zoo's LunarLanderContinuous entry (-v2 in the zoo's file); " + TD3_NOTE,
    ),
    "ppo-cartpole": Row(
        env_id="CartPole-v1",
        target=475.0,
        budget=100_000,
        sb3_algo="PPO",
        sb3_hyperparams=zoo_ppo_cartpole,
        agents=("AgentDiscretePPO",),
        sb3_note="8 envs (make_vec_env); learning_rate lin_0.001 and clip_range lin_0.2 kept in env steps: "
                 "start × (1 - t / 1e5), i.e. end_fraction = 1e5 / budget; " + PPO_DEFAULTS_NOTE,
        # tuned like the zoo tunes SB3 for this env: 8 envs, short rollouts (64 x 8), gamma 0.98
        elegantrl_args=dict(num_envs=8, target_step=64, batch_size=256, repeat_times=10.0, gamma=0.98, learning_rate=1e-3),
        agent_kwargs=dict(lambda_gae_adv=0.9),
    ),
    "ppo-lunarlander": Row(
        env_id="LunarLander-v3",
        target=200.0,
        budget=1_000_000,
        sb3_algo="PPO",
        sb3_hyperparams=zoo_ppo_lunarlander,
        agents=("AgentDiscretePPO",),
        eval_gap=10_000,
        sb3_note="the zoo's LunarLander-v2 entry (gymnasium 1.x has only -v3, the same task with bug fixes); 16 envs (make_vec_env); "
                 "learning_rate 3e-4 and clip_range 0.2 are SB3's defaults; " + PPO_DEFAULTS_NOTE,
        # the zoo's settings in elegantrl's terms; with the agent's defaults (8 envs, gamma 0.99, no
        # entropy bonus) a first run reached only 161 in 1M steps
        elegantrl_args=dict(num_envs=16, target_step=1024, batch_size=64, repeat_times=4.0, gamma=0.999, learning_rate=3e-4),
        agent_kwargs=dict(lambda_entropy=0.01, lambda_gae_adv=0.98),
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
        self.seed = seed
        self.next_eval_step = eval_gap
        self.records: list[dict[str, float]] = []
        self.start_time = self.eval_seconds = 0.0

    def _on_training_start(self) -> None:
        """Starts the clock once the model and its buffer are built, as elegantrl's Evaluator does."""
        self.start_time = time.perf_counter()

    def _episode_return(self, seed: int) -> float:
        """The return of one deterministic episode on the evaluation env, reset with `seed`."""
        obs, _ = self.eval_env.reset(seed=seed)
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
        from elegantrl.run import evaluation_seeds  # the same episode seeds as elegantrl's Evaluator

        returns = [self._episode_return(seed) for seed in evaluation_seeds(self.seed, self.num_timesteps, self.eval_gap, self.episodes)]
        self.eval_seconds += time.perf_counter() - start
        seconds = time.perf_counter() - self.start_time - self.eval_seconds
        mean = float(np.mean(returns))
        self.records.append(dict(step=self.num_timesteps, seconds=seconds, return_mean=mean, return_std=float(np.std(returns))))
        return mean < self.target and not at_budget


def sb3_class(name: str) -> type:
    """The algorithm class `name` from stable_baselines3, or else from sb3_contrib (e.g. QRDQN)."""
    if hasattr(stable_baselines3, name):
        return getattr(stable_baselines3, name)
    import sb3_contrib  # only the rows that need it need it installed

    return getattr(sb3_contrib, name)


def train_sb3(job: Job, row: Row) -> None:
    """Trains the row's SB3 baseline and writes its evaluations to ``job.folder/recorder.csv``."""
    hyperparams = row.sb3_hyperparams(job.budget)
    env = make_vec_env(row.env_id, n_envs=hyperparams.pop("n_envs", 1), seed=job.seed)
    if "noise_std" in hyperparams:  # the zoo's action-noise keys, built as the zoo builds them
        if hyperparams.pop("noise_type") != "normal":
            raise ValueError("only the zoo's noise_type 'normal' is supported here")
        sigma = hyperparams.pop("noise_std") * np.ones(env.action_space.shape)
        hyperparams["action_noise"] = NormalActionNoise(mean=np.zeros(env.action_space.shape), sigma=sigma)
    model = sb3_class(row.sb3_algo)(env=env, seed=job.seed, device="cpu", verbose=0, **hyperparams)
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
        agent=getattr(agent_module, job.agent)(**row.agent_kwargs), env=PreprocessEnv(row.env_id), random_seed=job.seed,
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
            # an empty cell is a figure not logged at that evaluation (e.g. TD3's obj_actor before its first actor step)
            records = [{key: float(value) for key, value in line.items() if value != ""} for line in csv.DictReader(file)]
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


def interval_cell(ratio: tuple[float, float, float]) -> str:
    """A ratio-of-medians cell, e.g. "0.35 [0.21, 0.60]"."""
    value, low, high = ratio
    return "–" if math.isnan(value) else f"{value:.2f} [{low:.2f}, {high:.2f}]"


def tables(results: list[dict[str, Any]]) -> str:
    """The summary table (medians over seeds, ratios of medians) and the per-seed table, in markdown."""
    medians = [("steps", 0), ("seconds", 1), ("best_return", 1), ("final_return", 1)]
    summary = ["| run | success | env steps to target | wall s to target | best return | final return "
               "| steps ratio ours/SB3 [90% CI] | time ratio ours/SB3 [90% CI] |", "|---|---|---|---|---|---|---|---|"]
    baseline = [r for r in results if r["library"] == SB3]
    for name in dict.fromkeys(label(r) for r in results):  # in order of first appearance
        runs = [r for r in results if label(r) == name]
        successes = sum(r["status"] == "reached" for r in runs)
        cells = [fmt(median([r[key] for r in runs]), digits) for key, digits in medians]
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
            "bound (read them with the success column).\n\n"
            + "\n".join(summary) + "\n\nPer seed (ratios are ours / SB3 on the same seed, for reference only):\n\n"
            + "\n".join(per_seed) + "\n")


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
    commit = subprocess.run(["git", "-C", HERE, "describe", "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
    return (f"{len(os.sched_getaffinity(0))} CPUs (nproc), {cpu}; Python {platform.python_version()}, torch {torch.__version__}, "
            f"stable-baselines3 {stable_baselines3.__version__}{contrib}, gymnasium {gym.__version__}, elegantrl at git {commit or 'unknown'}")


def built_in_settings(row: Row) -> str:
    """What a user of each of the row's agents gets without setting anything: the tuned entry, if any."""
    from elegantrl import agent as agent_module
    from elegantrl.tuned import tuned_entry

    notes = []
    for name in row.agents:
        family, entry = tuned_entry(getattr(agent_module, name)(), row.env_id)
        notes.append(f"{name}: the tuned entry ({family!r}, {row.env_id!r}) {entry}" if entry else f"{name}: the family's defaults")
    return "; ".join(notes)


def write_report(name: str, row: Row, budget: int, results: list[dict[str, Any]], out: str, command: str, jobs: int = 1,
                 note: str = "") -> str:
    """Writes ``out/<row>.csv`` (one line per run) and ``out/<row>.md``, with `note` under the command; returns the tables."""
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
            + (f"- Note: {note}\n" if note else "") +
            f"- Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}\n"
            f"- Machine: {machine()}\n"
            f"- Evaluation: {row.eval_episodes} deterministic episodes every {row.eval_gap:,d} env steps on a separate env "
            f"(episode seeds from default_rng(seed + 1)); wall time excludes evaluation; one torch thread per job; "
            f"{'one job at a time' if jobs == 1 else f'{jobs} jobs at a time, one per core'}.\n"
            f"- SB3 {row.sb3_algo} (rl-baselines3-zoo): {hyperparams}{'; ' + row.sb3_note if row.sb3_note else ''}\n"
            f"- elegantrl: each agent's built-in settings ({built_in_settings(row)})"
            f"{', plus ' + str(row.elegantrl_args) if row.elegantrl_args else ''}"
            f"{', agent arguments ' + str(row.agent_kwargs) if row.agent_kwargs else ''}.\n\n"
            + body
        )
    return body


def seed_jobs(name: str, seed: int, budget: int, work_dir: str) -> list[Job]:
    """The jobs of one row and seed, in the order they run: the SB3 baseline, then each elegantrl agent."""
    row = ROWS[name]
    return [Job(name, library, agent, seed, budget, os.path.join(work_dir, name, f"{library}-{agent}-seed{seed}"))
            for library, agent in [(SB3, row.sb3_algo)] + [(OURS, agent) for agent in row.agents]]


def run_seed(name: str, seed: int, budget: int, work_dir: str) -> list[dict[str, Any]]:
    """Runs the SB3 job of one row and seed, then each elegantrl agent's, one after another."""
    row = ROWS[name]
    results = []
    for job in seed_jobs(name, seed, budget, work_dir):
        result = summarise(job, row.target, launch(job))
        results.append(result)
        print(f"[{name} seed {seed}] {label(result)}: {result['status']} at {fmt(result['steps'], 0)} env steps, "
              f"{fmt(result['seconds'])} s, best {fmt(result['best_return'])}", flush=True)
    return results


def finish_row(name: str, budget: int, results: list[dict[str, Any]], out: str, command: str, jobs: int, note: str = "") -> None:
    """Adds the ratios to a row's results, writes its report and prints its tables."""
    row = ROWS[name]
    add_ratios(results)
    print(f"\n## {name}: {row.env_id}, target {row.target:g}, budget {budget:,d}\n\n"
          + write_report(name, row, budget, results, out, command, jobs, note))


def run_rows(names: list[str], seeds: list[int], budget: int | None, out: str, work_dir: str, command: str, jobs: int = 1) -> bool:
    """Runs every (row, seed) of `names`, `jobs` of them at a time; writes each row's report; False on any error.

    A (row, seed) runs its libraries back to back, so a drift in machine speed hits both alike. With
    ``jobs > 1`` several seeds train at once, each job a single-threaded process on its own core:
    the machine is busier, but equally so for both libraries, and the report says how many ran at once.
    """
    ok = True
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        pending = {name: [pool.submit(run_seed, name, seed, budget or ROWS[name].budget, work_dir) for seed in seeds]
                   for name in names}
        for name, futures in pending.items():  # a row's report is written as soon as its own seeds are done
            results = [result for future in futures for result in future.result()]
            finish_row(name, budget or ROWS[name].budget, results, out, command, jobs)
            ok = ok and all(r["status"] != "error" for r in results)
    return ok


def report_rows(names: list[str], seeds: list[int], budget: int | None, out: str, work_dir: str, command: str, jobs: int = 1) -> bool:
    """Writes each row's report from the finished jobs already in `work_dir`, training nothing.

    For a run that was stopped before its last seed: a seed counts only if every job of it
    finished (its last evaluation reached the target or the budget), and the report names the
    seeds left out. Returns False if a row has no finished seed.
    """
    ok = True
    for name in names:
        row, row_budget = ROWS[name], budget or ROWS[name].budget
        results, missing = [], []
        for seed in seeds:
            summaries = [summarise(job, row.target, True) for job in seed_jobs(name, seed, row_budget, work_dir)]
            if all(r["status"] == "reached" or r["steps"] >= row_budget for r in summaries):
                results += summaries
            else:
                missing.append(seed)
        if not results:
            print(f"{name}: no seed has finished all its jobs in {work_dir}", file=sys.stderr)
            ok = False
            continue
        note = f"Rebuilt from the finished jobs' run folders; seeds {missing} had not finished and are left out." if missing else ""
        finish_row(name, row_budget, results, out, command, jobs, note)
    return ok


# ---- learner throughput: elegantrl's SAC update against a plain-PyTorch one ------------------


class PlainSAC:
    """The ceiling: SAC's gradient step written directly in torch, in one method, as in a single script.

    The same arithmetic as one `AgentSAC` step: an actor MLP whose last layer gives the mean and
    log-std of a tanh-squashed Gaussian, two independent Q MLPs with target copies, a learned
    log-alpha, Adam everywhere, SmoothL1 critic losses, Polyak averaging with `tau`; batches are
    drawn with ``torch.randint`` from preallocated tensors. No library around it.
    """

    def __init__(self, net_dim: int, data: dict[str, torch.Tensor], batch_size: int = 256, learning_rate: float = 1e-3,
                 gamma: float = 0.99, tau: float = 5e-3):
        """Builds the networks for the shapes of `data` (state, action, reward, undone, next_state tensors)."""
        state_dim, action_dim = data["state"].shape[1], data["action"].shape[1]

        def mlp(dim_in: int, dim_out: int) -> nn.Sequential:
            return nn.Sequential(nn.Linear(dim_in, net_dim), nn.ReLU(), nn.Linear(net_dim, net_dim), nn.ReLU(), nn.Linear(net_dim, dim_out))

        self.data, self.size = data, len(data["reward"])
        self.batch_size, self.gamma, self.tau = batch_size, gamma, tau
        self.actor = mlp(state_dim, 2 * action_dim)
        self.q1, self.q2 = mlp(state_dim + action_dim, 1), mlp(state_dim + action_dim, 1)
        self.q1_target, self.q2_target = copy.deepcopy(self.q1).requires_grad_(False), copy.deepcopy(self.q2).requires_grad_(False)
        self.critic_params = [*self.q1.parameters(), *self.q2.parameters()]
        self.target_params = [*self.q1_target.parameters(), *self.q2_target.parameters()]
        self.log_alpha = torch.zeros((), requires_grad=True)
        self.target_entropy = -float(action_dim)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), learning_rate)
        self.critic_optimizer = torch.optim.Adam(self.critic_params, learning_rate)
        self.alpha_optimizer = torch.optim.Adam([self.log_alpha], learning_rate)

    def sample_action(self, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A tanh-squashed Gaussian action and its log-probability (with the tanh correction)."""
        mean, log_std = self.actor(state).chunk(2, dim=1)
        log_std = log_std.clamp(-16.0, 2.0)
        noise = torch.randn_like(mean)
        u = mean + log_std.exp() * noise
        log_prob = -0.5 * noise.pow(2) - log_std - 0.5 * math.log(2 * math.pi) - 2.0 * (math.log(2.0) - u - F.softplus(-2.0 * u))
        return u.tanh(), log_prob.sum(dim=1)

    def update(self) -> None:
        """One gradient step on the twin critics, then on the temperature and the actor."""
        index = torch.randint(self.size, (self.batch_size,))
        state, action, reward, undone, next_state = (self.data[key][index] for key in ("state", "action", "reward", "undone", "next_state"))
        alpha = self.log_alpha.detach().exp()

        with torch.no_grad():
            next_action, next_log_prob = self.sample_action(next_state)
            next_state_action = torch.cat((next_state, next_action), dim=1)
            next_q = torch.min(self.q1_target(next_state_action), self.q2_target(next_state_action)).squeeze(1)
            q_label = reward + undone * self.gamma * (next_q - alpha * next_log_prob)
        state_action = torch.cat((state, action), dim=1)
        q1, q2 = self.q1(state_action).squeeze(1), self.q2(state_action).squeeze(1)
        critic_loss = F.smooth_l1_loss(q1, q_label) + F.smooth_l1_loss(q2, q_label)
        self.critic_optimizer.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_optimizer.step()
        with torch.no_grad():
            for target, current in zip(self.target_params, self.critic_params):
                target.lerp_(current, self.tau)

        new_action, log_prob = self.sample_action(state)
        alpha_loss = -(self.log_alpha * (log_prob.detach() + self.target_entropy)).mean()
        self.alpha_optimizer.zero_grad(set_to_none=True)
        alpha_loss.backward()
        self.alpha_optimizer.step()
        for param in self.critic_params:  # the actor needs dQ/da only, not gradients for the critics' weights
            param.requires_grad_(False)
        new_state_action = torch.cat((state, new_action), dim=1)
        q_value = torch.min(self.q1(new_state_action), self.q2(new_state_action)).squeeze(1)
        for param in self.critic_params:
            param.requires_grad_(True)
        actor_loss = (self.log_alpha.detach().exp() * log_prob - q_value).mean()
        self.actor_optimizer.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.actor_optimizer.step()


def ratio_cells(ours: list[float], ceiling: list[float]) -> str:
    """Table cells for interleaved timings: both medians, the ratio of the medians, and the per-pair
    ratios' median and quartiles (pairs are neighbouring timings, which see the same machine drift)."""
    pairs = [a / b for a, b in zip(ours, ceiling)]
    quartiles = statistics.quantiles(pairs, n=4) if len(pairs) > 1 else [pairs[0], pairs[0], pairs[0]]
    return (f"{fmt(median(ours))} | {fmt(median(ceiling))} | {median(ours) / median(ceiling):.3f} "
            f"| {median(pairs):.3f} ({quartiles[0]:.3f}–{quartiles[2]:.3f})")


def per_second(work: Callable[[], int]) -> float:
    """Times one call of `work`, which returns how much it did (gradient steps, env steps): the rate."""
    start = time.perf_counter()
    done = work()
    return done / (time.perf_counter() - start)


def write_throughput_report(name: str, title: str, records: list[dict[str, Any]], setup: str, table: str,
                            out: str, command: str) -> None:
    """Writes ``<name>.csv`` (one line per timing) and ``<name>.md`` (command, date, machine, then `setup`, a
    markdown list ending in a blank line, then the table); prints the table."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{name}.csv"), "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=["row", *records[0]])
        writer.writeheader()
        writer.writerows({"row": name, **r} for r in records)
    with open(os.path.join(out, f"{name}.md"), "w") as file:
        file.write(f"# {name}: {title}\n\n- Command: `{command}`\n"
                   f"- Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}\n"
                   f"- Machine: {machine()}\n" + setup + table)
    print(f"\n## {name}\n\n" + table)


def run_sac_throughput(out: str, command: str, repeats: int, net_dims: tuple[int, ...] = (128, 256),
                       steps: int = 50, batch_size: int = 256) -> bool:
    """Measures SAC gradient steps per second, elegantrl's `AgentSAC.update_net` against `PlainSAC`.

    Both learn from the same 10,000 random Pendulum transitions with the same network sizes and
    batch, on one torch thread. Per net_dim, after a warm-up of each, the two are timed in turn
    (A, B, A, B, ...) `repeats` times, `steps` gradient steps per timing; the report gives the
    median updates/s of each and the ratio elegantrl / plain (1 = no library overhead). Many short
    timings rather than a few long ones: on a shared machine the speed drifts by tens of percent
    within seconds, and neighbouring timings see the same drift.
    Writes ``out/sac-throughput.md`` and ``.csv``; returns True.
    """
    from elegantrl.agent import AgentSAC
    from elegantrl.env import PreprocessEnv
    from elegantrl.replay import ReplayBuffer

    torch.set_num_threads(1)
    env = PreprocessEnv("Pendulum-v1")
    records: list[dict[str, Any]] = []
    for net_dim in net_dims:
        torch.manual_seed(0)
        agent = AgentSAC()
        # repeat_times 1: a rollout of steps × batch_size transitions buys exactly `steps` gradient steps
        agent.init(net_dim, env.state_dim, env.action_dim, learning_rate=1e-3, batch_size=batch_size, repeat_times=1.0,
                   soft_update_tau=5e-3, device="cpu")
        agent.reset_exploration(env, seed=0)
        buffer = ReplayBuffer(10_000, env.state_dim, env.action_dim, if_discrete=False)
        buffer.extend(agent.explore_env(env, 10_000, if_random=True))
        n = len(buffer)
        data = dict(state=buffer.state[:n].clone(), action=buffer.action[:n].clone(), reward=buffer.reward[:n].clone(),
                    undone=(~buffer.terminated[:n]).float(), next_state=buffer.next_state[:n].clone())
        plain = PlainSAC(net_dim, data, batch_size=batch_size)

        def elegantrl_update(num_steps: int = steps, agent: AgentSAC = agent, buffer: ReplayBuffer = buffer) -> int:
            before = agent.update_count
            agent.update_net(buffer, new_steps=num_steps * batch_size)  # repeat_times=1: one step per batch_size new transitions
            return agent.update_count - before

        def plain_update(num_steps: int = steps, plain: PlainSAC = plain) -> int:
            for _ in range(num_steps):
                plain.update()
            return num_steps

        elegantrl_update(20)  # warm-up of each: allocator, Adam state, first-call costs
        plain_update(20)
        for repeat in range(repeats):
            for library, update in ((OURS, elegantrl_update), ("plain-pytorch", plain_update)):
                records.append(dict(net_dim=net_dim, repeat=repeat, library=library, updates_per_s=per_second(update)))
                print(f"[sac-throughput net_dim {net_dim} repeat {repeat}] {library}: {records[-1]['updates_per_s']:.1f} updates/s", flush=True)

    lines = ["| net_dim | elegantrl updates/s | plain PyTorch updates/s | ratio of medians elegantrl / plain "
             "| per-pair ratios: median (quartiles) |", "|---|---|---|---|---|"]
    for net_dim in net_dims:
        ours = [r["updates_per_s"] for r in records if r["net_dim"] == net_dim and r["library"] == OURS]
        plain_rates = [r["updates_per_s"] for r in records if r["net_dim"] == net_dim and r["library"] != OURS]
        lines.append(f"| {net_dim} | {ratio_cells(ours, plain_rates)} |")
    table = "\n".join(lines) + "\n"
    setup = (
        f"- Setup: Pendulum-v1 sizes (state_dim {env.state_dim}, action_dim {env.action_dim}), 10,000 random transitions, "
        f"batch {batch_size}, Adam lr 1e-3, tau 0.005, one torch thread, CPU. Both: actor MLP [state, net_dim, net_dim, 2 × action] "
        "(tanh-squashed Gaussian), two independent critic MLPs [state + action, net_dim, net_dim, 1] with targets, learned log-alpha, "
        "SmoothL1 critic losses, one critic, temperature and actor step per update.\n"
        f"- elegantrl: `AgentSAC.update_net(buffer, new_steps)` on an `elegantrl.replay.ReplayBuffer`, {steps} gradient steps per call. "
        f"Plain PyTorch: `PlainSAC.update()` in benchmark.py, {steps} calls in a loop, batches from preallocated tensors.\n"
        f"- Timing: per net_dim a 20-step warm-up of each, then {repeats} repeats interleaved (elegantrl, plain, elegantrl, ...); "
        "medians over repeats; the ratio is of the medians; the per-pair ratios compare neighbouring timings "
        "(median and interquartile range).\n\n"
    )
    write_throughput_report("sac-throughput", "SAC learner updates per second, elegantrl against plain PyTorch",
                            records, setup, table, out, command)
    return True


# ---- exploration throughput: elegantrl's explore_env against the raw env with random actions --


def raw_env_stepper(env_id: str, num_envs: int, seed: int = 0) -> Callable[[int], int]:
    """The ceiling: the plain gymnasium env (or a sync vector env of `num_envs`) with random actions.

    Returns a function that steps it `horizon` times (per env) and returns the env steps taken. One
    env is reset when its episode ends; the vector env resets its sub-envs in the same step, the
    autoreset mode elegantrl's `build_vector_env` uses, so both do the same resets.
    """
    if num_envs == 1:
        env = gym.make(env_id)
        env.reset(seed=seed)
        env.action_space.seed(seed)

        def step(horizon: int) -> int:
            for _ in range(horizon):
                _, _, terminated, truncated, _ = env.step(env.action_space.sample())
                if terminated or truncated:
                    env.reset()
            return horizon
    else:
        env = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync",
                           vector_kwargs=dict(autoreset_mode=gym.vector.AutoresetMode.SAME_STEP))
        env.reset(seed=seed)
        env.action_space.seed(seed)

        def step(horizon: int) -> int:
            for _ in range(horizon):
                env.step(env.action_space.sample())
            return horizon * num_envs
    return step


def elegantrl_explorer(env_id: str, agent_name: str, num_envs: int, seed: int = 0) -> Callable[[int], int]:
    """elegantrl's collection: `agent.explore_env` with the agent's own (untrained) policy.

    The agent is built with ``init(64, ...)`` (the PPO family's net_dim) on one `PreprocessEnv`, or on
    ``build_vector_env(PreprocessEnv(env_id), num_envs)``. Returns a function that collects `horizon`
    steps per env and returns the env steps taken.
    """
    from elegantrl import agent as agent_module
    from elegantrl.env import PreprocessEnv, build_vector_env

    single = PreprocessEnv(env_id)
    env = single if num_envs == 1 else build_vector_env(single, num_envs)
    torch.manual_seed(seed)
    agent = getattr(agent_module, agent_name)()
    agent.init(64, single.state_dim, single.action_dim, device="cpu")
    agent.reset_exploration(env, seed=seed)

    def step(horizon: int) -> int:
        before = agent.total_steps
        agent.explore_env(env, horizon)
        return agent.total_steps - before
    return step


def run_env_throughput(out: str, command: str, repeats: int, steps: int = 4096,
                       cases: tuple[tuple[str, str], ...] = (("CartPole-v1", "AgentDiscretePPO"), ("Pendulum-v1", "AgentPPO")),
                       env_counts: tuple[int, ...] = (1, 8)) -> bool:
    """Measures env steps per second collected by elegantrl's `explore_env` against the raw env.

    Per (env, agent) and number of envs: a warm-up of each, then `repeats` timings interleaved
    (elegantrl, raw, elegantrl, ...), `steps` env steps per timing (``steps // num_envs`` per env).
    elegantrl's number includes its policy's forward pass and sampling, `PreprocessEnv` and the
    rollout arrays; the raw one is the env alone with ``action_space.sample()``, so the ratio
    elegantrl / raw is the share of the env's own speed that exploration keeps.
    Writes ``out/env-throughput.md`` and ``.csv``; returns True.
    """
    torch.set_num_threads(1)
    records: list[dict[str, Any]] = []
    for env_id, agent_name in cases:
        for num_envs in env_counts:
            horizon = steps // num_envs
            collectors = ((OURS, elegantrl_explorer(env_id, agent_name, num_envs)), ("raw-gymnasium", raw_env_stepper(env_id, num_envs)))
            for _, collect in collectors:  # warm-up: first-call costs, allocator
                collect(horizon // 4)
            for repeat in range(repeats):
                for library, collect in collectors:
                    rate = per_second(functools.partial(collect, horizon))
                    records.append(dict(env_id=env_id, agent=agent_name, num_envs=num_envs, repeat=repeat, library=library, steps_per_s=rate))
                    print(f"[env-throughput {env_id} {num_envs} env(s) repeat {repeat}] {library}: {rate:,.0f} env steps/s", flush=True)

    lines = ["| env | elegantrl agent | envs | elegantrl env steps/s | raw env steps/s (random actions) "
             "| ratio of medians elegantrl / raw | per-pair ratios: median (quartiles) |", "|---|---|---|---|---|---|---|"]
    for env_id, agent_name in cases:
        for num_envs in env_counts:
            rates = {library: [r["steps_per_s"] for r in records
                               if r["env_id"] == env_id and r["num_envs"] == num_envs and r["library"] == library]
                     for library in (OURS, "raw-gymnasium")}
            lines.append(f"| {env_id} | {agent_name.removeprefix('Agent')} | {num_envs} | {ratio_cells(rates[OURS], rates['raw-gymnasium'])} |")
    table = "\n".join(lines) + "\n"
    setup = (
        "- elegantrl: `agent.explore_env(env, horizon)` with the agent's own stochastic policy after `agent.init(64, ...)` "
        "(untrained), on `PreprocessEnv(id)` for 1 env and `build_vector_env(PreprocessEnv(id), 8)` (SyncVectorEnv, "
        "same-step autoreset) for 8; it includes the policy's forward pass and sampling, the wrapper and the rollout arrays.\n"
        "- Raw ceiling: `gym.make(id)` stepped with `env.action_space.sample()` and reset when an episode ends, or "
        "`gym.make_vec(id, num_envs=8, vectorization_mode='sync')` with the same same-step autoreset.\n"
        f"- Timing: one torch thread, CPU; per case a warm-up of each, then {repeats} repeats interleaved (elegantrl, raw, "
        f"elegantrl, ...), {steps:,d} env steps per timing; medians over repeats; the ratio is of the medians; the per-pair "
        "ratios compare neighbouring timings (median and interquartile range).\n\n"
    )
    write_throughput_report("env-throughput", "env steps per second collected by elegantrl against the raw env",
                            records, setup, table, out, command)
    return True


THROUGHPUT_ROWS: dict[str, Callable[..., bool]] = {"sac-throughput": run_sac_throughput, "env-throughput": run_env_throughput}


def main() -> int:
    """The command line: run the chosen rows, or (internally) one training job."""
    parser = argparse.ArgumentParser(description="Benchmark elegantrl against Stable-Baselines3, side by side.")
    every_row = [*ROWS, *THROUGHPUT_ROWS]
    parser.add_argument("--rows", nargs="+", choices=every_row, default=every_row, help="rows to run (default: all)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="seeds (default: 0 1 2)")
    parser.add_argument("--budget", type=int, default=None, help="env steps per run, overriding each row's budget (for smoke tests)")
    parser.add_argument("--out", default=os.path.join(HERE, "results"), help="where the .md and .csv reports go (default: benchmarks/results)")
    parser.add_argument("--work-dir", default=os.path.join(HERE, "runs"), help="run folders of the jobs (default: benchmarks/runs, git-ignored)")
    parser.add_argument("--repeats", type=int, default=30, help="timings per library and case in sac-throughput and env-throughput (default: 30)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="(row, seed) pairs trained at once, each job a single-threaded process (default: 1; at most the number of CPUs)")
    parser.add_argument("--report-only", action="store_true",
                        help="train nothing: rewrite the rows' reports from the finished jobs in --work-dir (after a run was stopped)")
    parser.add_argument("--job", help=argparse.SUPPRESS)  # internal: the JSON of one Job, run in this process
    options = parser.parse_args()
    if options.job:
        run_job(Job(**json.loads(options.job)))
        return 0
    command = "python " + shlex.join(sys.argv)
    if not 1 <= options.jobs <= len(os.sched_getaffinity(0)):
        parser.error(f"--jobs must be between 1 and the number of CPUs ({len(os.sched_getaffinity(0))}), got {options.jobs}: "
                     "each job is a single-threaded process that needs a core of its own")
    training = [name for name in options.rows if name in ROWS]
    write = report_rows if options.report_only else run_rows
    ok = write(training, options.seeds, options.budget, options.out, options.work_dir, command, options.jobs) if training else True
    for name in options.rows:  # timings last, so that no training job runs beside them
        if name in THROUGHPUT_ROWS:
            ok = THROUGHPUT_ROWS[name](options.out, command, options.repeats) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
