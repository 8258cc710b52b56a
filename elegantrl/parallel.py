"""Training on several processes: exploration workers, one learner, one Evaluator (`train_multiprocess`).

::

    learner (the calling process)                 worker i of rollout_num        Evaluator
    ─────────────────────────────                 ───────────────────────        ─────────
    weights.publish(actor)  ── shared memory ──▶  fetch if the version is new
    commands[i]: (slot, horizon, random, step) ─▶ explore into slots[i][slot]
    ready ◀─────────────────── (i, slot, horizon)
    store_and_update(concatenated rollouts)
    snapshot.publish(actor, step, logs) ── shared memory ─────────────────────▶ evaluate, save, record
    results ◀─────────────────────────────────────────────────────────────────  (version, step, reached)

Rollouts cross as tensors in preallocated shared memory shaped ``(horizon, num_envs, ...)``;
queues carry only small tuples. Workers and the Evaluator run on the CPU with
`Arguments.num_threads` torch threads; the learner may use a GPU. Every wait polls the other
processes, so a process that raises or dies ends the run with its story instead of a hang.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import math
import multiprocessing
import os
import pickle
import queue
import signal
import sys
import threading
import time
import traceback
from typing import Any, Callable

import torch
import torch.distributed as dist
import torch.multiprocessing
from torch import nn

from elegantrl.agent import AgentBase
from elegantrl.distributed import (
    COLLECTIVE_TIMEOUT_SECONDS,
    LearnerGroup,
    backend_for,
    gpu_device,
    join_learners,
    launched_by_torchrun,
    leave_learners,
)
from elegantrl.env import PreprocessEnv, build_vector_env, close_vector_env, env_recipe
from elegantrl.replay import Transitions
from elegantrl.run import (
    Arguments,
    Evaluator,
    WorkerError,
    agent_init_kwargs,
    build_agent,
    curve_title,
    explore_checked,
    hold_note,
    kept_sentence,
    load_best_actor,
    raise_terminated,
    recheck_kept_sentence,
    round_plan,
    save_run,
    say_stopped,
    seed_everything,
    signal_handlers,
    starting_in_new_folder,
    stops_at_target,
    store_and_update,
    torch_threads,
    warn_if_no_update,
    write_config,
)

WORKER_SEED_OFFSET = 10_000  # worker i explores with seed + 10,000 * (i + 1): one run seed, one curve
STALL_SECONDS = 600.0  # a process that says nothing for this long is taken to hang
POLL_SECONDS = 0.5


class SharedWeights:
    """A network's ``state_dict`` in shared memory with a version number (n: the n-th publication),
    written by the learner, read by other processes, with `meta`, a small JSON-able dict.

    A sequence lock, not a mutex: `sequence` is odd while the learner writes; a reader copies and
    retries if it moved. A reader killed mid-read can never leave the learner waiting on a lock.
    """

    def __init__(self, module: nn.Module, meta_bytes: int = 0):
        state = module.state_dict()
        self.layout = [(name, tuple(tensor.shape), tensor.dtype) for name, tensor in state.items()]
        self.flat = torch.zeros(sum(tensor.numel() for tensor in state.values())).share_memory_()
        self.meta = torch.zeros(meta_bytes, dtype=torch.uint8).share_memory_()
        self.sequence = torch.zeros((), dtype=torch.int64).share_memory_()

    def publish(self, module: nn.Module, meta: dict[str, Any] | None = None) -> int:
        """Copies `module`'s state (and `meta`) in and returns the new version. Only one process may publish."""
        encoded = json.dumps(meta).encode() if meta is not None else b""
        if len(encoded) > self.meta.numel():
            raise ValueError(f"{len(encoded)} bytes of figures do not fit the {self.meta.numel()} reserved for them")
        self.sequence += 1  # odd: a write is under way
        torch.cat([tensor.detach().reshape(-1).float().cpu() for tensor in module.state_dict().values()], out=self.flat)
        if encoded:
            self.meta.zero_()
            self.meta[: len(encoded)] = torch.frombuffer(bytearray(encoded), dtype=torch.uint8)
        self.sequence += 1
        return int(self.sequence) // 2

    def fetch(self, module: nn.Module, known_version: int) -> tuple[int, dict[str, Any] | None] | None:
        """Loads the newest state into `module` if it is newer than `known_version`; returns (version, meta) or None."""
        while True:
            before = int(self.sequence)
            if before // 2 <= known_version:
                return None
            if before % 2:  # the learner is writing: a copy now could be half old, half new
                time.sleep(1e-4)
                continue
            flat, raw = self.flat.clone(), bytes(self.meta.numpy()).rstrip(b"\0")
            if int(self.sequence) == before:
                break
        state, start = {}, 0
        for name, shape, dtype in self.layout:
            size = math.prod(shape)
            state[name] = flat[start : start + size].view(shape).to(dtype)
            start += size
        module.load_state_dict(state)  # through load_state_dict: StateNorm's hook sees the statistics
        return before // 2, (json.loads(raw) if raw else None)


