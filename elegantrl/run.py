"""Training: `Arguments`, `train_and_evaluate`, the `Evaluator`, and the command line."""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import difflib
import importlib
import inspect
import itertools
import json
import math
import os
import random
import re
import signal
import sys
import tempfile
import threading
import time
import warnings
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

try:
    import fcntl
except ImportError:  # Windows: runs go without a folder lock (see FolderLock)
    fcntl = None

import numpy as np
import torch
from gymnasium.envs.registration import registry

from elegantrl import agent as agent_module
from elegantrl.agent import (
    AgentBase,
    AgentMCTS,
    AgentOffPolicy,
    AgentOnPolicy,
    atomic_torch_save,
    atomic_write,
    load_torch_file,
    refuse_unknown_keywords,
)
from elegantrl.distributed import RANK_SEED_OFFSET, LearnerGroup, gpu_device, join_learners, launched_by_torchrun, leave_learners, rank_gpu
from elegantrl.env import EnvWorkerTraceback, PreprocessEnv, build_vector_env, check_env, clone_env, close_vector_env
from elegantrl.replay import Transitions
from elegantrl.tuned import is_variant, task_kwargs, tuned_entry

FAMILY_BASES = (AgentBase, AgentOffPolicy, AgentOnPolicy, AgentMCTS)  # templates, not agents a user trains
FIELD_DEFAULTS = dict(gamma=0.99, num_envs=1, lr_decay_steps=0, reward_scale=1.0)  # where neither arg_defaults nor a tuned entry sets one
CURVE_SECONDS = 30.0  # learning_curve.png is redrawn at an evaluation at most this often (and at the end)


def _arg(default: Any, help: str, type: type | None = None, cli: bool = True) -> Any:
    """A dataclass field whose help text is shown by ``--help``."""
    return field(default=default, metadata={"help": help, "type": type, "cli": cli})


class FolderLock:
    """A run's hold on its folder: an exclusive ``flock`` on the folder itself, so a second run, a resume
    or an ``if_remove`` of the same folder is refused while this run writes there. Nothing is written to
    the folder, and the system drops the lock when the process ends, however it ends (SIGKILL included),
    so a killed run leaves no stale lock. A process forked from the run (an async env's worker) closes
    its copy of the lock at once: one that outlives a killed run would otherwise keep the folder locked.
    Where the file system has no such locks (Windows, some network file systems) a run goes on without
    one; on NFS the lock guards against runs on the same machine only. A copy (pickled into another
    process) holds nothing.
    """

    live: ClassVar[weakref.WeakSet[FolderLock]] = weakref.WeakSet()  # those with a descriptor, for `forget_in_child`

    def __init__(self, path: str, fd: int | None, is_held: bool = True):
        # is_held: taken and not yet released, with or without a system lock (fd)
        self.path, self.fd, self.is_held = path, fd, is_held

    @classmethod
    def acquire(cls, path: str, shown: str) -> FolderLock:
        """Locks the folder at `path` (`shown`: the name for the message); FileExistsError if a run holds it."""
        if fcntl is None:
            return cls(path, None)
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise FileExistsError(f"Arguments.cwd {shown!r} is in use by another elegantrl run (in another process, or an "
                                  f"Arguments in this one that prepared it and is still alive); two runs in one folder "
                                  f"would overwrite each other's files. Wait for that run to end, or choose another cwd "
                                  f"(an Arguments of yours that holds it lets go with its release_folder())") from None
        except OSError:  # no locks on this file system
            os.close(fd)
            return cls(path, None)
        lock = cls(path, fd)
        cls.live.add(lock)
        return lock

    @classmethod
    def forget_in_child(cls) -> None:
        """In a process just forked: closes its copies of the locks' descriptors. That drops no lock (the
        run's own descriptor still holds it), and the child no longer keeps the folder locked once the run
        is gone. The child's Arguments still count as holding their folder: one the parent prepared may
        be trained in the child."""
        for lock in list(cls.live):
            if lock.fd is not None:
                os.close(lock.fd)
                lock.fd = None
        cls.live.clear()

    def release(self) -> None:
        """Drops the lock; a second call does nothing."""
        self.is_held = False
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __del__(self) -> None:  # an Arguments dropped without training (init_before_training alone) lets go of its folder
        self.release()

    def __reduce__(self) -> tuple[type, tuple[str, None, bool]]:
        return FolderLock, (self.path, None, False)  # an fd means nothing in another process, and closing it there would close another file


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=FolderLock.forget_in_child)


