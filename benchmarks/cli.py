"""Argument types of the benchmark command lines: a bad value is a parse error (exit 2) before anything trains or is written.

Otherwise it reaches the jobs, each fails on it, and an all-error report is still written (under the
default --out, over a committed one).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import math
import os
import signal
import subprocess
from collections.abc import Callable
from typing import Any

RUNNER_PID = "BENCHMARK_RUNNER_PID"  # set in a job's environment by the process that waits for it


def _parsed(text: str, convert: Callable[[str], Any], is_valid: Callable[[Any], bool], need: str) -> Any:
    try:
        value = convert(text)
    except ValueError:
        value = None
    if value is None or not is_valid(value):
        raise argparse.ArgumentTypeError(f"{need}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: a whole number of 1 or more (env steps, repeats, jobs)."""
    return _parsed(text, int, lambda value: value >= 1, "must be a whole number of 1 or more")


def random_seed(text: str) -> int:
    """An argparse type: a random seed, a whole number from 0 to 2**32 - 1 (what elegantrl and SB3 accept)."""
    return _parsed(text, int, lambda value: 0 <= value < 2**32, "a seed is a whole number from 0 to 2**32 - 1")


def finite_float(text: str) -> float:
    """An argparse type: a finite number (a target return)."""
    return _parsed(text, float, math.isfinite, "must be a finite number")


def check_distinct_seeds(parser: argparse.ArgumentParser, seeds: list[int]) -> None:
    """Refuses a seed named twice: it would run twice and count as two runs in the medians and intervals."""
    repeated = sorted({s for s in seeds if seeds.count(s) > 1})
    if repeated:
        parser.error(f"--seeds names {repeated} more than once; name each seed once")


def job_environment(**settings: str) -> dict[str, str]:
    """The environment of a job subprocess: this one's, `settings`, and this process's id for `end_with_runner`."""
    return {**os.environ, **settings, RUNNER_PID: str(os.getpid())}


def end_with_runner() -> None:
    """In a job subprocess: end it when the runner that waits for it dies, even by SIGKILL, rather than train on,
    unseen, to its budget (Linux's PR_SET_PDEATHSIG; elsewhere, nothing). The signal comes when the runner's
    *thread* that started the job ends, so that thread must wait for the job, as ``subprocess.run`` does."""
    runner = os.environ.get(RUNNER_PID)
    try:
        if runner is None or ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM) != 0:  # 1: PR_SET_PDEATHSIG
            return
    except (OSError, AttributeError):  # not Linux
        return
    if os.getppid() != int(runner):  # the runner died before the line above
        os._exit(1)


def run_in_own_group(command: list[str], env: dict[str, str] | None = None, timeout: float = 3600.0) -> None:
    """Runs a training `command` (the learners and MuZero measurements) in a session of its own, its output
    captured; CalledProcessError if it fails. One that runs past `timeout` seconds is taken to hang: its
    whole process group is killed (torchrun's ranks with it, which a kill of the launcher alone would orphan)
    and TimeoutExpired raised."""
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except BaseException:  # the timeout, or Ctrl-C, which does not reach a session of its own
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise
    if process.returncode != 0:
        raise subprocess.CalledProcessError(process.returncode, command, output)