def shared_rollout(horizon: int, num_envs: int, state_dim: int, action_dim: int, if_discrete: bool) -> Transitions:
    """Preallocated shared `Transitions` of shape ``(horizon, num_envs, ...)`` for one worker's rollouts."""

    def empty(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.zeros((horizon, num_envs, *shape), dtype=dtype).share_memory_()

    action = empty(1, dtype=torch.int64) if if_discrete else empty(action_dim)
    return Transitions(empty(state_dim), action, empty(), empty(dtype=torch.bool), empty(dtype=torch.bool), empty(state_dim))


# ---- the child processes ---------------------------------------------------------------------


def _child_setup(num_threads: int) -> Any:
    """Common start of a worker and the Evaluator: Ctrl-C belongs to the learner, which stops everyone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(num_threads)
    return multiprocessing.parent_process()


def _report_failure(outbox: Any, name: str) -> None:
    error = sys.exc_info()[1]
    outbox.put(("error", name, traceback.format_exc(), type(error).__name__, str(error)))
    outbox.close()
    outbox.join_thread()  # the message is in the pipe before the process exits


def worker_main(index: int, recipe: Callable[[], PreprocessEnv], blueprint: bytes, init_kwargs: dict[str, Any],
                num_envs: int, if_async_envs: bool, seed: int, num_threads: int, cwd: str,
                weights: SharedWeights, slots: list[Transitions], commands: Any, ready: Any) -> None:
    """An exploration worker: on each command, explores `horizon` steps with the newest weights into a slot."""
    name = f"worker {index}"
    env = explore_env = None
    try:
        parent = _child_setup(num_threads)
        seed_everything(seed)  # the exploration noise, and an env's own draws from numpy's or Python's generator
        env = recipe()
        explore_env = build_vector_env(env, num_envs, if_async_envs) if num_envs > 1 else env
        agent: AgentBase = pickle.loads(blueprint)
        agent.init(**init_kwargs)
        agent.reset_exploration(explore_env, seed)
        ready.put(("started", name))
        version = 0
        while True:
            try:
                command = commands.get(timeout=POLL_SECONDS)
            except queue.Empty:  # stop by itself when the learner is gone: no orphans
                command = () if parent is None or parent.is_alive() else None
            if command is None:
                break
            if not command:
                continue
            slot_index, horizon, if_random, total_steps = command
            fetched = weights.fetch(agent.actor, version)
            version = fetched[0] if fetched else version
            agent.total_steps = total_steps  # the run's count: DQN's exploration schedule follows it
            rollout = explore_checked(agent, explore_env, horizon, if_random, env.env_name, cwd)
            slot = slots[slot_index]
            for store, part in zip(slot, rollout):
                store[:horizon] = part
            ready.put(("ready", index, slot_index, horizon))
    except BaseException:
        _report_failure(ready, name)
        sys.exit(1)
    finally:
        if explore_env is not None and explore_env is not env:
            close_vector_env(explore_env)


def evaluator_main(recipe: Callable[[], PreprocessEnv], blueprint: bytes, init_kwargs: dict[str, Any],
                   settings: dict[str, Any], resume_step: int | None, num_threads: int,
                   snapshot: SharedWeights, stop: Any, results: Any) -> None:
    """The Evaluator process: evaluates the newest actor snapshot whenever it is free, and records it."""
    try:
        parent = _child_setup(num_threads)
        evaluator = Evaluator(env=recipe(), **settings)
        if resume_step is not None:
            evaluator.resume(resume_step)
        agent: AgentBase = pickle.loads(blueprint)
        agent.init(**init_kwargs)
        results.put(("started", "the Evaluator"))
        version = 0
        while not stop.is_set() and (parent is None or parent.is_alive()):
            fetched = snapshot.fetch(agent.actor, version)
            if fetched is None:
                time.sleep(0.02)
                continue
            version, meta = fetched
            agent.total_steps = meta["step"]
            reached = evaluator.evaluate_and_save(agent, meta["step"], meta["logs"], if_force=True, seconds=meta["seconds"])
            results.put(("evaluated", version, meta["step"], reached, evaluator.best_return))
        if evaluator.writer is not None:
            evaluator.writer.close()
    except BaseException:
        _report_failure(results, "the Evaluator")
        sys.exit(1)


# ---- the learner -----------------------------------------------------------------------------


def process_context() -> Any:
    """How a run starts its processes: from a fork server on Linux, else by spawn (on macOS a fork after system
    libraries have started threads can crash the child, as Python's documentation warns).

    Either way a child is a fresh process that imports the calling script and receives its arguments
    pickled, so the same rules hold: calls under ``if __name__ == "__main__":``, envs that pickle. The
    fork server imports torch and gymnasium once, when a run first needs it, and every later child is
    forked from it with them: a worker starts in a fraction of a second, not in the seconds an import of
    torch takes. The server preloads installed packages only: elegantrl and the user's modules are
    imported by each child under the caller's ``sys.path`` (which the server, started with a path of its
    own, may not share). It lives, idle, as long as the calling process, like multiprocessing's resource
    tracker, and ends after it and the last of its children.
    """
    if not sys.platform.startswith("linux"):
        return torch.multiprocessing.get_context("spawn")
    context = torch.multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["torch", "gymnasium"])
    return context


def _in_environment(environ: dict[str, str], target: Callable, *args: Any) -> None:
    """Runs `target` under the environment variables its starter had when it started it, as a spawned child would
    (a fork server's child has the server's, from whenever the server started)."""
    os.environ.clear()
    os.environ.update(environ)
    target(*args)


class Processes:
    """The learner's view of its children: starts them, receives their messages, notices their death."""

    def __init__(self, context: Any, cwd: str):
        self.context, self.cwd = context, cwd
        self.children: dict[str, Any] = {}
        self.started: set[str] = set()
        self.ready = context.Queue()  # workers -> learner
        self.results = context.Queue()  # Evaluator -> learner
        self.stop = context.Event()
        self.commands: list[Any] = []  # learner -> worker i

    def start(self, name: str, target: Callable, *args: Any) -> None:
        """Starts a child with SIGINT ignored from its first instruction (it would kill it mid-import otherwise)."""
        process = self.context.Process(target=_in_environment, args=(dict(os.environ), target, *args), name=f"elegantrl {name}")
        # A spawned child inherits the ignored SIGINT through exec (Python keeps it ignored). A fork server's child gets
        # the server's, so the server is what starts under it; the wait for its first imports stays open to Ctrl-C
        # (a child it forks after that is still told to stop: its command queue and the stop event are already here)
        if self.context.get_start_method() == "forkserver":
            from multiprocessing import forkserver  # Unix's alone
            with signal_handlers({signal.SIGINT: signal.SIG_IGN}):
                forkserver.ensure_running()
            process.start()
        else:
            with signal_handlers({signal.SIGINT: signal.SIG_IGN}):
                process.start()
        self.children[name] = process

    def wait_started(self) -> None:
        """Waits until every child has built its env and agent, reporting any that fails meanwhile."""
        deadline = time.monotonic() + STALL_SECONDS
        while len(self.started) < len(self.children):
            for inbox in (self.ready, self.results):
                self.receive(inbox, block=False)  # takes in "started": nothing else comes before the first command
            time.sleep(0.05)
            if time.monotonic() > deadline:
                raise WorkerError(f"{', '.join(sorted(set(self.children) - self.started))} did not start in {STALL_SECONDS:.0f} s")

    def receive(self, inbox: Any, block: bool = True) -> tuple | None:
        """The next message of `inbox` (None if not `block` and there is none), checking on the children while waiting."""
        waited = 0.0
        while True:
            self.check_alive()  # every time, not only after silence: another process may be the one that died
            try:
                message = inbox.get(timeout=POLL_SECONDS) if block else inbox.get_nowait()
            except queue.Empty:
                if not block:
                    return None
                waited += POLL_SECONDS
                if waited > STALL_SECONDS:
                    raise WorkerError(f"no process reported for {STALL_SECONDS:.0f} s: an env step may hang. {kept_sentence(self.cwd)}") from None
                continue
            if message[0] == "error":
                self.raise_error(message)
            if message[0] == "started":
                self.started.add(message[1])
                continue
            return message

    def raise_error(self, message: tuple) -> None:
        """Raises what a child reported: the env's own NaN as FloatingPointError, anything else as WorkerError."""
        _, name, trace, kind, text = message
        if kind == "FloatingPointError":
            raise FloatingPointError(f"{name}: {text}")
        raise WorkerError(f"{name} failed, so training stopped. {kept_sentence(self.cwd)}Its traceback:\n{trace}")

    def check_alive(self) -> None:
        """Raises WorkerError for a child that exited, after reading any error it sent first."""
        for name, process in self.children.items():
            if process.exitcode is None:
                continue
            for inbox in (self.ready, self.results):  # a child that raised said why before it exited
                while True:  # its error may queue behind other children's reports
                    try:
                        message = inbox.get(timeout=1.0)
                    except queue.Empty:
                        break
                    if message[0] == "error":
                        self.raise_error(message)
            code = process.exitcode
            how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
            hint = ("" if name in self.started else " while starting. A script that calls train_and_evaluate_mp must do so "
                    "under `if __name__ == \"__main__\":`, since each process starts by importing the script")
            raise WorkerError(f"{name} died ({how}){hint}; training stopped. {kept_sentence(self.cwd)}".rstrip())

    def explain_failure(self, error: BaseException, wait: float = 5.0) -> None:
        """After a failed collective: raises WorkerError for the child (a learner rank) that died, if one did
        within `wait` seconds; else returns, and the caller raises `error` as it is."""
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if any(process.exitcode is not None for process in self.children.values()):
                try:
                    self.check_alive()
                except WorkerError as failure:
                    raise failure from error
            time.sleep(0.1)

    def shutdown(self, grace: float) -> None:
        """Asks every child to stop, waits up to `grace` seconds, then terminates and kills: no orphans.

        A second Ctrl-C or a SIGTERM meanwhile cuts the grace short, never the clean-up.
        """
        self.stop.set()
        for inbox in [*self.commands, self.ready, self.results]:
            inbox.cancel_join_thread()  # never wait at exit to flush a queue whose reader is gone
        try:
            for commands in self.commands:
                commands.put(None)
            deadline = time.monotonic() + grace
            for process in self.children.values():
                process.join(max(0.0, deadline - time.monotonic()))
        except KeyboardInterrupt:
            pass
        finally:
            with signal_handlers(dict.fromkeys((signal.SIGINT, signal.SIGTERM), signal.SIG_IGN)):
                for process in self.children.values():
                    if process.is_alive():
                        process.terminate()
                        process.join(2.0)
                    if process.is_alive():
                        process.kill()
                        process.join()


def learner_rank_main(rank: int, world_size: int, port: int, payload: bytes, outbox: Any) -> None:
    """A learner rank that `start_learner_ranks` started: joins the process group, then trains as rank `rank`."""
    name = f"learner rank {rank}"
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C belongs to rank 0, which stops everyone
        args: Arguments = pickle.loads(payload)
        args.device = gpu_device(args.learner_gpus[rank])  # its own GPU from the start: no CUDA context on rank 0's
        watch_parent()
        store = dist.TCPStore("127.0.0.1", port, world_size, is_master=False, timeout=datetime.timedelta(seconds=60))
        store.set(f"elegantrl/joined/{rank}", "1")
        dist.init_process_group(backend_for(args.device), store=store, rank=rank, world_size=world_size,
                                timeout=datetime.timedelta(seconds=COLLECTIVE_TIMEOUT_SECONDS))
        train_multiprocess(args)
    except BaseException:
        _report_failure(outbox, name)
        sys.exit(1)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def watch_parent() -> None:
    """Ends this learner rank at once if rank 0, its parent, dies: a collective would wait for it, holding the GPU."""
    parent = multiprocessing.parent_process()

    def watch() -> None:
        parent.join()
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="elegantrl parent watch").start()