@dataclass
class Arguments:
    """Everything a training run needs. Fields left as None take the settings tuned for the agent family
    and env (`elegantrl.tuned`), else the family's defaults.

    Example::

        args = Arguments(agent=AgentD3QN(), env=PreprocessEnv(gym.make("CartPole-v1")))
        train_and_evaluate(args)
    """

    agent: Any = _arg(None, "the agent: an AgentBase instance or subclass", cli=False)
    env: Any = _arg(None, "the env: an env id, a zero-argument function that makes it, a PreprocessEnv or a Gym-API env", cli=False)
    eval_env: Any = _arg(None, "a separate env for evaluation (the same forms as env); by default a copy of env", cli=False)
    if_on_policy: bool | None = _arg(None, "whether the agent learns on-policy; by default the agent's own", cli=False)

    cwd: str | None = _arg(None, "the run folder; by default runs/{env}_{agent}_{seed} (a new one if that exists)", str)
    if_remove: bool = _arg(False, "delete an existing run folder `cwd` before training", bool)
    if_resume: bool = _arg(False, "continue the run in `cwd` from its agent.pth (break_step counts its steps too)", bool)
    random_seed: int | None = _arg(0, "seeds torch, numpy's and Python's global generators and the envs: one seed gives one "
                                      "learning curve; None (--seed random) draws one, printed and kept in config.json", int)
    device: str | None = _arg(None, "torch device of the learner, e.g. cpu or cuda:0; by default cuda:0 if available", str)
    num_threads: int = _arg(1, "torch CPU threads while training; 1 is fastest for small networks, more help wide ones", int)

    if_tuned: bool = _arg(True, "fill the fields left None (and the agent settings not passed) from elegantrl.tuned's "
                                "entry for this agent family and env, if it has one", bool)
    net_dim: int | None = _arg(None, "width of the hidden layers", int)
    batch_size: int | None = _arg(None, "transitions per gradient step", int)
    repeat_times: float | None = _arg(None, "times each collected transition is used in gradient steps, on average", float)
    target_step: int | None = _arg(None, "env steps collected per round between updates, per env", int)
    num_envs: int | None = _arg(None, "envs explored at once, as a gymnasium vector env; a round collects target_step × num_envs", int)
    if_async_envs: bool = _arg(False, "step the num_envs envs in worker processes instead of in turn", bool)
    rollout_num: int = _arg(2, "exploration worker processes of train_and_evaluate_mp, each with num_envs envs", int)
    learner_gpus: tuple[int, ...] | None = _arg(None, "several learners on one machine, one per entry: GPU ids, or -1 for "
                                                       "a CPU learner (Gloo); train_and_evaluate_mp starts them", cli=False)
    if_async_workers: bool = _arg(False, "train_and_evaluate_mp, off-policy only: workers explore while the learner "
                                         "updates, at most 2 rollouts ahead, instead of in lockstep rounds", bool)
    max_memo: int | None = _arg(None, "replay buffer capacity in transitions", int)
    warmup_steps: int | None = _arg(None, "env steps of uniformly random actions before learning", int)
    learning_rate: float | None = _arg(None, "Adam learning rate", float)
    lr_decay_steps: int | None = _arg(None, "decay every learning rate linearly to zero over this many env steps, as SB3's "
                                            "'lin_' schedules do over a run's length (then learning stops); 0 keeps it constant", int)
    soft_update_tau: float | None = _arg(None, "target networks move this fraction toward the online ones at each target update "
                                               "(every gradient step; TD3: every actor step; DQN: every target_update_gap steps)", float)
    gamma: float | None = _arg(None, "discount factor per env step", float)
    reward_scale: float | None = _arg(None, "rewards are multiplied by this in the learning targets", float)
    if_state_norm: bool = _arg(False, "normalise states by running mean and std, clipped to ±10 (kept in the saved networks)", bool)

    break_step: int = _arg(2**20, "stop after this many env steps", int)
    if_allow_break: bool = _arg(True, "stop as soon as an evaluation reaches the env's target return", bool)
    target_hold: float = _arg(1.0, "with if_allow_break, stop at the first env step at least this multiple of the step where the "
                                   "target was first reached: 1 stops at once, 2 trains as long again to see whether the return holds", float)
    target_return: float | None = _arg(None, "the return that counts as solved; by default the env's", float)
    eval_gap: int | None = _arg(None, "env steps between evaluations", int)
    eval_times1: int = _arg(4, "episodes per evaluation", int)
    eval_times2: int = _arg(8, "extra episodes that confirm a new best before it is saved", int)
    if_print: bool = _arg(True, "print one progress line per evaluation", bool)
    if_tensorboard: bool = _arg(False, "also log the evaluation figures to TensorBoard, in cwd/tensorboard", bool)
    max_step: int | None = _arg(None, "a time limit: episodes are truncated (not terminated) after this many env steps; "
                                      "by default the env's own, else 1000", int)
    _made_folders: list[str] = field(default_factory=list, init=False, repr=False, compare=False)  # by prepare_cwd
    _folder_lock: FolderLock | None = field(default=None, init=False, repr=False, compare=False)  # by prepare_cwd
    _chosen_cwd: str | None = field(default=None, init=False, repr=False, compare=False)  # the default folder prepare_cwd took
    tuned_settings: tuple[str, dict[str, Any]] | None = field(default=None, init=False, repr=False, compare=False)  # by check

    def __new__(cls, *args: Any, **kwargs: Any) -> Arguments:
        refuse_unknown_keywords(cls, kwargs, "an agent's own settings go to its constructor, e.g. AgentDQN(explore_rate=(1.0, 0.05))")
        return super().__new__(cls)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self.__dataclass_fields__:  # a typo would otherwise be ignored silently
            close = difflib.get_close_matches(name, list(self.__dataclass_fields__), n=1)
            raise AttributeError(f"Arguments has no field {name!r}" + (f"; did you mean {close[0]!r}?" if close else ""))
        super().__setattr__(name, value)

    def init_before_training(self) -> None:
        """Validates the fields and the env (`check_env`), fills the defaults, creates the run folder and holds
        it (`FolderLock`) until these Arguments train and the run ends, or until `release_folder`.

        Raises TypeError or ValueError with the fix in the message. Deletes nothing unless
        ``if_remove`` is set.
        """
        self.check()
        self.prepare_cwd()

    def check(self) -> None:
        """`init_before_training` without touching the disk: validates, wraps the env, fills the defaults."""
        if self.agent is None:
            raise ValueError("Arguments.agent is not set: use e.g. Arguments(agent=AgentD3QN(), env='CartPole-v1')")
        if isinstance(self.agent, type) and issubclass(self.agent, AgentBase):
            self.agent = self.agent()
        for spec in dataclasses.fields(self):  # a numpy scalar, e.g. from a sweep's np.arange: its Python value
            if isinstance(getattr(self, spec.name), np.generic):
                setattr(self, spec.name, getattr(self, spec.name).item())
        if not isinstance(self.agent, AgentBase):
            raise TypeError(f"Arguments.agent must be an elegantrl agent such as AgentD3QN(), got {self.agent!r}")
        if self.env is None:
            raise ValueError("Arguments.env is not set: use e.g. Arguments(agent=..., env=PreprocessEnv('CartPole-v1'))")
        if self.max_step is not None and (type(self.max_step) is not int or self.max_step <= 0):
            raise ValueError(f"Arguments.max_step must be a positive int, got {self.max_step!r}")
        if isinstance(self.cwd, os.PathLike) or isinstance(self.cwd, str) and self.cwd:
            self.cwd = os.path.expanduser(os.fspath(self.cwd))  # "~/runs" is the home's, not a folder named "~"
        elif self.cwd is not None:
            raise ValueError(f"Arguments.cwd must be a folder's path or None (runs/...), got {self.cwd!r}")
        self.env = as_preprocess_env(self.env, self.max_step)
        if self.eval_env is not None:
            self.eval_env = as_preprocess_env(self.eval_env, self.max_step)
        self._check_agent_fits_env()
        if self.eval_env is not None:
            if len({id(getattr(e.env, "unwrapped", e.env)) for e in (self.env, self.eval_env)}) == 1:
                raise ValueError("Arguments.eval_env is the same env as Arguments.env: each evaluation would reset and step "
                                 "the env in the middle of exploration's episode, and store transitions that no env step "
                                 "made. Pass a second env (e.g. PreprocessEnv(gym.make(env_id))), or leave eval_env unset "
                                 "for a copy of env")
            sizes = [(e.state_dim, e.action_dim, e.if_discrete) for e in (self.env, self.eval_env)]
            if sizes[0] != sizes[1]:
                raise ValueError(f"eval_env {self.eval_env.env_name!r} does not match env {self.env.env_name!r}: "
                                 f"(state_dim, action_dim, if_discrete) are {sizes[1]} against {sizes[0]}; "
                                 f"evaluate on the same kind of env, or leave eval_env unset for a copy of env")
        for note in check_env(self.env):  # raises on a broken env before anything is built
            warnings.warn(f"env {self.env.env_name!r}: {note}", stacklevel=2)
        if self.if_on_policy is not None and self.if_on_policy == self.agent.if_off_policy:
            kind = "off" if self.agent.if_off_policy else "on"
            raise ValueError(f"if_on_policy={self.if_on_policy} but {type(self.agent).__name__} is {kind}-policy; leave if_on_policy unset")
        self.if_on_policy = not self.agent.if_off_policy

        self._apply_tuned()
        for name, value in {**FIELD_DEFAULTS, **self.agent.arg_defaults}.items():
            if getattr(self, name) is None:
                setattr(self, name, value)
        if isinstance(self.device, torch.device):  # what agent.init takes too; config.json and --device want its name
            self.device = str(self.device)
        self._check_values()
        if isinstance(self.agent, AgentMCTS) and self.max_memo < self.env.max_step:
            raise ValueError(f"Arguments.max_memo ({self.max_memo:,d}) is less than one episode may last (max_step "
                             f"{self.env.max_step:,d}), and {type(self.agent).__name__} stores whole episodes: the first "
                             f"that long would not fit. Raise max_memo to several episodes' worth, or lower max_step")
        if self.target_return is not None:
            self.env.target_return = float(self.target_return)
        self.target_return = self.env.target_return
        self._check_learner_gpus()
        if self.device is None:  # under torchrun, each rank's own GPU
            self.device = (rank_gpu(int(os.environ["LOCAL_RANK"])) if launched_by_torchrun() else "cuda:0") if torch.cuda.is_available() else "cpu"
        try:
            torch.device(self.device)
        except RuntimeError as error:
            raise ValueError(f"Arguments.device {self.device!r} is not a torch device; use e.g. 'cpu' or 'cuda:0'") from error
        if torch.device(self.device).type == "meta":
            raise ValueError("Arguments.device 'meta' holds shapes but no data, so nothing can train on it; use e.g. 'cpu' or 'cuda:0'")
        try:
            torch.empty(0, device=self.device)
        except (RuntimeError, AssertionError, ImportError) as error:  # a CPU build of torch asserts; "hpu" imports torch.hpu
            available = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())] + ["mps"] * torch.backends.mps.is_available()
            cause = (str(error).strip().splitlines() or [type(error).__name__])[0]  # CUDA's run on over several lines
            raise ValueError(f"Arguments.device {self.device!r} is not available here ({cause}); available: {', '.join(available)}") from error
        if self.random_seed is None:  # a resumed run goes on with its own
            saved = read_config(self.cwd).get("random_seed") if self.if_resume and self.cwd else None
            self.random_seed = int(np.random.SeedSequence().entropy % 2**31) if saved is None else saved
            if self.if_print and int(os.environ.get("RANK", 0)) == 0:  # under torchrun, rank 0's seed is the run's
                print(f"random_seed is None: {'drew seed' if saved is None else 'the run goes on with its seed'} {self.random_seed}")
        if self.if_tensorboard:
            try:
                importlib.import_module("torch.utils.tensorboard")
            except ImportError as error:
                raise ImportError("if_tensorboard needs the tensorboard package: pip install tensorboard") from error

    def _apply_tuned(self) -> None:
        """Fills the fields left None, and the agent settings not passed, from `elegantrl.tuned` (printed at the start).

        A resumed run takes the tuned settings its config.json recorded, not the table's of today.
        """
        if self.tuned_settings is not None or not self.if_tuned:  # a second check() has nothing left to fill
            return
        saved = read_config(self.cwd) if self.if_resume and self.cwd and os.path.isdir(self.cwd) else {}
        if saved:  # what the run had, even if the table has changed since (a run with none keeps none)
            family, entry = saved.get("tuned_family", ""), saved.get("tuned_settings", {})
        else:
            family, entry = tuned_entry(self.agent, self.env.env_name, getattr(self.env.spec, "kwargs", None))
        applied = {name: value for name, value in entry.items() if name != "agent" and getattr(self, name) is None}
        for name, value in applied.items():
            setattr(self, name, value)
        agent_tuned = self.agent.apply_tuned(entry.get("agent", {}))
        self.agent.tuned_settings = agent_tuned
        if applied or agent_tuned:
            self.tuned_settings = (family, {**applied, **({"agent": agent_tuned} if agent_tuned else {})})

    def _check_learner_gpus(self) -> None:
        if self.learner_gpus is None:
            return
        gpus = self.learner_gpus
        if not isinstance(gpus, (tuple, list)) or not gpus or not all(isinstance(g, int) and not isinstance(g, bool) for g in gpus):
            raise TypeError(f"Arguments.learner_gpus must be a non-empty tuple of GPU ids (or -1 for a CPU learner), "
                            f"e.g. (0, 1), got {gpus!r}")
        if self.device is not None and self.device not in map(gpu_device, gpus):
            raise ValueError(f"Arguments.learner_gpus={tuple(gpus)} gives each learner its device; leave Arguments.device "
                             f"unset (it is {self.device!r})")
        if any(g < -1 for g in gpus) or (min(gpus) < 0 <= max(gpus)):
            raise ValueError(f"Arguments.learner_gpus={tuple(gpus)} mixes CPU (-1) and GPU learners or has an id below -1: "
                             f"give GPU ids only, e.g. (0, 1), or -1 for each CPU learner, e.g. (-1, -1)")
        if max(gpus) >= torch.cuda.device_count() or len(set(gpus)) < len(gpus) and max(gpus) >= 0:
            have = f"{torch.cuda.device_count()} (ids 0 to {torch.cuda.device_count() - 1})" if torch.cuda.device_count() else "none"
            raise ValueError(f"Arguments.learner_gpus={tuple(gpus)} needs distinct GPUs that exist; this machine has {have}. "
                             f"Use -1 for each CPU learner, e.g. (-1, -1)")
        self.learner_gpus = tuple(gpus)
        local_rank = int(os.environ.get("LOCAL_RANK", 0)) if launched_by_torchrun() else 0
        self.device = self.device or gpu_device(gpus[min(local_rank, len(gpus) - 1)])

    def _check_agent_fits_env(self) -> None:
        agent_name, env = type(self.agent).__name__, self.env
        if self.agent.if_discrete != env.if_discrete:
            fitting = [name for name, cls in list_agents().items() if cls.if_discrete == env.if_discrete]
            space = f"Discrete({env.action_dim})" if env.if_discrete else f"Box(shape=({env.action_dim},))"
            wanted = "discrete" if self.agent.if_discrete else "continuous (Box)"
            raise ValueError(
                f"{agent_name} needs a {wanted} action space, but {env.env_name} has {space}; "
                f"use one of: {', '.join('Agent' + name for name in fitting) or 'none available yet'}"
            )
        if not env.if_bounded_actions:
            raise ValueError(
                f"{env.env_name} has an unbounded Box action space; elegantrl's actors act in [-1, 1] "
                f"and map that to the bounds, so they must be finite. Give the env's action_space finite "
                f"low and high (e.g. env.action_space = gymnasium.spaces.Box(-2.0, 2.0, shape))."
            )

    def _check_values(self) -> None:
        for spec in dataclasses.fields(self):
            value, expected = getattr(self, spec.name), spec.metadata.get("type")
            if value is None or expected is None:
                continue
            kinds = (int, float) if expected is float else (expected,)
            if isinstance(value, bool) != (expected is bool) or not isinstance(value, kinds):
                is_whole = expected is int and isinstance(value, float) and value.is_integer()
                whole = f"; write {int(value):_d}, since {value!r} is a float" if is_whole else ""
                raise TypeError(f"Arguments.{spec.name} must be {expected.__name__}, got {value!r} ({type(value).__name__}){whole}")
            if expected is float and not (math.isfinite(value) or spec.name == "target_return" and not math.isnan(value)):
                raise ValueError(f"Arguments.{spec.name} must be a {'number' if spec.name == 'target_return' else 'finite number'}, got {value!r}")
        positive = ["net_dim", "batch_size", "repeat_times", "target_step", "max_memo", "learning_rate", "break_step",
                    "eval_gap", "eval_times1", "num_threads", "num_envs", "reward_scale", "rollout_num"]
        for name in positive:  # None: a setting the agent does not use (max_memo for on-policy agents)
            if getattr(self, name) is not None and not getattr(self, name) > 0:
                raise ValueError(f"Arguments.{name} must be positive, got {getattr(self, name)!r}")
        if self.random_seed is not None and not 0 <= self.random_seed < 2**32:
            raise ValueError(f"Arguments.random_seed must be an integer from 0 to 2**32 - 1, got {self.random_seed!r}")
        for name in ["warmup_steps", "eval_times2", "lr_decay_steps"]:
            if getattr(self, name) < 0:
                raise ValueError(f"Arguments.{name} must be zero or positive, got {getattr(self, name)!r}")
        if 0 < self.lr_decay_steps <= self.warmup_steps:
            raise ValueError(f"lr_decay_steps={self.lr_decay_steps} ends the learning-rate decay within the {self.warmup_steps} "
                             f"warm-up steps, before the first update: nothing would be learned. Raise lr_decay_steps (SB3's "
                             f"lin_ schedules decay over the whole run: e.g. break_step), or set 0 for a constant rate")
        if self.if_on_policy and self.warmup_steps:
            raise ValueError(f"warmup_steps={self.warmup_steps}, but {type(self.agent).__name__} learns on-policy, only from "
                             f"rollouts of its own policy: random warm-up steps would be thrown away. Set warmup_steps=0")
        if not self.target_hold >= 1.0:
            raise ValueError(f"Arguments.target_hold must be 1 or more (a multiple of the env step of the first hit), got {self.target_hold}")
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"Arguments.gamma must be in (0, 1], got {self.gamma}")
        if self.soft_update_tau is not None and not 0.0 < self.soft_update_tau <= 1.0:
            raise ValueError(f"Arguments.soft_update_tau must be in (0, 1], got {self.soft_update_tau}")
        if self.max_memo is not None and self.batch_size > self.max_memo:
            raise ValueError(f"Arguments.batch_size ({self.batch_size}) exceeds max_memo ({self.max_memo}); lower batch_size or raise max_memo")

    def prepare_cwd(self) -> None:
        """Chooses and creates the run folder, or checks that the run to resume is there, and locks it
        (`FolderLock`) until the run ends. With `if_remove`, removes only the files of an earlier
        elegantrl run, and refuses anything else, or a folder another run is using."""
        held = self._folder_lock is not None and self._folder_lock.is_held
        if self.cwd is not None and self.cwd == self._chosen_cwd and not (held or self.if_resume or self.if_remove):
            self.cwd = None  # these Arguments train again: the default folder they took holds their last run, so take a new one
        try:
            if self.if_resume:
                if self.cwd is not None and os.path.isdir(self.cwd):
                    self._lock_folder()  # first: a live run that has not saved yet is in use, not a folder without agent.pth
                self._check_resumable()
                self._lock_folder()
            elif self.cwd is None and not self.if_remove:
                self._claim_new_folder()
                self._lock_folder()
            else:
                self._prepare_given_folder()
        except BaseException:
            self.release_folder()
            raise

    def _prepare_given_folder(self) -> None:
        if self.cwd is None:
            self.cwd = self._default_cwd()
        existed = os.path.isdir(self.cwd)
        if not existed:
            check_folder_writable(self.cwd)
        if not self._make_folder(self.cwd, if_new=not os.path.lexists(self.cwd)):
            raise FileExistsError(f"Arguments.cwd {self.cwd!r} was made by another process while this run was starting (a "
                                  f"second run with the same cwd?); two runs in one folder would overwrite each other's "
                                  f"files. Give each run its own cwd")
        self._lock_folder()  # before looking inside: a run that starts there now is refused, not overwritten
        if existed:
            check_folder_writable(self.cwd)  # after the lock: its probe goes into no live run's folder
        if os.listdir(self.cwd):
            if self.if_remove:
                remove_run(self.cwd)
            elif is_run_folder(self.cwd):
                raise FileExistsError(f"run folder {self.cwd!r} already holds a run; set if_resume=True to continue it, "
                                      f"if_remove=True to delete it, or choose another Arguments.cwd")
            else:
                raise FileExistsError(f"Arguments.cwd {self.cwd!r} is not empty and holds no run marked as elegantrl's (it holds "
                                      f"{listing(os.listdir(self.cwd))}); choose a new or empty folder")

    def _lock_folder(self) -> None:
        path = os.path.realpath(self.cwd)
        if self._folder_lock is not None and self._folder_lock.path == path and self._folder_lock.is_held:
            return  # init_before_training, then train_and_evaluate: one run
        if self._folder_lock is not None:  # another folder's: let it go, but not the folders just made for this one
            self._folder_lock.release()
        self._folder_lock = FolderLock.acquire(path, self.cwd)

    def release_folder(self) -> None:
        """Ends this run's hold on its folder (`FolderLock`); the run's end does it, and so does the end of the process."""
        if self._folder_lock is not None:
            self._folder_lock.release()
            self._folder_lock = None
        self._made_folders = []  # no longer this run's to remove: another may hold them now

    def _claim_new_folder(self) -> None:
        """Sets `cwd` to the first of runs/<env>_<agent>_<seed>, -2, -3, ... that this run creates itself.

        An existing folder is never taken, even an empty one: it may be another run's, started at the
        same moment and not yet written to, and two runs in one folder overwrite each other's files.
        """
        base = self._default_cwd()
        check_folder_writable(base)
        for suffix in itertools.count(1):
            self.cwd = base if suffix == 1 else f"{base}-{suffix}"
            if not os.path.lexists(self.cwd) and self._make_folder(self.cwd, if_new=True):
                self._chosen_cwd = self.cwd
                return

    def _default_cwd(self) -> str:
        agent_name = type(self.agent).__name__.removeprefix("Agent")
        return os.path.join("runs", f"{self.env.env_name}_{agent_name}_{self.random_seed}")

    def _make_folder(self, cwd: str, if_new: bool) -> bool:
        """Makes `cwd` and the folders above it (remembered for `discard_new_folder`); with `if_new`, through one
        `os.mkdir`, which fails where another process made the folder first: then False, and nothing is made."""
        # where this call makes nothing in the folder this run already holds, the folders its earlier call made
        # (init_before_training's) are still this run's to remove on a failed start
        made = [path for path in parent_folders(cwd) if not os.path.exists(path)]
        held = self._folder_lock is not None and self._folder_lock.is_held and self._folder_lock.path == os.path.realpath(cwd)
        self._made_folders = made or (self._made_folders if held else [])
        try:
            os.makedirs(os.path.dirname(os.path.abspath(cwd)), exist_ok=True)
            if if_new:
                os.mkdir(cwd)
            else:
                os.makedirs(cwd, exist_ok=True)  # an existing folder (or a link to one): nothing to make
        except OSError as error:
            self._made_folders = [path for path in self._made_folders if path != os.path.abspath(cwd)]  # not made by us
            self.discard_new_folder()
            if if_new and isinstance(error, FileExistsError) and os.path.isdir(cwd):
                return False
            raise ValueError(f"Arguments.cwd {cwd!r} cannot be made: {error.strerror}; choose another cwd") from error
        return True

    def discard_new_folder(self) -> None:
        """Undoes `prepare_cwd` after a failed start: removes the folders it made, if they are still empty,
        and releases the folder."""
        for path in reversed(self._made_folders):
            with contextlib.suppress(OSError):  # not empty, or gone: leave it
                os.rmdir(path)
        self._made_folders = []
        self.release_folder()

    def _check_resumable(self) -> None:
        if self.if_remove:
            raise ValueError("if_resume=True and if_remove=True: that would delete the run to resume; set only one")
        if self.cwd is None or not os.path.isfile(os.path.join(self.cwd, "agent.pth")):
            raise FileNotFoundError(f"if_resume=True needs Arguments.cwd set to a run folder that holds agent.pth; got {self.cwd!r}")
        saved = read_config(self.cwd, if_strict=True)
        if not saved:
            raise ValueError(f"cannot resume the run in {self.cwd!r}: it holds agent.pth but no config.json, which says which "
                             f"agent, env and widths the run had (and lets load_agent and if_remove know the folder). Restore "
                             f"config.json, or start a new run in another cwd")
        actor_path = os.path.join(self.cwd, "actor.pth")
        if os.path.isfile(actor_path):  # checked now, not when the run ends and loads its best actor, hours later
            try:
                load_torch_file(actor_path, "cpu")
            except ValueError as error:
                raise ValueError(f"cannot resume the run in {self.cwd!r}: {error} Or move actor.pth out of the folder: the "
                                 f"run then keeps its best actor from here on") from error
        if os.path.isfile(actor_path) and not read_records(self.cwd)[1]:
            raise ValueError(f"cannot resume the run in {self.cwd!r}: its recorder.csv, which holds the best return of actor.pth, "
                             f"is missing or has no readable rows, so a worse actor could replace actor.pth. Restore recorder.csv, "
                             f"or move actor.pth out of the folder (the run then keeps its best actor from here on)")
        now = {"Arguments.agent": ("agent", type(self.agent).__name__), "Arguments.env": ("env", self.env.env_name),
               "Arguments.net_dim": ("net_dim", self.net_dim), "the env's state_dim": ("state_dim", self.env.state_dim),
               "the env's action_dim": ("action_dim", self.env.action_dim), "Arguments.max_step": ("max_step", self.env.max_step)}
        if saved.get("env_kwargs") is not None and (kwargs := json_env_kwargs(self.env)) is not None:  # None: JSON could not hold them
            if task_kwargs(self.env.env_name, kwargs) != task_kwargs(self.env.env_name, saved["env_kwargs"]):  # g=10.0 is Pendulum's own
                now["the env's keyword arguments"] = ("env_kwargs", kwargs)  # Pendulum-v1 with g=2 is another task than with g=10
        now["the wrappers on the env"] = ("env_wrappers", added_wrappers(self.env))
        changed = [name for name, (key, value) in now.items() if saved.get(key, value) != value]
        changed = [name for name in changed if name in ("Arguments.agent", "Arguments.env")] or changed  # the rest follows from them
        differ = [f"{name} is {now[name][1]!r}, the run's {saved[now[name][0]]!r}" for name in changed]
        if differ:
            raise ValueError(f"cannot resume the run in {self.cwd!r} ({saved.get('agent')} on {saved.get('env')}) with another "
                             f"task: {'; '.join(differ)}. Resume with the run's settings, or start a new run in another cwd")