def watch_ranks(ranks: Processes) -> None:
    """Where the ranks talk through NCCL, aborts the process group when one of them dies.

    A collective that waits for a dead rank then fails at once instead of hanging on the GPU until
    NCCL's own timeout, and the trainer reports the rank (`Processes.explain_failure`). Gloo needs
    no help: a dead rank closes its sockets, which fails the collective by itself.
    """
    if dist.get_backend() != "nccl":
        return

    def watch() -> None:
        while dist.is_initialized():
            if any(process.exitcode is not None for process in ranks.children.values()):
                dist.distributed_c10d._abort_process_group()
                return
            time.sleep(POLL_SECONDS)

    threading.Thread(target=watch, daemon=True, name="elegantrl rank watch").start()


def start_learner_ranks(args: Arguments, recipes: tuple[Callable, Callable], blueprint: bytes) -> tuple[Processes, LearnerGroup]:
    """Starts learners 1 … N-1 of ``args.learner_gpus`` as processes, and joins them as rank 0."""
    world_size = len(args.learner_gpus)
    ranks = Processes(process_context(), args.cwd)
    store = dist.TCPStore("127.0.0.1", 0, world_size, is_master=True, wait_for_workers=False)  # port 0: a free one
    # the other ranks build their envs from the recipes, and print and write nothing
    payload = pickle.dumps(dataclasses.replace(args, agent=pickle.loads(blueprint), env=recipes[0], eval_env=None, device=None,
                                               if_print=False))
    try:
        for rank in range(1, world_size):
            ranks.start(f"learner rank {rank}", learner_rank_main, rank, world_size, store.port, payload, ranks.ready)
        deadline = time.monotonic() + STALL_SECONDS
        while not store.check([f"elegantrl/joined/{rank}" for rank in range(1, world_size)]):  # never wait on a rank that died
            ranks.check_alive()
            if time.monotonic() > deadline:
                raise WorkerError(f"the learner ranks did not start in {STALL_SECONDS:.0f} s")
            time.sleep(0.05)
        dist.init_process_group(backend_for(args.device), store=store, rank=0, world_size=world_size,
                                timeout=datetime.timedelta(seconds=COLLECTIVE_TIMEOUT_SECONDS))
        ranks.started.update(ranks.children)  # each has joined: a death from now on is not a failed start
        watch_ranks(ranks)
        group = join_learners(args)
        group.made_here = True
    except BaseException as error:
        try:
            if isinstance(error, RuntimeError):  # a collective failed: a rank that died or raised says why
                ranks.explain_failure(error)
        finally:
            if dist.is_initialized():  # made here: the caller's process must not keep a dead group
                dist.destroy_process_group()
            ranks.shutdown(grace=0.0)
        raise
    return ranks, group


def stop_learner_ranks(ranks: Processes | None, group: LearnerGroup | None, grace: float = 30.0, finished: bool = False) -> None:
    """Leaves the process group (where this process made it; see `leave_learners` for `finished`), then
    waits for the ranks it started, if any."""
    try:
        leave_learners(group, finished)  # first: a rank still waiting in a collective for this one then fails at once
    finally:
        if ranks is not None:
            ranks.shutdown(grace)


def _check_not_bootstrapping() -> None:
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise RuntimeError(
            "train_and_evaluate_mp was called while a worker process was starting: the script calls it at import time. "
            "Put the call under `if __name__ == \"__main__\":`, since every worker process starts by importing the script."
        )


def train_multiprocess(args: Arguments) -> AgentBase:
    """`elegantrl.run.train_and_evaluate_mp`: see its docstring and the module docstring."""
    _check_not_bootstrapping()
    args.check()
    if args.if_async_workers and args.if_on_policy:
        raise ValueError(f"if_async_workers=True, but {type(args.agent).__name__} learns on-policy: every rollout of a round "
                         f"must come from the same weights. Leave if_async_workers=False")
    recipes = env_recipe(args.env), env_recipe(args.eval_env or args.env)  # an env that cannot travel is refused here
    blueprint = pickle.dumps(args.agent)  # before init: the workers build their own networks
    several_learners = len(args.learner_gpus or ()) > 1 or launched_by_torchrun() or (dist.is_initialized() and dist.get_world_size() > 1)
    if args.if_async_workers and several_learners:  # the last: a process group the caller made
        raise ValueError("if_async_workers=True with several learners: the ranks must learn from their rounds in step. "
                         "Leave if_async_workers=False")
    group = join_learners(args)
    ranks = None  # the other learners' processes, where this one started them (learner_gpus)
    if group is None and len(args.learner_gpus or ()) > 1:
        ranks, group = start_learner_ranks(args, recipes, blueprint)
    is_main = group is None or group.is_main  # rank 0 alone evaluates and writes
    try:
        with starting_in_new_folder(args) if is_main else contextlib.nullcontext():
            learner = Learner(args, build_agent(args, group), group)
    except BaseException as error:
        try:
            if ranks is not None and isinstance(error, RuntimeError):
                ranks.explain_failure(error)
        finally:
            stop_learner_ranks(ranks, group, grace=0.5)
        raise
    grace = 10.0  # for the children to finish what they do; a stop does not wait for rollouts nobody will learn from
    rank_grace = 0.5  # a rank waiting in a collective for this one never ends by itself
    with signal_handlers({signal.SIGTERM: raise_terminated}):
        finished, stopped = False, None
        try:
            with torch_threads(args.num_threads):
                learner.start(recipes, blueprint, with_evaluator=is_main)
                if is_main:
                    write_config(args, group)  # once every process has started: a failed start leaves no run behind
                if args.if_print:
                    mode = "asynchronous" if args.if_async_workers else "lockstep"
                    learners = f"{group.world_size} learners" if group else "a learner"
                    print(f"  {args.rollout_num} exploration workers × {args.num_envs} envs ({mode}){' per learner' * bool(group)}, "
                          f"{learners} and an Evaluator process, started in {learner.startup_seconds:.1f} s", flush=True)
                learner.run()
                rank_grace = 30.0  # the other ranks end their rounds with this one, and shut down their own workers
            finished = True
        except KeyboardInterrupt as stop:
            stopped, grace = stop, 0.5  # said once the Evaluator is stopped: a row it prints then comes before, not after
            raise
        except RuntimeError as error:  # a collective that failed: another learner is gone, say which where it is ours
            if ranks is not None:
                ranks.explain_failure(error)
            raise
        finally:
            try:
                learner.processes.shutdown(grace)
                if not finished and is_main and (failure := sys.exc_info()[1]) is not None:  # this run's failure, on its way out
                    recheck_kept_sentence(failure, args.cwd)
                if stopped is not None and is_main:
                    say_stopped(stopped, args, " (rollouts under way are not counted)")
                if learner.startup_seconds is not None and is_main:
                    with signal_handlers(dict.fromkeys((signal.SIGINT, signal.SIGTERM), signal.SIG_IGN)):  # short, and must not be torn
                        if os.path.isfile(learner.clock.csv_path):
                            learner.clock.resume(args.agent.total_steps)  # the record the Evaluator wrote, for the curve
                        save_run(args, args.agent, learner.clock, if_failed=not finished)
                elif is_main:  # a failed start: no run to keep
                    args.discard_new_folder()
            finally:  # also when the final save fails: a folder left locked would refuse its own resume
                args.release_folder()
                stop_learner_ranks(ranks, group, rank_grace, finished)
                args.agent.learner_group = None  # the group is gone: the returned agent learns alone
    return load_best_actor(args, args.agent, learner.clock.best_return) if is_main else args.agent