def as_preprocess_env(env: Any, max_step: int | None = None) -> PreprocessEnv:
    """A `PreprocessEnv` for what `Arguments.env` may hold: a PreprocessEnv, an env, an env id, or a zero-argument
    function (an env class included) that makes one, kept as its `source`; with `max_step`, its time limit."""
    if isinstance(env, str):  # made with the limit, which may lengthen the registered one
        return PreprocessEnv(env, max_step=max_step)
    if isinstance(env, type) or (callable(env) and not hasattr(env, "step")):
        try:
            made = env()
        except TypeError as error:
            raise TypeError(f"Arguments.env {getattr(env, '__name__', env)!r} is a function or class, so it is called with no "
                            f"arguments to make the env, which failed ({error}); pass an env instance, an env id, or a "
                            f"zero-argument function such as functools.partial(MyEnv, level=2)") from error
        wrapped = made if isinstance(made, PreprocessEnv) else PreprocessEnv(made)
        if wrapped.source is None:
            wrapped.source = env
    else:
        wrapped = env if isinstance(env, PreprocessEnv) else PreprocessEnv(env)
    if max_step is not None:
        wrapped.set_max_step(max_step)
    return wrapped


# ---- the run folder: the library deletes only what it wrote --------------------------------
RUN_MARKER = "elegantrl_run"  # a key of the config.json this library writes: the folder is a run of ours
RUN_FILE = re.compile(r"(config\.json|agent\.pth|actor\.pth|recorder\.csv|learning_curve\.png|video\.gif)(\.tmp\d+)?")