class Learner:
    """The learner's side of a multi-process run: starts the processes, commands rounds of
    exploration, stores and learns, and hands snapshots to the Evaluator.

    ``args.agent`` must be built (`build_agent`); `seed` is the run's env seed.
    """

    def __init__(self, args: Arguments, seed: int, group: LearnerGroup | None = None):
        self.args, self.agent, self.seed, self.group = args, args.agent, seed, group
        self.world_size = group.world_size if group else 1
        agent = self.agent
        self.context = process_context()
        self.processes = Processes(self.context, args.cwd)
        self.weights = SharedWeights(agent.actor)
        self.snapshot = SharedWeights(agent.actor, meta_bytes=1 << 16)
        horizon = max(args.target_step, -(-(args.warmup_steps or 0) // (args.rollout_num * args.num_envs)))
        self.slots = [[shared_rollout(horizon, args.num_envs, agent.state_dim, agent.action_dim, agent.if_discrete)
                       for _ in range(2 if args.if_async_workers else 1)] for _ in range(args.rollout_num)]
        self.is_main = group is None or group.is_main
        # the learner's clock and record: rank 0's alone, since the other ranks have no run folder
        self.clock = Evaluator(args.cwd, None, args.eval_gap, 0, 0, args.target_return, seed, False, title=curve_title(args)) \
            if self.is_main else None
        self.startup_seconds: float | None = None  # set once every process has started
        self.next_eval_step = (agent.total_steps // args.eval_gap + 1) * args.eval_gap
        self.buffer = agent.make_buffer(args.max_memo)
        self.hit_step: int | None = None  # where rank 0's Evaluator first saw the target
        self.stopping = False  # the target was reached and held long enough (`stops_at_target`), for every rank
        self.logs: dict[str, float] = {}  # each figure's latest value, for the final evaluation
        self.last_snapshot: tuple[int, int] | None = None  # (version, step) of the newest hand-off

    def start(self, recipes: tuple[Callable[[], PreprocessEnv], Callable[[], PreprocessEnv]], blueprint: bytes,
              with_evaluator: bool = True) -> None:
        """Starts the Evaluator (unless not `with_evaluator`) and the workers, from the envs' recipes and the
        pickled agent before ``init``."""
        args, agent, processes = self.args, self.agent, self.processes
        begin = time.perf_counter()  # a fork server's first imports, when a start waits for them, are start-up too
        child_init = agent_init_kwargs(args, device="cpu")
        self.weights.publish(agent.actor)
        if with_evaluator:
            settings = dict(cwd=args.cwd, eval_gap=args.eval_gap, eval_times1=args.eval_times1, eval_times2=args.eval_times2,
                            target_return=args.target_return, random_seed=self.seed, if_print=args.if_print,
                            if_tensorboard=args.if_tensorboard, title=curve_title(args))
            processes.start("the Evaluator", evaluator_main, recipes[1], blueprint, child_init, settings,
                            agent.total_steps if args.if_resume else None, args.num_threads, self.snapshot, processes.stop,
                            processes.results)
        for index in range(args.rollout_num):
            processes.commands.append(self.context.Queue())
            processes.start(f"worker {index}", worker_main, index, recipes[0], blueprint, child_init, args.num_envs,
                            args.if_async_envs, self.seed + WORKER_SEED_OFFSET * (index + 1), args.num_threads, args.cwd,
                            self.weights, self.slots[index], processes.commands[index], processes.ready)
        processes.wait_started()
        self.startup_seconds = time.perf_counter() - begin
        if self.clock is not None:  # training time from here on: process start-up is not training
            if args.if_resume:
                self.clock.resume(agent.total_steps)
                self.hit_step = self.clock.first_hit_step  # a resumed run's hold counts from its own hit
            self.clock.start_clock()

    def run(self) -> None:
        """Trains until the budget is spent or the target is reached (`if_allow_break`), then evaluates the final policy."""
        self.run_rounds()
        # The Evaluator has recorded the hit, but the learner never waits for it: it may have trained on past the
        # evaluated step before it heard, and then the policy it ended with is evaluated too (so is one past a hold)
        at_hit = self.stopping and self.args.target_hold == 1 and self.hit_step == self.agent.total_steps
        if not at_hit and (self.group is None or self.group.is_main):
            self._final_evaluation()

    def run_rounds(self) -> None:
        """The rounds of exploring and learning, lockstep or asynchronous, without the final evaluation."""
        if self.group is None or self.group.is_main:
            warn_if_no_update(self.args, self.agent.total_steps, self.args.rollout_num * self.args.num_envs * self.world_size)
        (self._run_async if self.args.if_async_workers else self._run_lockstep)()

    def _run_lockstep(self) -> None:
        args, agent = self.args, self.agent
        width, is_first = args.rollout_num * args.num_envs * self.world_size, True
        while not self.stopping:
            horizon, if_random, if_update = round_plan(args, agent.total_steps, width, is_first)
            if horizon == 0:
                return
            is_first = False
            for commands in self.processes.commands:
                commands.put((0, horizon, if_random, agent.total_steps))
            for _ in range(args.rollout_num):
                self.processes.receive(self.processes.ready)
            rollouts = [self._view(index, 0, horizon) for index in range(args.rollout_num)]  # worker order: one seed, one curve
            self._learn(rollouts, [if_update] * args.rollout_num)

    def _run_async(self) -> None:
        args, agent = self.args, self.agent
        committed = agent.total_steps  # env steps commanded so far, explored or not
        pending: dict[tuple[int, int], bool] = {}  # (worker, slot) -> whether its rollout is learned from

        def command(index: int, slot_index: int, is_first: bool) -> None:
            nonlocal committed
            width = args.rollout_num * args.num_envs if is_first else args.num_envs
            horizon, if_random, if_update = round_plan(args, committed, width, is_first)
            if horizon and not self.stopping:
                self.processes.commands[index].put((slot_index, horizon, if_random, committed))
                committed += horizon * args.num_envs
                pending[(index, slot_index)] = if_update

        for slot_index in range(len(self.slots[0])):
            for index in range(args.rollout_num):
                command(index, slot_index, is_first=slot_index == 0)
        while pending:
            messages = [self.processes.receive(self.processes.ready)]
            while (message := self.processes.receive(self.processes.ready, block=False)) is not None:
                messages.append(message)
            rollouts, learned = [], []  # a warm-up rollout may come with learned ones: its steps buy no updates
            for _, index, slot_index, steps in messages:
                # copied out of the slot before the worker may refill it
                rollouts.append(Transitions(*(part.clone() for part in self._view(index, slot_index, steps))))
                learned.append(pending.pop((index, slot_index)))
                command(index, slot_index, is_first=False)
            self._learn(rollouts, learned, concatenate=False)

    def _view(self, index: int, slot_index: int, horizon: int) -> Transitions:
        return Transitions(*(part[:horizon] for part in self.slots[index][slot_index]))

    def _learn(self, rollouts: list[Transitions], learned: list[bool], concatenate: bool = True) -> None:
        """Stores the rollouts, learns from those marked in `learned` (`store_and_update`), publishes the new
        weights, and hands off to the Evaluator when due."""
        args, agent = self.args, self.agent
        if_update = any(learned)
        if concatenate:  # one rollout of all the workers' envs side by side: (horizon, rollout_num × num_envs, ...)
            rollouts, learned = [Transitions(*(torch.cat(parts, dim=1) for parts in zip(*rollouts)))], [if_update]
        rollouts = [Transitions(*(part.to(agent.device) for part in rollout)) for rollout in rollouts]
        agent.total_steps += sum(rollout.reward.numel() for rollout in rollouts) * self.world_size  # every rank's steps
        logs = store_and_update(agent, self.buffer, rollouts, args, learned)
        self.logs = {**self.logs, **logs}  # as train_in_rounds' last_logs
        self.weights.publish(agent.actor)
        self._read_results()
        self.stopping = stops_at_target(args, self.hit_step, agent.total_steps)
        if self.group is not None:  # rank 0's Evaluator says when the run stops at the target, for all
            self.stopping = self.group.agree(self.stopping)
            if self.group.rank:
                return
        if if_update and agent.total_steps >= self.next_eval_step:
            self.next_eval_step = (agent.total_steps // args.eval_gap + 1) * args.eval_gap
            self._hand_off(logs)

    def _hand_off(self, logs: dict[str, float]) -> None:
        """Checkpoints the agent and gives the Evaluator the newest actor (which checks the figures); never waits for it."""
        self.agent.save_or_load_agent(self.args.cwd, if_save=True)
        meta = {"step": self.agent.total_steps, "seconds": self.clock.train_seconds, "logs": logs}
        self.last_snapshot = (self.snapshot.publish(self.agent.actor, meta), self.agent.total_steps)

    def _read_results(self) -> None:
        while (message := self.processes.receive(self.processes.results, block=False)) is not None:
            _, _, step, reached, _ = message
            if reached and self.hit_step is None:
                self.hit_step = step
                if self.args.if_print:
                    print(f"reached the target return {self.args.target_return:g} at env step {step:,d}"
                          f"{hold_note(self.args, step)}", flush=True)

    def _final_evaluation(self) -> None:
        """Evaluates the final policy (if not yet handed off) and waits until the Evaluator has recorded it."""
        if self.last_snapshot is None or self.last_snapshot[1] != self.agent.total_steps:
            self._hand_off(self.logs)
        while self.processes.receive(self.processes.results)[1] < self.last_snapshot[0]:
            pass