def listing(names: list[str], most: int = 5) -> str:
    """A few of `names`, for a message."""
    names = sorted(names)
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def parent_folders(path: str) -> list[str]:
    """`path` and the folders above it, outermost first."""
    path, chain = os.path.abspath(path), []
    while path not in chain:
        chain.append(path)
        path = os.path.dirname(path)
    return chain[::-1]


def check_folder_writable(cwd: str) -> None:
    """Raises ValueError, naming `Arguments.cwd`, unless `cwd` is a folder that can be written or created."""
    existing = next(path for path in reversed(parent_folders(cwd)) if os.path.exists(path))
    if not os.path.isdir(existing):
        raise ValueError(f"Arguments.cwd {cwd!r} cannot be a folder: {existing!r} is a file; choose another cwd")
    try:  # a real try, not os.access: root passes os.access even where nothing can be made (/sys, a read-only disk)
        os.rmdir(tempfile.mkdtemp(prefix=".elegantrl-probe-", dir=existing))
    except OSError as error:
        raise ValueError(f"Arguments.cwd {cwd!r} cannot be written: {error.strerror} in {existing!r}; choose another cwd") from error


def read_config(cwd: str, if_strict: bool = False) -> dict[str, Any]:
    """The config.json of the run in `cwd`, or {} where there is none that reads; with `if_strict`, {} only where
    there is none, and a ValueError naming the file where one cannot be read (a resume must know its task)."""
    path = os.path.join(cwd, "config.json")
    try:
        with open(path) as file:
            config = json.load(file)
        problem = None if isinstance(config, dict) else f"it holds a {type(config).__name__}, not an object"
    except FileNotFoundError:
        return {}
    except OSError as error:  # a permission, a folder of that name
        problem = error.strerror
    except ValueError as error:
        problem = str(error)
    if problem is None:
        return config
    if if_strict:
        raise ValueError(f"{path} cannot be read ({problem}): it is damaged, unreadable here, or not one elegantrl wrote, so "
                         f"it does not say which agent, env and widths the run had. Restore it, or start a new run in another cwd")
    return {}


def read_records(cwd: str) -> tuple[list[str], list[dict[str, float]], int]:
    """What recorder.csv in `cwd` holds: its columns, the rows that read as numbers and have a best return (a row
    torn by a kill mid-write does not), and how many rows it has in all; no columns and no rows where it is missing."""
    path = os.path.join(cwd, "recorder.csv")
    if not os.path.isfile(path):
        return [], [], 0
    try:
        with open(path, newline="") as file:
            reader = csv.DictReader(file)
            rows = list(reader)
            fields = list(reader.fieldnames or [])
    except (UnicodeDecodeError, csv.Error) as error:
        raise ValueError(f"{path} cannot be read ({error}): it is damaged, or not one elegantrl wrote. Restore it, or move it "
                         f"and actor.pth out of the folder (the run then keeps its best actor from here on)") from error
    records = []
    for row in rows:
        try:
            record = {k: int(v) if k == "step" else float(v) for k, v in row.items() if v != ""}
        except (TypeError, ValueError):
            continue
        if "best_return" in record and "step" in record:
            records.append(record)
    return fields, records, len(rows)


def is_run_folder(cwd: str) -> bool:
    """Whether `cwd` holds the config.json of an elegantrl run (with the marker this library writes)."""
    return RUN_MARKER in read_config(cwd)


def remove_run(cwd: str) -> None:
    """Deletes the files of the elegantrl run in `cwd` (``if_remove``); refuses, deleting nothing, a folder
    that is not a run, holds anything a run does not write, or is the current folder, a parent of it or home."""
    here = os.path.realpath(cwd)
    if here in map(os.path.realpath, parent_folders(os.getcwd()) + [os.path.expanduser("~")]):
        raise ValueError(f"if_remove=True would delete {cwd!r}, which is the current folder, a parent of it or the home "
                         f"folder; elegantrl never removes those. Choose a run folder below it as Arguments.cwd")
    if not is_run_folder(cwd):
        raise FileExistsError(f"if_remove=True removes only an elegantrl run folder, and {cwd!r} is none (its config.json, if any, "
                              f"lacks the '{RUN_MARKER}' marker that runs of this version write; it holds {listing(os.listdir(cwd))}). "
                              f"Nothing was deleted; choose another Arguments.cwd, or move those files away yourself")
    # A run writes plain files and one plain folder; a link among them was made by someone else, and following
    # it would delete what it points to, so links count as strangers, as does anything that is not a plain file.
    def written(path: str, is_folder: bool = False) -> bool:
        return not os.path.islink(path) and (os.path.isdir(path) if is_folder else os.path.isfile(path))

    board = os.path.join(cwd, "tensorboard")
    board_files = os.listdir(board) if written(board, is_folder=True) else []
    names = os.listdir(cwd)  # only what was vetted goes: a file that appears meanwhile stays
    strangers = [name for name in names if not (RUN_FILE.fullmatch(name) and written(os.path.join(cwd, name))
                                                or name == "tensorboard" and written(board, is_folder=True))]
    strangers += [f"tensorboard/{name}" for name in board_files
                  if not (name.startswith("events.out.tfevents.") and written(os.path.join(board, name)))]
    if strangers:
        raise FileExistsError(f"if_remove=True: {cwd!r} holds files an elegantrl run does not write ({listing(strangers)}); "
                              f"nothing was deleted. Move them away yourself, or choose another Arguments.cwd")
    for name in board_files:
        os.remove(os.path.join(board, name))
    if written(board, is_folder=True):
        os.rmdir(board)
    for name in names:
        if name != "tensorboard":
            os.remove(os.path.join(cwd, name))


def list_agents() -> dict[str, type[AgentBase]]:
    """The agents by their short name (``"D3QN"`` for ``AgentD3QN``)."""
    return {
        name.removeprefix("Agent"): cls
        for name, cls in vars(agent_module).items()
        if inspect.isclass(cls) and issubclass(cls, AgentBase) and cls not in FAMILY_BASES
    }


class Evaluator:
    """Plays deterministic evaluation episodes, keeps the best actor on disk, records the curve.

    Files in `cwd`: ``actor.pth`` (state_dict of the best actor), ``recorder.csv`` (one row per
    evaluation), ``learning_curve.png``.
    """

    def __init__(self, cwd: str, env: PreprocessEnv, eval_gap: int, eval_times1: int, eval_times2: int,
                 target_return: float, random_seed: int = 0, if_print: bool = True, if_tensorboard: bool = False, title: str = ""):
        self.cwd, self.env, self.title = cwd, env, title
        self.curve_time = -math.inf  # when learning_curve.png was last drawn
        self.eval_gap, self.eval_times1, self.eval_times2 = eval_gap, eval_times1, eval_times2
        self.target_return, self.if_print = target_return, if_print
        self.random_seed = random_seed
        self.next_eval_step = eval_gap
        self.best_return = -math.inf
        self.eval_seconds = 0.0  # time spent evaluating, excluded from the training time
        self.start_time = time.perf_counter()
        self.records: list[dict[str, float]] = []
        self.csv_path = os.path.join(cwd, "recorder.csv")
        self.fields: list[str] = []  # the CSV's columns; a figure first logged later widens them
        self.writer = None  # TensorBoard: the same figures as the CSV, under cwd/tensorboard, from the first record on
        self.writer_class = None  # made at the first record, so that a start that fails leaves no event file behind
        # Imported now, while a Ctrl-C still just fails the start: one that tears matplotlib's first import
        # leaves a half-made module behind, and the final save could then not draw the curve.
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.figure  # noqa: F401

        if if_tensorboard:  # Arguments.check has said how to install it where it is missing
            from torch.utils.tensorboard import SummaryWriter

            self.writer_class = SummaryWriter

    @property
    def first_hit_step(self) -> int | None:
        """The env step of the first evaluation whose best return reached the target (a resumed run's too), or None."""
        return next((int(r["step"]) for r in self.records if r["best_return"] >= self.target_return), None)

    def resume(self, total_steps: int) -> None:
        """Continues the record of an earlier run in the same folder: its curve, best return and clock."""
        if os.path.isfile(self.csv_path):
            self.fields, records, num_rows = read_records(self.cwd)
            self.records = [record for record in records if record["step"] <= total_steps]  # not past the checkpoint resumed
            if len(self.records) < num_rows:  # rewritten: a torn last row would tear the next one appended too
                self._write_csv(self.records, rewrite=True)
        if self.records and os.path.isfile(os.path.join(self.cwd, "actor.pth")):  # without it, the next evaluation writes one
            self.best_return = max(record["best_return"] for record in self.records)
        self.start_clock()
        self.next_eval_step = (total_steps // self.eval_gap + 1) * self.eval_gap

    def start_clock(self) -> None:
        """Starts the training clock now, where a resumed record left off: the trainers call it as the first round
        begins, so that setting up (imports, envs, the run folder) is not counted as training, as for SB3's runs."""
        self.start_time = time.perf_counter() - (self.records[-1]["seconds"] if self.records else 0.0)
        self.eval_seconds = 0.0

    @property
    def train_seconds(self) -> float:
        """Wall seconds since the start, less the time spent evaluating."""
        return time.perf_counter() - self.start_time - self.eval_seconds

    def is_due(self, total_steps: int) -> bool:
        """Whether `eval_gap` env steps have passed since the last evaluation."""
        return total_steps >= self.next_eval_step

    def episode_return(self, agent: AgentBase, seed: int) -> float:
        """The return of one deterministic episode of `agent` on the evaluation env, reset with `seed`."""
        try:
            state, _ = self.env.reset(seed=seed)
            self._check_state(state)  # reset()'s too: a discrete policy would act on a NaN state without a word
            episode_return = 0.0
            for _ in range(self.env.max_step):
                state, reward, terminated, truncated, _ = self.env.step(agent.act(state))  # raises on a diverged actor's action
                episode_return += reward
                self._check_state(state)
                if terminated or truncated:
                    break
            if not math.isfinite(episode_return):
                raise FloatingPointError(f"env {self.env.env_name!r} returned a non-finite reward ({episode_return}). "
                                         f"Check the env's step(), or clip its outputs")
        except FloatingPointError as error:
            say_what_was_kept(error, self.cwd, where="evaluation: ")
            raise
        return episode_return

    def _check_state(self, state: np.ndarray) -> None:
        if not np.isfinite(state).all():
            raise FloatingPointError(f"env {self.env.env_name!r} returned a non-finite state: {state}. "
                                     f"Check the env's step() and reset(), or clip its outputs")

    def evaluate_and_save(self, agent: AgentBase, total_steps: int, logs: dict[str, float], if_force: bool = False,
                          seconds: float | None = None) -> bool:
        """Evaluates if `eval_gap` steps have passed (or `if_force`); returns True once the target is reached.

        `seconds` is the training time to record; by default this Evaluator's own clock.
        """
        if not self.is_due(total_steps) and not if_force:
            return False
        self.next_eval_step = (total_steps // self.eval_gap + 1) * self.eval_gap  # a fixed cadence in env steps
        for name, value in logs.items():  # before evaluating: a diverged actor is the cause, not the env
            if not math.isfinite(value):
                raise FloatingPointError(
                    f"training diverged at env step {total_steps}: {name} is {value}. {kept_sentence(self.cwd)}"
                    f"Try a lower learning_rate or reward_scale."
                )
        start = time.perf_counter()
        seconds = self.train_seconds if seconds is None else seconds  # now: this evaluation's own time is not training
        seeds = iter(evaluation_seeds(self.random_seed, total_steps, self.eval_gap, self.eval_times1 + self.eval_times2))
        returns = [self.episode_return(agent, int(next(seeds))) for _ in range(self.eval_times1)]
        if np.mean(returns) > self.best_return and self.eval_times2:
            returns += [self.episode_return(agent, int(next(seeds))) for _ in range(self.eval_times2)]
        mean, std = float(np.mean(returns)), float(np.std(returns))
        improved = mean > self.best_return
        self.best_return = max(mean, self.best_return)
        record = {"step": total_steps, "seconds": seconds,
                  "return_mean": mean, "return_std": std, "best_return": self.best_return, **logs}
        # The record first: a kill between the two then leaves a best return whose actor was not saved (the one on
        # disk stays, and only a better one replaces it), never an actor.pth whose return no record holds
        self._write_record(record)
        if improved:
            atomic_torch_save(agent.actor.state_dict(), os.path.join(self.cwd, "actor.pth"))
        self.eval_seconds += time.perf_counter() - start
        if time.monotonic() - self.curve_time > CURVE_SECONDS:  # a live curve, not redrawn after every evaluation
            start = time.perf_counter()
            self.save_curve()
            self.eval_seconds += time.perf_counter() - start  # drawing what evaluation found is evaluation, not training
        return self.best_return >= self.target_return

    def _write_record(self, record: dict[str, float]) -> None:
        self.records.append(record)
        new_fields = [name for name in record if name not in self.fields]
        if new_fields:  # e.g. TD3's obj_actor, absent while no delayed actor step has run: rewrite with a wider header
            self.fields += new_fields
        self._write_csv(self.records if new_fields else [record], rewrite=bool(new_fields))
        if self.if_print and (new_fields or len(self.records) == 1):
            print(f"{'step':>10} {'seconds':>8} {'return (mean ± std)':>21} {'best':>9}  " + "  ".join(f"{k:>12}" for k in self.fields[5:]))
        if self.writer_class is not None:
            if self.writer is None:
                self.writer = self.writer_class(os.path.join(self.cwd, "tensorboard"))
            for name, value in record.items():
                if name != "step":
                    self.writer.add_scalar(name, value, record["step"])
            self.writer.flush()
        if self.if_print:
            r = record
            print(f"{r['step']:>10,d} {r['seconds']:>8.1f} {r['return_mean']:>10.2f} ± {r['return_std']:<8.2f} {r['best_return']:>9.2f}  "
                  + "  ".join(f"{r[k]:>12.4g}" if k in r else f"{'':>12}" for k in self.fields[5:]), flush=True)

    def _write_csv(self, rows: list[dict[str, float]], rewrite: bool) -> None:
        """Appends `rows` to recorder.csv, or writes the file anew with them, through a rename."""
        def write(path: str, mode: str) -> None:
            with open(path, mode, newline="") as file:
                writer = csv.DictWriter(file, self.fields, restval="")
                if mode == "w":
                    writer.writeheader()
                writer.writerows(rows)

        if rewrite:
            atomic_write(self.csv_path, lambda temporary: write(temporary, "w"))
        else:
            write(self.csv_path, "a")

    def save_curve(self) -> str:
        """Draws return against env steps, with the target line, into ``learning_curve.png`` (through a rename)."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        figure = Figure(figsize=(8, 4.5))
        FigureCanvasAgg(figure)
        ax = figure.add_subplot()
        steps = np.array([r["step"] for r in self.records])
        mean = np.array([r["return_mean"] for r in self.records])
        std = np.array([r["return_std"] for r in self.records])
        ax.plot(steps, mean, color="tab:blue", label="evaluation return (mean)")
        ax.fill_between(steps, mean - std, mean + std, color="tab:blue", alpha=0.2, label="± std")
        if math.isfinite(self.target_return):
            ax.axhline(self.target_return, color="tab:red", linestyle="--", label=f"target {self.target_return:g}")
        ax.set_xlabel("env steps")
        ax.set_ylabel("episode return")
        ax.set_title(self.title)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
        figure.tight_layout()
        path = os.path.join(self.cwd, "learning_curve.png")
        atomic_write(path, lambda temporary: figure.savefig(temporary, dpi=100, format="png"))
        self.curve_time = time.monotonic()
        return path


def evaluation_seeds(random_seed: int, total_steps: int, eval_gap: int, episodes: int) -> list[int]:
    """The reset seeds of an evaluation's episodes: from the run's seed and the evaluation's index
    ``total_steps // eval_gap``, so one seed gives one curve even where a busy Evaluator process
    skips a snapshot, and the benchmarks can give another library's evaluations the same seeds."""
    return [int(seed) for seed in np.random.default_rng((random_seed, total_steps // eval_gap)).integers(2**31, size=episodes)]


def kept_sentence(cwd: str | None) -> str:
    """What a failed run leaves: says where the best actor is, if one was saved yet."""
    if cwd is None:  # a learner rank other than 0 under torchrun, which writes nothing
        return "Rank 0 keeps the run folder. "
    if os.path.isfile(os.path.join(cwd, "actor.pth")):
        return f"The best actor so far is kept in {cwd}/actor.pth. "
    # not "no evaluation had finished": a resumed run's user may have moved actor.pth out, as a resume error advises;
    # and the folder is not named, as a failed start's is removed
    return NO_ACTOR_KEPT


NO_ACTOR_KEPT = "The run folder holds no actor.pth (one is written when an evaluation sets a new best return). "


def recheck_kept_sentence(error: BaseException, cwd: str | None) -> None:
    """Where `error` says no actor.pth was kept and one is there now, says where it is instead.

    Under `train_and_evaluate_mp` a worker's error is worded while the Evaluator process may still be writing
    the actor.pth of its last evaluation; the learner calls this once that process has stopped."""
    text, none = (error.args[0] if error.args else None), NO_ACTOR_KEPT.rstrip()
    if cwd is not None and isinstance(text, str) and none in text and os.path.isfile(os.path.join(cwd, "actor.pth")):
        error.args = (text.replace(none, kept_sentence(cwd).rstrip()), *error.args[1:])


def explore_checked(agent: AgentBase, env: Any, horizon: int, if_random: bool, env_name: str, cwd: str | None) -> Transitions:
    """``agent.explore_env``, stopped with what the run kept where the env or the agent gave NaN or inf.

    The env and the agent raise while acting (a NaN state met by a policy that cannot pass it on, or
    weights that diverged) without knowing the run folder; `check_finite` finds what they passed on."""
    first_step = agent.total_steps
    try:
        transitions = agent.explore_env(env, horizon, if_random)
        check_finite(transitions, first_step, env_name)
    except FloatingPointError as error:
        say_what_was_kept(error, cwd)
        raise
    return transitions


def say_what_was_kept(error: FloatingPointError, cwd: str | None, where: str = "") -> None:
    """Completes the message of a NaN error raised by the env or the agent, which know no run folder, with what
    the run kept; the exception itself stays, so its traceback is still the one where the NaN was met."""
    message = str(error).rstrip(".") or "a NaN or inf"
    error.args = (f"{where}{message}. Training stopped. {kept_sentence(cwd)}".rstrip(),)


def check_finite(transitions: Transitions, first_step: int, env_name: str) -> None:
    """Raises if the env produced a NaN or inf state or reward, naming the env step (`explore_checked` adds what was kept)."""
    bad = ~(torch.isfinite(transitions.reward) & torch.isfinite(transitions.state).all(-1) & torch.isfinite(transitions.next_state).all(-1))
    if bad.any():
        index = int(bad.flatten().nonzero()[0])  # time-major: the env steps in the order they were taken
        num_envs = bad.shape[1] if bad.dim() > 1 else 1
        which = f" (sub-env {index % num_envs} of {num_envs})" if num_envs > 1 else ""
        raise FloatingPointError(
            f"env {env_name!r} returned a non-finite state or reward at env step {first_step + index + 1}{which}. "
            f"Check the env's step(), or clip its outputs."
        )


def load_for_resume(agent: AgentBase, args: Arguments) -> None:
    """Loads the agent of the last training step in ``args.cwd`` (networks, optimizers, state
    statistics, step count) for ``if_resume``; the learning rates stay those of `args`.

    Raises ValueError for weights that diverged or a `break_step` the run has already reached.
    The replay buffer is not saved: the warm-up steps refill it.
    """
    optimizers = agent.optimizers()
    learning_rates = [[group["lr"] for group in optimizer.param_groups] for optimizer in optimizers]
    try:
        agent.save_or_load_agent(args.cwd, if_save=False)
    except (RuntimeError, KeyError) as error:  # torch's size mismatch, or a part this agent has and the run's had not
        saved = read_config(args.cwd).get("agent_settings", {})
        now = chosen_settings(agent)

        def shown(settings: dict[str, Any], name: str) -> str:
            return repr(settings[name]) if name in settings else "the default"

        differ = [f"{name} is {shown(now, name)} now, {shown(saved, name)} in the run"
                  for name in sorted(set(saved) | set(now)) if saved.get(name, ...) != now.get(name, ...)]
        if not differ:
            raise
        name = type(agent).__name__
        raise ValueError(f"{args.cwd}/agent.pth does not fit {name} as made now, whose settings differ from the run's: "
                         f"{'; '.join(differ)}. Resume with the run's settings, {name}(**{saved!r}), or start a new run "
                         f"in another cwd") from error
    for optimizer, rates in zip(optimizers, learning_rates):  # loading brought back the saved run's rates
        for group, rate in zip(optimizer.param_groups, rates):
            group["lr"] = rate
    if diverged := agent.non_finite_parts():
        raise ValueError(f"{args.cwd}/agent.pth holds non-finite weights ({', '.join(diverged)}): that run diverged and "
                         f"cannot be resumed. {kept_sentence(args.cwd)}Start a new run, e.g. with a lower learning_rate.")
    if agent.total_steps >= args.break_step:
        raise ValueError(f"the run in {args.cwd!r} already has {agent.total_steps:,d} env steps and break_step is "
                         f"{args.break_step:,d}: raise break_step to train it further")


def agent_init_kwargs(args: Arguments, device: str) -> dict[str, Any]:
    """The arguments of ``agent.init`` for this run, with the networks on `device`."""
    return dict(net_dim=args.net_dim, state_dim=args.env.state_dim, action_dim=args.env.action_dim,
                learning_rate=args.learning_rate, gamma=args.gamma, reward_scale=args.reward_scale,
                batch_size=args.batch_size, repeat_times=args.repeat_times, soft_update_tau=args.soft_update_tau, device=device)


def seed_everything(seed: int) -> None:
    """Seeds torch, numpy's global generator and Python's `random`: a user's env that draws from either
    (``np.random.rand``, as old-Gym envs did) is then as reproducible as the agent."""
    torch.manual_seed(seed)
    np.random.seed(seed % 2**32)
    random.seed(seed)


def build_agent(args: Arguments, group: LearnerGroup | None = None) -> int:
    """Seeds torch and builds ``args.agent``'s networks on ``args.device``; for ``if_resume``, loads the
    run in ``args.cwd``. Returns the seed for this run's envs (a resumed run draws new ones).

    With several learners (`group`), rank 0 builds or loads and every rank takes its agent, then
    explores with a seed of its own."""
    agent = args.agent
    seed_everything(args.random_seed)
    agent.init(**agent_init_kwargs(args, args.device))
    if args.if_resume and (group is None or group.is_main):
        load_for_resume(agent, args)
    if group is not None:
        group.sync_agent(agent)
        agent.learner_group = group
    if not args.if_resume and group is None:
        return args.random_seed
    # a resumed run: new exploration noise and episodes, not a replay of the first run's; a rank: its own
    seed = args.random_seed + agent.total_steps + (group.rank * RANK_SEED_OFFSET if group else 0)
    seed_everything(seed)
    return seed


def write_config(args: Arguments, group: LearnerGroup | None = None) -> None:
    """Writes ``config.json`` (what `load_agent` needs to rebuild the actor; a resumed run keeps its
    own) and prints the run's header."""
    agent_name, env = type(args.agent).__name__, args.env
    if not args.if_resume:
        config = {RUN_MARKER: 1, "agent": agent_name, "env": env.env_name, "net_dim": args.net_dim, "state_dim": env.state_dim,
                  "action_dim": env.action_dim, "max_step": env.max_step, "random_seed": args.random_seed,
                  "agent_settings": json_settings(args.agent), "env_kwargs": json_env_kwargs(env), "env_wrappers": added_wrappers(env),
                  **({"tuned_family": args.tuned_settings[0], "tuned_settings": args.tuned_settings[1]} if args.tuned_settings else {})}
        atomic_write(os.path.join(args.cwd, "config.json"), lambda temporary: _write_json(temporary, config))
    if args.if_print:
        start = f", resumed at env step {args.agent.total_steps:,d}" if args.if_resume else ""
        print(f"elegantrl: {agent_name} on {env!r}\n  run folder {args.cwd}{start}, seed {args.random_seed}, device {args.device}")
        if args.tuned_settings:
            family, entry = args.tuned_settings
            settings = {**{k: v for k, v in entry.items() if k != "agent"}, **entry.get("agent", {})}
            print(f"  tuned settings for {env.env_name} ({family} family; set a field to override it): "
                  + ", ".join(f"{name}={value}" for name, value in settings.items()))
        if group is not None:
            print(f"  {group.world_size} learners ({group.backend}); rank 0 evaluates and writes. Each rank's batch is "
                  f"{args.batch_size}, so each gradient step averages {group.world_size * args.batch_size} transitions")


def _write_json(path: str, value: Any) -> None:
    """`value` as indented JSON in the file at `path`."""
    with open(path, "w") as file:
        json.dump(value, file, indent=2)


def chosen_settings(agent: AgentBase) -> dict[str, Any]:
    """The agent's constructor settings that were chosen, by the caller or by a tuned entry (the caller's win)."""
    return {**getattr(agent, "tuned_settings", {}), **(agent.given_settings or {})}


def json_settings(agent: AgentBase) -> dict[str, Any]:
    """`chosen_settings` for config.json.

    A setting JSON cannot hold (an object the caller passed) is left out: `load_agent` then uses its default.
    """
    settings = {name: value.item() if isinstance(value, np.generic) else value for name, value in chosen_settings(agent).items()}
    dropped = [name for name, value in settings.items() if not _is_json(value)]
    if dropped:
        warnings.warn(f"config.json cannot hold {type(agent).__name__}'s settings {dropped}; load_agent will build the agent "
                      f"with their defaults, so pass them to it yourself", stacklevel=2)
    return {name: value for name, value in settings.items() if name not in dropped}


def json_env_kwargs(env: PreprocessEnv) -> dict[str, Any] | None:
    """The keyword arguments the env was made with (``gym.make(id, **kwargs)``, its spec's), for config.json, so that
    a render makes that env again and not the registered default; None where JSON cannot hold one of them."""
    kwargs = {name: value for name, value in (getattr(env.spec, "kwargs", None) or {}).items() if name != "render_mode"}
    try:  # what JSON gives back must be the same: a tuple would come back a list, an int key a string
        return kwargs if json.loads(json.dumps(kwargs)) == kwargs else None
    except (TypeError, ValueError):
        return None


# wrappers that record or check and leave observations, actions and rewards as they are: a run made again without them is the same
UNSEEN_WRAPPERS = frozenset({"RecordEpisodeStatistics", "RecordVideo", "OrderEnforcing", "PassiveEnvChecker"})


def added_wrappers(env: PreprocessEnv) -> list[str]:
    """The names of the wrappers put on the env after ``gym.make`` (those its spec lists beyond the registered ones),
    for config.json: a render that makes the env again from its id would play without them."""
    spec = getattr(env, "spec", None)
    listed = tuple(getattr(spec, "additional_wrappers", None) or ())  # none in an old Gym env's spec
    registered = len(registry[spec.id].additional_wrappers) if listed and spec.id in registry else 0
    names = [getattr(wrapper, "name", str(wrapper)) for wrapper in listed[registered:]]
    return [name for name in names if name not in UNSEEN_WRAPPERS]


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def round_plan(args: Arguments, total_steps: int, width: int, is_first: bool) -> tuple[int, bool, bool]:
    """The next round for `width` envs stepped at once: (horizon, if_random, if_update). The first round
    of an off-policy run is the warm-up (`warmup_steps`, random unless resuming, not learned from). The
    last round is cut so that `break_step` is never exceeded; a horizon of 0 means the budget is spent."""
    affordable = max(0, args.break_step - total_steps) // width
    if is_first and args.warmup_steps:  # a resumed run refills its buffer with its own policy, not random actions
        return min(affordable, -(-args.warmup_steps // width)), not args.if_resume, False
    return min(affordable, args.target_step), False, True


def warn_if_no_update(args: Arguments, total_steps: int, width: int) -> None:
    """Warns where the warm-up round (`round_plan`'s first) spends what is left of the budget: a smoke test may mean
    it, but a run meant to learn would take no gradient step."""
    horizon = round_plan(args, total_steps, width, is_first=True)[0]
    if args.warmup_steps and round_plan(args, total_steps + horizon * width, width, is_first=False)[0] == 0:
        warnings.warn(f"Arguments.warmup_steps ({args.warmup_steps:,d} env steps that fill the buffer before learning) "
                      f"leaves nothing of Arguments.break_step ({args.break_step:,d}, from env step {total_steps:,d}): no "
                      f"gradient step will be taken. Lower warmup_steps or raise break_step to learn", stacklevel=3)


def lr_decay_factor(total_steps: int, lr_decay_steps: int) -> float:
    """The fraction of the learning rate left after `total_steps` env steps of a linear decay to zero over
    `lr_decay_steps` (``Arguments.lr_decay_steps``; 0 is no decay)."""
    return max(0.0, 1.0 - total_steps / lr_decay_steps) if lr_decay_steps else 1.0


def store_and_update(agent: AgentBase, buffer: Any, rollouts: list[Transitions], args: Arguments,
                     learned: list[bool]) -> dict[str, float]:
    """Stores the round's rollouts and learns from those marked in `learned` (one flag a rollout: not the
    warm-up's, whose env steps buy no gradient steps); returns the logging figures."""
    if len(learned) != len(rollouts):
        raise ValueError(f"store_and_update: {len(rollouts)} rollouts but {len(learned)} learned flags")
    new_steps = 0
    for rollout, if_learned in zip(rollouts, learned):
        buffer.extend(rollout)
        new_steps += rollout.reward.numel() if if_learned else 0
    if_update = any(learned)
    if if_update and args.lr_decay_steps:  # from the step count alone, so that a resumed run goes on where it was
        agent.scale_learning_rates(lr_decay_factor(agent.total_steps, args.lr_decay_steps))
    logs = agent.update_net(buffer, new_steps) if if_update else {}
    if args.if_state_norm:  # after the update: a rollout and its update see the same normalisation
        agent.update_state_norm(torch.cat([rollout.state.reshape(-1, agent.state_dim) for rollout in rollouts]))
    return logs


class WorkerError(RuntimeError):
    """A worker or the Evaluator process raised or died; the message carries its traceback or exit status."""


class Terminated(SystemExit, KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that a run stops the way Ctrl-C stops it, saving as it goes.

    To the library's handlers it is a KeyboardInterrupt; to a script that does not catch it, a SystemExit with
    status 143 (128 + SIGTERM), so the script ends as the signal would end it, with no traceback, and a scheduler
    reads a stop, not a crash. Catch it by name to go on after a SIGTERM.
    """

    def __init__(self) -> None:
        super().__init__(128 + signal.SIGTERM)


def say_stopped(stop: KeyboardInterrupt, args: Arguments, note: str = "") -> None:
    """Prints how a run was stopped (Ctrl-C or SIGTERM), at which env step, and what its folder keeps."""
    how = "SIGTERM" if isinstance(stop, Terminated) else "Ctrl-C"
    print(f"\nstopped by {how} at env step {args.agent.total_steps:,d}{note}. {kept_sentence(args.cwd)}".rstrip(), flush=True)


def raise_terminated(signum: int, frame: Any) -> None:
    """The SIGTERM handler of a run: stop the way Ctrl-C stops it (see `Terminated`)."""
    raise Terminated()


@contextlib.contextmanager
def signal_handlers(handlers: dict[int, Any]) -> Iterator[None]:
    """Installs `handlers` ({signal number: handler}) within the block; in the main thread only, where they belong."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, handler) for number, handler in handlers.items()}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


@contextlib.contextmanager
def torch_threads(num_threads: int) -> Iterator[None]:
    """Runs the block with `num_threads` torch CPU threads and restores the caller's setting."""
    user_threads = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        yield
    finally:
        torch.set_num_threads(user_threads)


@contextlib.contextmanager
def starting_in_new_folder(args: Arguments) -> Iterator[None]:
    """`Arguments.prepare_cwd` for the block that starts a run: if the start fails, the folders it made go
    again (where they are still empty), so a failed start leaves nothing behind."""
    args.prepare_cwd()
    try:
        yield
    except BaseException:
        args.discard_new_folder()
        raise


def curve_title(args: Arguments) -> str:
    """The learning curve's title: agent, env and seed."""
    return f"{type(args.agent).__name__} on {args.env.env_name}, seed {args.random_seed}"


def save_run(args: Arguments, agent: AgentBase, evaluator: Evaluator, if_failed: bool = False) -> None:
    """What every run does last, however it ended: saves the agent and the curve, closes TensorBoard.

    For a run that ends on an error or a stop (`if_failed`), a part that fails to save too (a GPU
    that a device-side assert left unreadable, a full disk) only warns, and the other parts are
    still tried: the run's own error is the one to see, and the checkpoint of the last evaluation stays.
    """
    parts = [lambda: agent.save_or_load_agent(args.cwd, if_save=True)]
    if evaluator.records:
        parts.append(evaluator.save_curve)
    if evaluator.writer is not None:
        parts.append(evaluator.writer.close)
    for part in parts:
        try:
            part()
        except Exception as error:
            if not if_failed:
                raise
            warnings.warn(f"the final save failed too ({type(error).__name__}: {error}); {args.cwd} keeps what the last "
                          f"evaluation wrote", stacklevel=2)


def load_best_actor(args: Arguments, agent: AgentBase, best_return: float) -> AgentBase:
    """Loads the run's best actor into `agent` and says what the run folder holds."""
    actor_path = os.path.join(args.cwd, "actor.pth")
    if os.path.isfile(actor_path):
        agent.actor.load_state_dict(load_torch_file(actor_path, agent.device))
    if args.if_print:
        names = ("config.json", "actor.pth", "agent.pth", "recorder.csv", "learning_curve.png")
        files = [name for name in names if os.path.isfile(os.path.join(args.cwd, name))]
        print(f"best evaluation return {best_return:.2f}; files in {args.cwd}: {', '.join(files)}")
    return agent


def stops_at_target(args: Arguments, hit_step: int | None, total_steps: int) -> bool:
    """Whether a run whose evaluation first reached the target at env step `hit_step` (None: not yet)
    stops at `total_steps`: with ``if_allow_break``, once it is ``target_hold`` times as far."""
    return args.if_allow_break and hit_step is not None and total_steps >= args.target_hold * hit_step


def hold_note(args: Arguments, hit_step: int) -> str:
    """How far a run goes on past its first hit, for the line that reports the hit."""
    if not args.if_allow_break:
        return ""
    return f"; training on to env step {math.ceil(args.target_hold * hit_step):,d}" if args.target_hold > 1 else ""


def train_in_rounds(args: Arguments, explore_env: Any, buffer: Any, evaluator: Evaluator | None,
                    group: LearnerGroup | None = None) -> None:
    """The loop of `train_and_evaluate`: explore → store → update rounds, a checkpoint and an evaluation every
    ``eval_gap`` env steps, until the budget is spent or (with ``if_allow_break``) the target is reached.

    With several learners (`group`), every rank runs this loop on its own envs, the rounds count the
    env steps of all ranks, and rank 0 (the only one with an `evaluator`) says when the target is reached."""
    agent, logs, is_first, stopping = args.agent, {}, True, False
    last_logs: dict[str, float] = {}  # each figure's latest value, for the final evaluation
    hit_step = evaluator.first_hit_step if evaluator is not None else None  # a resumed run's hold counts from its own hit
    width = args.num_envs * (group.world_size if group else 1)
    if evaluator is not None:
        warn_if_no_update(args, agent.total_steps, width)
        evaluator.start_clock()
    while True:
        horizon, if_random, if_update = round_plan(args, agent.total_steps, width, is_first)
        if horizon == 0 or stopping:
            # the final policy is evaluated too, even between two evaluations (at the budget, or past the target's hold)
            if evaluator is not None and (not evaluator.records or evaluator.records[-1]["step"] != agent.total_steps):
                evaluator.evaluate_and_save(agent, agent.total_steps, last_logs, if_force=True)
            return
        is_first = False
        transitions = explore_checked(agent, explore_env, horizon, if_random, args.env.env_name, args.cwd)
        agent.total_steps += transitions.reward.numel() * (width // args.num_envs - 1)  # the other ranks' steps
        logs = store_and_update(agent, buffer, [transitions], args, [if_update])
        # the last round, cut to fit break_step, may buy no gradient step: the final row shows the latest figures
        last_logs = {**last_logs, **logs}
        reached = False
        if evaluator is not None and if_update and evaluator.is_due(agent.total_steps):
            agent.save_or_load_agent(args.cwd, if_save=True)  # a checkpoint per evaluation: a kill loses little
            reached = evaluator.evaluate_and_save(agent, agent.total_steps, logs)
        if reached and hit_step is None:
            hit_step = agent.total_steps
            if args.if_print:
                print(f"reached the target return {args.target_return:g} at env step {hit_step:,d}{hold_note(args, hit_step)}")
        stopping = stops_at_target(args, hit_step, agent.total_steps)
        if group is not None:  # rank 0's decision (it alone evaluates), every round so that the collectives stay in step
            stopping = group.agree(stopping)


def train_and_evaluate(args: Arguments) -> AgentBase:
    """Trains ``args.agent`` on ``args.env`` in one process; returns the agent with the best actor loaded.

    Stops at ``break_step`` env steps, or when an evaluation reaches the target return (if
    ``if_allow_break``), or on Ctrl-C. The run folder keeps the best actor, the record and the curve;
    ``agent.pth`` is written at every evaluation.

    Under ``torchrun`` (or in a process group the caller made), this process is one of several
    learners (`elegantrl.distributed`): rank 0 returns as above, the other ranks their final agent.
    """
    args.check()
    group = join_learners(args)
    is_main = group is None or group.is_main  # rank 0 alone evaluates and writes
    agent, env = args.agent, args.env
    explore_env = env
    try:
        if group is None and len(args.learner_gpus or ()) > 1:
            raise ValueError(f"learner_gpus={args.learner_gpus} asks for several learners: train them with train_and_evaluate_mp, "
                             f"which starts one process per learner, or launch this script with torchrun")
        with starting_in_new_folder(args) if is_main else contextlib.nullcontext():
            seed = build_agent(args, group)
            explore_env = build_vector_env(env, args.num_envs, args.if_async_envs) if args.num_envs > 1 else env
            agent.reset_exploration(explore_env, seed)
            buffer = agent.make_buffer(args.max_memo)
            evaluator = None
            if is_main:
                evaluator = Evaluator(args.cwd, args.eval_env or clone_env(env), args.eval_gap, args.eval_times1,
                                      args.eval_times2, args.target_return, seed, args.if_print, args.if_tensorboard,
                                      curve_title(args))
                if args.if_resume:
                    evaluator.resume(agent.total_steps)
                write_config(args, group)
    except BaseException:  # a failed start: its env workers and its place among the learners go too
        try:
            if explore_env is not env:
                close_vector_env(explore_env)
        finally:
            leave_learners(group)
        raise

    with signal_handlers({signal.SIGTERM: raise_terminated}):  # also over the final save: SIGTERM then still means 143
        finished = False
        try:
            with torch_threads(args.num_threads):
                train_in_rounds(args, explore_env, buffer, evaluator, group)
            finished = True
        except KeyboardInterrupt as stop:
            if is_main:
                say_stopped(stop, args)
            raise
        except (EOFError, BrokenPipeError, ConnectionResetError) as error:  # what a dead worker's pipe raises
            if isinstance(error.__cause__, EnvWorkerTraceback):  # the env's own (a networked simulator's), not a dead pipe
                raise
            raise WorkerError(  # the CLI says it in one line, as for the workers of train_and_evaluate_mp
                f"an env worker process of the async vector env died at env step about {agent.total_steps:,d} "
                f"(the env crashed the process, e.g. os._exit or a segfault in its simulator); training stopped. "
                f"{kept_sentence(args.cwd)}Run with if_async_envs=False to see the env's own error."
            ) from error
        finally:
            try:
                if explore_env is not env:
                    close_vector_env(explore_env)
                if evaluator is not None:
                    save_run(args, agent, evaluator, if_failed=not finished)
            finally:  # also when the final save fails (a full disk): a folder left locked would refuse its own resume
                args.release_folder()
                leave_learners(group, finished)
                agent.learner_group = None  # the group is gone: the returned agent learns alone
    return load_best_actor(args, agent, evaluator.best_return) if evaluator is not None else agent


def train_and_evaluate_mp(args: Arguments) -> AgentBase:
    """Trains with ``args.rollout_num`` exploration worker processes, a learner (this process) and an
    Evaluator process; returns the agent with the best actor loaded. See `elegantrl.parallel`.

    Call it under ``if __name__ == "__main__":`` in a script: worker processes start by importing
    the script, and without the guard each would start training again.

    With ``args.learner_gpus`` of several entries it starts that many learners (this process is rank
    0), each with its own workers; under ``torchrun`` this process is the rank torchrun made. See
    `elegantrl.distributed`.
    """
    if not getattr(args.agent, "supports_workers", True):  # a class or an instance; Arguments.check refuses non-agents
        name = getattr(args.agent, "__name__", type(args.agent).__name__)
        raise ValueError(f"{name} cannot train with train_and_evaluate_mp: its rollouts carry the search's policies and "
                         f"values, which the workers' shared slots do not hold. Use train_and_evaluate(args) (on the command "
                         f"line: leave out --rollout-num), with Arguments.num_envs to search several envs at once")
    from elegantrl.parallel import train_multiprocess

    return train_multiprocess(args)


def load_agent(cwd: str, agent_class: type[AgentBase] | None = None) -> AgentBase:
    """The agent of a run folder with its best actor loaded, ready for ``agent.act(states)``.

    ``agent.act`` gives the actions elegantrl's agents work in: for a Box action space these lie in
    [-1, 1]; step the env through ``PreprocessEnv``, which maps them to the env's bounds. A run of an
    agent class of your own needs that class: ``load_agent(cwd, agent_class=AgentMySAC)``.
    """
    config_path = os.path.join(cwd, "config.json")
    if not os.path.isfile(config_path):
        raise FileNotFoundError(f"{cwd!r} is not an elegantrl run folder: it has no config.json")
    config = read_config(cwd, if_strict=True)
    if not {"agent", "net_dim", "state_dim", "action_dim"} <= set(config):
        raise ValueError(f"{config_path} lacks the agent and its sizes (agent, net_dim, state_dim, action_dim): it is not "
                         f"one elegantrl wrote, or it is damaged; cannot rebuild the agent of {cwd!r}")
    actor_path = os.path.join(cwd, "actor.pth")
    if not os.path.isfile(actor_path):
        raise FileNotFoundError(f"{cwd!r} has no actor.pth: the run stopped before an evaluation wrote one, or it was moved out. "
                                f"Its last state is in agent.pth (resume it with Arguments(cwd=..., if_resume=True))")
    name = str(config["agent"])
    if agent_class is None:
        agent_class = list_agents().get(name.removeprefix("Agent"))
        if agent_class is None:
            raise ValueError(f"the run in {cwd!r} trained {name}, which is not one of elegantrl's agents (a class of your own?); "
                             f"pass the class: load_agent(cwd, agent_class={name}), or get_video_to_watch_env_render(cwd, agent_class={name})")
    elif not (isinstance(agent_class, type) and issubclass(agent_class, AgentBase)) or agent_class.__name__ != name:
        raise ValueError(f"the run in {cwd!r} trained {name}; load_agent's agent_class must be that class, got {agent_class!r}")
    agent = agent_class(**config.get("agent_settings", {}))
    agent.init(config["net_dim"], config["state_dim"], config["action_dim"])
    agent.actor.load_state_dict(load_torch_file(actor_path, agent.device))
    return agent


def get_video_to_watch_env_render(cwd: str, episodes: int = 1, fps: int = 30, env: Any = None,
                                  agent_class: type[AgentBase] | None = None) -> str:
    """Plays the best actor of run folder `cwd` and writes the frames to ``cwd/video.gif``; returns its path.

    The env is made again from its id and the keyword arguments it was made with, with
    ``render_mode="rgb_array"`` (no display needed); pass `env` for an env that is not registered
    (an env instance made with ``render_mode="rgb_array"``, in a `PreprocessEnv` or not, or an env id),
    and `agent_class` for a run of an agent class of your own.
    """
    from PIL import Image  # Pillow comes with matplotlib

    users_driver = os.environ.get("SDL_VIDEODRIVER")
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # rgb_array frames need no window; SDL's would print an XDG warning
    try:
        agent = load_agent(cwd, agent_class)
        config = read_config(cwd)
        if env is None:
            kwargs = config.get("env_kwargs", {})
            if kwargs is None:
                raise ValueError(f"the run in {cwd!r} made its env {config['env']!r} with settings config.json cannot hold, so it "
                                 f"cannot be made again from its id; pass it: get_video_to_watch_env_render(cwd, "
                                 f"env=gym.make({config['env']!r}, ..., render_mode='rgb_array'))")
            if wrappers := config.get("env_wrappers"):  # made from its id, it would play without them: a wrong video, or none
                made = ", ".join([repr(config["env"]), *(f"{name}={value!r}" for name, value in kwargs.items()), "render_mode='rgb_array'"])
                made = f"gym.make({made})"
                for name in wrappers:  # innermost first, as the spec lists them
                    made = f"{name}({made}, ...)"
                raise ValueError(f"the run in {cwd!r} trained on {config['env']!r} wrapped in {', '.join(wrappers)}, which cannot be "
                                 f"made again from its id; pass the env as it trained: get_video_to_watch_env_render(cwd, "
                                 f"env={made})")
            try:
                env = PreprocessEnv(config["env"], max_step=config.get("max_step"), render_mode="rgb_array", **kwargs)
            except ValueError as error:  # not registered: a user's own env class
                raise ValueError(f"{error} To render an env that is not registered, pass it: "
                                 f"get_video_to_watch_env_render(cwd, env=MyEnv(render_mode='rgb_array'))") from error
        elif not isinstance(env, PreprocessEnv):  # the user's own env or an id, as Arguments takes them: states and limit as in training
            env = PreprocessEnv(env, max_step=config.get("max_step"), **({"render_mode": "rgb_array"} if isinstance(env, str) else {}))
        frames = []
        for episode in range(episodes):
            state, _ = env.reset(seed=episode)
            frames.append(rendered_frame(env))
            for _ in range(env.max_step):
                state, _, terminated, truncated, _ = env.step(agent.act(state))
                frames.append(rendered_frame(env))
                if terminated or truncated:
                    break
        env.close()
    finally:  # for this call only: a later window of the user's (render_mode="human") gets the real driver
        if users_driver is None:
            os.environ.pop("SDL_VIDEODRIVER", None)
    if not frames or frames[0] is None:
        raise ValueError(f"env {env.env_name!r} rendered no frames: it needs render_mode='rgb_array'")
    images = [Image.fromarray(frame) for frame in frames]
    path = os.path.join(cwd, "video.gif")
    atomic_write(path, lambda temporary: images[0].save(temporary, format="GIF", save_all=True, append_images=images[1:],
                                                        duration=round(1000 / fps), loop=0))
    return path


def rendered_frame(env: PreprocessEnv) -> Any:
    """`env`'s frame, or a ValueError that names the env where it has no render() of its own."""
    try:
        return env.render()
    except NotImplementedError as error:  # gymnasium.Env.render's own body: the env's class did not write one
        raise ValueError(f"env {env.env_name!r} has no render() method, so it cannot be watched: give its class a render() that "
                         f"returns an RGB array (H, W, 3) when made with render_mode='rgb_array'") from error


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser: one flag per Arguments field, with the field's help."""
    agents = list_agents()
    parser = argparse.ArgumentParser(
        prog="python -m elegantrl",
        description="Train an elegantrl agent on a Gymnasium env, evaluate it, save the best actor and the learning curve.",
        epilog="agents: " + ", ".join(f"{name} ({'discrete' if cls.if_discrete else 'continuous'})" for name, cls in agents.items()),
    )
    parser.add_argument("--agent", choices=list(agents), help="the algorithm (default: D3QN; with --resume, the run's)")
    parser.add_argument("--env", help="a Gymnasium env id (default: CartPole-v1; with --resume, the run's)")
    parser.add_argument("--render", metavar="RUN_FOLDER", help="instead of training: play the best actor of RUN_FOLDER into RUN_FOLDER/video.gif")
    parser.error = lambda message: parser.exit(2, f"error: {message} (--help lists the options)\n")  # one line, not the usage
    for spec in dataclasses.fields(Arguments):
        if not spec.metadata.get("cli"):
            continue
        flag, kind = cli_flag(spec.name), spec.metadata["type"]
        names = ["--random-seed", flag] if spec.name == "random_seed" else [flag]
        if spec.name == "rollout_num":  # given: the multi-process trainer; absent: one process
            parser.add_argument(flag, dest=spec.name, type=int, default=None, metavar="N",
                                help="train with N exploration worker processes, a learner and an Evaluator process "
                                     "(train_and_evaluate_mp); without it, one process (default: one process)")
        elif kind is bool:
            parser.add_argument(*names, dest=spec.name, action=argparse.BooleanOptionalAction, default=spec.default, help=spec.metadata["help"])
        else:  # a help text that says its default itself ("by default ...") needs no "(default: ...)"
            fallback = FIELD_DEFAULTS.get(spec.name, "the agent family's")
            default = f" (default: tuned for the env, else {fallback})" if spec.default is None else " (default: %(default)s)"
            default = "" if "by default" in spec.metadata["help"] else default
            kind = seed_value if spec.name == "random_seed" else kind
            parser.add_argument(*names, dest=spec.name, type=kind, default=spec.default, help=spec.metadata["help"] + default)
    return parser


def seed_value(text: str) -> int | None:
    """The value of ``--seed``: an integer, or ``random`` for None (a seed is drawn)."""
    if text == "random" or text.lstrip("-").isdigit():
        return None if text == "random" else int(text)
    raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (or 'random' to draw one)")


def cli_flag(name: str) -> str:
    """The command line's flag for an Arguments field: ``--net-dim`` for net_dim, ``--resume`` for if_resume."""
    return "--seed" if name == "random_seed" else "--" + name.replace("_", "-").removeprefix("if-")


def in_flags(message: str) -> str:
    """A message that names Arguments fields (``Arguments.cwd``, ``if_resume=True``), in the command line's flags,
    and agent classes by the names ``--agent`` takes (``DQN`` for ``AgentDQN``)."""
    message = re.sub(r"\bArguments\(([^()]*)\)", lambda call: call.group(1).replace(", ", " "), message)
    message = re.sub(rf"\bAgent({'|'.join(map(re.escape, list_agents()))})\b", r"\1", message)
    for name in [spec.name for spec in dataclasses.fields(Arguments) if spec.metadata.get("cli")] + ["agent", "env"]:
        flag = cli_flag(name)
        message = re.sub(rf"\b(Arguments\.)?{name}=True\b", flag, message)
        message = re.sub(rf"\b(Arguments\.)?{name}=False\b", "--no-" + flag[2:], message)
        message = re.sub(rf"\b(Arguments\.)?{name}=(?=\S)", flag + " ", message)
        message = re.sub(rf"\bArguments\.{name}\b", flag, message)
    return message


def resumed_task(saved: dict[str, Any], cwd: str | None, agent_name: str | None, env_id: str | None) -> tuple[type[AgentBase], str]:
    """The command line's agent class and env id: those given, else the resumed run's (`saved`, its config.json), else
    D3QN on CartPole-v1. A run's env that is not a registered id (a user's class) can be resumed only in Python."""
    agents = list_agents()
    # (the advice below avoids field=value, which in_flags would turn into flags)
    saved_agent, saved_env = saved.get("agent"), saved.get("env")
    if agent_name is None and isinstance(saved_agent, str):
        agent_name = saved_agent.removeprefix("Agent")
        if agent_name not in agents:  # a user's own agent class
            raise ValueError(f"the run in {cwd!r} trained agent {saved_agent!r}, which the command line does not have: resume "
                             f"it in Python, giving Arguments an {saved_agent} instance, this folder as cwd and if_resume set")
    if env_id is None and isinstance(saved_env, str) and saved_env:
        env_id = saved_env
        if ":" not in env_id and env_id not in registry:  # config.json keeps the id without a "module:" that registered it
            raise ValueError(f"the run in {cwd!r} trained on env {env_id!r}, which is not a registered env id, so the command "
                             f"line cannot make it again: if a module of yours registers it, pass --env module:{env_id}; "
                             f"else resume it in Python, giving Arguments your env instance, this folder as cwd and if_resume set")
    return agents[agent_name or "D3QN"], env_id or "CartPole-v1"


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m elegantrl``."""
    options = vars(build_parser().parse_args(argv))
    agent_name, env_id = options.pop("agent"), options.pop("env")
    render_folder = options.pop("render")
    try:
        if render_folder:
            print(f"wrote {get_video_to_watch_env_render(render_folder)}")
            return 0
        if_multiprocess = options["rollout_num"] is not None
        if not if_multiprocess:
            if options["if_async_workers"]:
                raise ValueError("--async-workers needs --rollout-num N: it is a setting of the worker processes")
            del options["rollout_num"]
        saved = read_config(os.path.expanduser(options["cwd"])) if options["if_resume"] and options["cwd"] else {}
        agent_class, env_id = resumed_task(saved, options["cwd"], agent_name, env_id)
        settings = saved.get("agent_settings", {}) if saved.get("agent") == agent_class.__name__ else {}
        env_kwargs = saved.get("env_kwargs") if saved.get("env") == env_id else None  # a run made in Python with gym.make(id, g=2)
        env = PreprocessEnv(env_id, max_step=options["max_step"], **env_kwargs) if env_kwargs and is_variant(env_id, env_kwargs) else env_id
        args = Arguments(agent=agent_class(**settings), env=env, **options)  # a resumed run keeps its agent's and its env's settings
        (train_and_evaluate_mp if if_multiprocess else train_and_evaluate)(args)
    except (ValueError, TypeError, ImportError, FileExistsError, FileNotFoundError, FloatingPointError, MemoryError) as error:
        # --render's errors name no training flags, and their advice is Python (get_video_to_watch_env_render(cwd, env=...))
        print(f"error: {error if render_folder else in_flags(str(error))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as stop:  # the trainer has saved and said where; the status tells a script how it ended
        return 143 if isinstance(stop, Terminated) else 130
    except WorkerError as error:  # a worker process failed: its traceback is in the message
        print(f"error: {error}", file=sys.stderr)  # not through in_flags: the traceback's code must stay as it is
        return 1
    return 0
