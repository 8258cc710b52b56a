"""train_and_evaluate_mp: workers, the learner and the Evaluator process; faults, signals, resume, seeds.

Every test here starts processes, so each has a timeout, and the autouse fixture fails any test
that leaves a child process behind.
"""

import csv
import multiprocessing
import multiprocessing.forkserver
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Collection

import gymnasium as gym
import numpy as np
import pytest
import torch

from elegantrl.agent import AgentD3QN, AgentDiscretePPO, AgentSAC
from elegantrl.env import PreprocessEnv
from elegantrl.run import NO_ACTOR_KEPT, Arguments, WorkerError, load_agent, recheck_kept_sentence, train_and_evaluate_mp

TINY = dict(net_dim=32, batch_size=64, target_step=64, warmup_steps=256, eval_gap=512, eval_times1=2, eval_times2=0,
            rollout_num=2, if_print=False)


def child_pids(pid: int, leave_out: Collection[int] = ()) -> set[int]:
    """The live (not zombie) descendants of `pid`, from /proc (a run's workers are children of the fork server it
    started, `elegantrl.parallel.process_context`), less those in `leave_out`, and less multiprocessing's resource
    tracker, which lives as long as the process that first needed it."""
    parents, commands = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as file:
                fields = file.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                commands[int(entry)] = file.read()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(entry)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return {child for child in found if b"resource_tracker" not in commands.get(child, b"")} - set(leave_out)


def own_fork_server() -> set[int]:
    """This process's fork server, if it started one: like the resource tracker, it lives as long as this process."""
    pid = multiprocessing.forkserver._forkserver._forkserver_pid
    return {pid} if pid else set()


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(autouse=True)
def no_process_left_behind():
    yield
    deadline = time.monotonic() + 10
    while child_pids(os.getpid(), own_fork_server()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not child_pids(os.getpid(), own_fork_server()), "a test left a child process running"


def read_record(cwd):
    with open(os.path.join(cwd, "recorder.csv")) as file:
        return list(csv.DictReader(file))


class FaultyCartPole(gym.Wrapper):
    """CartPole that, in a worker process only, raises or kills its own process after `after` steps."""

    def __init__(self, fault: str = "raise", after: int = 150):
        super().__init__(gym.make("CartPole-v1"))
        self.fault, self.after, self.steps = fault, after, 0

    def step(self, action):
        self.steps += 1
        if multiprocessing.parent_process() is not None and self.steps > self.after:
            if self.fault == "raise":
                raise RuntimeError("the simulator exploded")
            os.kill(os.getpid(), signal.SIGKILL)
        return self.env.step(action)


def make_raising_cartpole():
    return FaultyCartPole("raise")


def make_killed_cartpole():
    return FaultyCartPole("kill")


class NaNPendulumInWorkers(gym.Wrapper):
    """Pendulum whose observations turn NaN after `after` steps, in a worker process only."""

    def __init__(self, after: int = 300):
        super().__init__(gym.make("Pendulum-v1"))
        self.after, self.steps = after, 0

    def step(self, action):
        self.steps += 1
        state, reward, terminated, truncated, info = self.env.step(action)
        if multiprocessing.parent_process() is not None and self.steps > self.after:
            state = state * np.nan
        return state, reward, terminated, truncated, info


def make_cartpole_noting_the_environment():
    """CartPole, after writing the value of ELEGANTRL_TEST_MARK in the process that makes it to a file of the current folder."""
    with open(f"mark-{os.getpid()}", "w") as file:
        file.write(os.environ.get("ELEGANTRL_TEST_MARK", "unset"))
    return gym.make("CartPole-v1")


class SlowCartPole(gym.Wrapper):
    """CartPole whose every step takes 0.3 s: an evaluation of it takes seconds."""

    def __init__(self):
        super().__init__(gym.make("CartPole-v1", max_episode_steps=10))

    def step(self, action):
        time.sleep(0.3)
        return self.env.step(action)


@pytest.mark.timeout(180)
def test_an_off_policy_agent_learns_with_two_workers(tmp_path):
    args = Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=str(tmp_path), target_return=195.0, break_step=30_000,
                     random_seed=0, if_print=False, rollout_num=2)
    agent = train_and_evaluate_mp(args)
    rows = read_record(args.cwd)
    assert max(float(row["return_mean"]) for row in rows) >= 195.0  # a random policy averages about 22
    # stopped at the target, whose evaluation the learner did not wait for: the policy it ended with is evaluated too
    assert agent.total_steps <= 30_000 and int(rows[-1]["step"]) == agent.total_steps
    assert os.path.isfile(os.path.join(args.cwd, "learning_curve.png"))
    assert load_agent(args.cwd).act(np.zeros(4, dtype=np.float32)) in (0, 1)


@pytest.mark.timeout(180)
def test_an_on_policy_agent_learns_with_two_workers(tmp_path):
    args = Arguments(agent=AgentDiscretePPO(), env="CartPole-v1", cwd=str(tmp_path), target_return=195.0, break_step=100_000,
                     num_envs=4, target_step=256, random_seed=0, if_print=False, rollout_num=2)
    train_and_evaluate_mp(args)
    assert max(float(row["return_mean"]) for row in read_record(args.cwd)) >= 195.0


@pytest.mark.timeout(180)
def test_target_hold_with_workers_trains_on_past_the_first_hit(tmp_path):
    args = Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=str(tmp_path), target_return=60.0, target_hold=2.0, break_step=30_000,
                     random_seed=0, if_print=False, rollout_num=2, eval_gap=500, eval_times1=2, eval_times2=0)
    agent = train_and_evaluate_mp(args)
    rows = read_record(args.cwd)
    hit = next(int(row["step"]) for row in rows if float(row["best_return"]) >= 60.0)
    assert 2 * hit <= int(rows[-1]["step"]) == agent.total_steps < 30_000  # the final policy evaluated where it stopped


@pytest.mark.timeout(120)
def test_an_asynchronous_off_policy_run_learns_and_keeps_the_budget(tmp_path):
    # 7,000 steps, not 5,000: SAC on Pendulum learns in its last few thousand, and an async learner that the rest of a
    # loaded machine slowed had only reached -909 by 5,000 (about -650 on a quiet one, -160 to -290 by 7,000)
    args = Arguments(agent=AgentSAC(), env="Pendulum-v1", cwd=str(tmp_path), net_dim=64, break_step=7_000, random_seed=0,
                     if_async_workers=True, if_print=False, rollout_num=2, eval_gap=1000)
    agent = train_and_evaluate_mp(args)
    rows = read_record(args.cwd)
    assert agent.total_steps <= 7_000 and int(rows[-1]["step"]) == agent.total_steps
    assert max(float(row["return_mean"]) for row in rows) > -900.0  # a random policy scores about -1200


@pytest.mark.timeout(60)
def test_asynchronous_workers_are_refused_for_on_policy_agents(tmp_path):
    args = Arguments(agent=AgentDiscretePPO(), env="CartPole-v1", cwd=str(tmp_path / "run"), if_async_workers=True)
    with pytest.raises(ValueError, match="learns on-policy.*if_async_workers=False"):
        train_and_evaluate_mp(args)


@pytest.mark.timeout(60)
def test_asynchronous_workers_are_refused_in_a_callers_process_group_before_anything_starts(tmp_path, monkeypatch):
    import torch.distributed as dist

    monkeypatch.setattr(dist, "is_initialized", lambda: True)  # a group of two learners that the caller made
    monkeypatch.setattr(dist, "get_world_size", lambda group=None: 2)
    args = Arguments(agent=AgentSAC(), env="Pendulum-v1", cwd=str(tmp_path / "run"), if_async_workers=True)
    with pytest.raises(ValueError, match="several learners.*if_async_workers=False"):
        train_and_evaluate_mp(args)
    assert not os.path.exists(args.cwd) and multiprocessing.active_children() == []


@pytest.mark.timeout(90)
def test_an_env_that_raises_in_a_worker_ends_the_run_with_its_message(tmp_path):
    args = Arguments(agent=AgentD3QN(), env=make_raising_cartpole, cwd=str(tmp_path), break_step=100_000, **TINY)
    start = time.monotonic()
    with pytest.raises(WorkerError, match=r"worker \d failed(.|\n)*the simulator exploded") as info:
        train_and_evaluate_mp(args)
    assert time.monotonic() - start < 60
    assert says_what_the_folder_holds(str(info.value), args.cwd)
    Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=str(tmp_path), if_remove=True).init_before_training()  # a failed run let go of it too


@pytest.mark.timeout(90)
def test_a_nan_state_in_a_worker_ends_the_run_saying_what_it_kept(tmp_path):
    """The worker's env raises (its policy passed the NaN on as an action); the learner says which worker and what was kept."""
    args = Arguments(agent=AgentSAC(), env=NaNPendulumInWorkers, eval_env="Pendulum-v1", cwd=str(tmp_path), break_step=100_000,
                     **TINY)
    with pytest.raises(FloatingPointError, match=r"worker \d: env 'Pendulum-v1' returned a non-finite observation .*outputs\. Training "
                                                 r"stopped\. (The best actor so far is kept in .*actor.pth|The run folder holds no "
                                                 r"actor\.pth)") as info:
        train_and_evaluate_mp(args)
    assert says_what_the_folder_holds(str(info.value), args.cwd)


def says_what_the_folder_holds(message: str, cwd: str) -> bool:
    """The error's sentence on actor.pth is true of the folder the run left (the Evaluator process may write it
    while a worker's error is on its way)."""
    kept = os.path.isfile(os.path.join(cwd, "actor.pth"))
    return ("The best actor so far is kept in" in message) == kept and ("The run folder holds no actor.pth" in message) == (not kept)


@pytest.mark.timeout(120)
def test_the_processes_see_the_environment_variables_of_the_moment_the_run_starts(tmp_path, monkeypatch):
    """Workers come from a fork server that outlives the run (`process_context`); a variable set after it started
    still reaches the next run's processes, as it would a spawned process's."""
    for mark in ("1", "2"):
        (tmp_path / mark).mkdir()
        monkeypatch.chdir(tmp_path / mark)
        monkeypatch.setenv("ELEGANTRL_TEST_MARK", mark)
        train_and_evaluate_mp(Arguments(agent=AgentD3QN(), env=make_cartpole_noting_the_environment, cwd="run", break_step=512,
                                        **TINY))
        marks = [(tmp_path / mark / name).read_text() for name in os.listdir(tmp_path / mark) if name.startswith("mark-")]
        assert len(marks) >= 1 + TINY["rollout_num"] + 1 and set(marks) == {mark}  # this process, the workers, the Evaluator


@pytest.mark.timeout(90)
def test_a_worker_killed_by_sigkill_is_reported_not_waited_for(tmp_path):
    # one env a worker, as in the Evaluator: with CartPole's 8 (its tuned entry) the Evaluator's copy would reach the kill first
    args = Arguments(agent=AgentD3QN(), env=make_killed_cartpole, cwd=str(tmp_path), break_step=100_000, num_envs=1, **TINY)
    with pytest.raises(WorkerError, match=r"worker \d died \(signal SIGKILL\)"):
        train_and_evaluate_mp(args)


class LockedEnv(gym.Env):
    """An env holding a lock, which no process can pickle, and with no registered spec."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self):
        self.lock = threading.Lock()

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, False, False, {}


@pytest.mark.timeout(90)
def test_an_env_that_cannot_reach_another_process_is_refused_before_anything_is_written(tmp_path):
    args = Arguments(agent=AgentD3QN(), env=PreprocessEnv(LockedEnv(), max_step=100), cwd=str(tmp_path / "run"), **TINY)
    with pytest.raises(TypeError, match="cannot be sent to another process.*an env id, or a function that makes the env"):
        train_and_evaluate_mp(args)
    assert not (tmp_path / "run").exists()


class SelfKillingEvalCartPole(gym.Wrapper):
    """CartPole that kills its own process on its 30th step: as the eval env, it takes the Evaluator down."""

    def __init__(self):
        super().__init__(gym.make("CartPole-v1"))
        self.steps = 0

    def step(self, action):
        self.steps += 1
        if self.steps >= 30:
            os.kill(os.getpid(), signal.SIGKILL)
        return self.env.step(action)


@pytest.mark.timeout(90)
def test_a_killed_evaluator_is_reported_at_once_not_at_the_end_of_the_budget(tmp_path):
    args = Arguments(agent=AgentD3QN(), env="CartPole-v1", eval_env=SelfKillingEvalCartPole, cwd=str(tmp_path),
                     break_step=10_000_000, if_allow_break=False, **TINY)
    with pytest.raises(WorkerError, match=r"the Evaluator died \(signal SIGKILL\)"):
        train_and_evaluate_mp(args)
    assert torch.load(tmp_path / "agent.pth", weights_only=True)["total_steps"] < 200_000


@pytest.mark.timeout(120)
def test_an_env_class_defined_under_the_main_guard_reaches_the_workers(tmp_path):
    # as in a notebook, the class cannot be imported by the workers: it travels by value
    script = tmp_path / "train.py"
    script.write_text(
        "import gymnasium as gym\n"
        "from elegantrl.agent import AgentD3QN\n"
        "from elegantrl.run import Arguments, train_and_evaluate_mp\n"
        "if __name__ == '__main__':\n"
        "    class ZeroRewardCartPole(gym.Wrapper):\n"
        "        def __init__(self):\n"
        "            super().__init__(gym.make('CartPole-v1'))\n"
        "        def step(self, action):\n"
        "            state, reward, terminated, truncated, info = self.env.step(action)\n"
        "            return state, 0.0, terminated, truncated, info\n"
        f"    train_and_evaluate_mp(Arguments(agent=AgentD3QN(), env=ZeroRewardCartPole, cwd={str(tmp_path / 'run')!r}, net_dim=16,\n"
        "        break_step=1024, warmup_steps=256, eval_gap=512, eval_times1=1, eval_times2=0, rollout_num=2, if_print=False))\n"
    )
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=100)
    assert result.returncode == 0, result.stderr[-3000:]
    assert {float(row["return_mean"]) for row in read_record(str(tmp_path / "run"))} == {0.0}  # the workers' env was the user's


@pytest.mark.timeout(120)
def test_sigterm_stops_every_process_and_keeps_a_loadable_actor(tmp_path):
    cwd = tmp_path / "run"
    process = subprocess.Popen(
        [sys.executable, "-m", "elegantrl", "--agent", "D3QN", "--env", "CartPole-v1", "--rollout-num", "2", "--cwd", str(cwd),
         "--no-allow-break", "--break-step", "10000000", "--eval-gap", "500", "--eval-times2", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90
        while not (cwd / "recorder.csv").is_file() or len(child_pids(process.pid)) < 4:  # the fork server, 2 workers, the Evaluator
            ended = process.poll() is not None
            assert not ended and time.monotonic() < deadline, process.stdout.read() if ended else "no evaluation in 90 s"
            time.sleep(0.2)
        time.sleep(1.0)
        children = child_pids(process.pid)  # the fork server ends with the run's process too
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 143, output
    assert "stopped by SIGTERM" in output
    after_stop = output.split("stopped by SIGTERM")[1].splitlines()[1:]
    assert all(line.startswith("best evaluation return") for line in after_stop), output  # the Evaluator's rows came first
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in children)
    agent = load_agent(str(cwd))  # actor.pth loads
    assert agent.act(np.zeros(4, dtype=np.float32)) in (0, 1)
    assert torch.load(cwd / "agent.pth", weights_only=True)["total_steps"] > 0


@pytest.mark.timeout(120)
def test_a_slow_evaluation_env_does_not_hold_the_learner_back(tmp_path):
    # one evaluation takes about 2 episodes x 10 steps x 0.3 s = 6 s, far longer than training's 512 steps between
    # hand-offs takes, even beside another test's processes (pytest -n 2)
    args = Arguments(agent=AgentD3QN(), env="CartPole-v1", eval_env=SlowCartPole, cwd=str(tmp_path), break_step=6_144,
                     if_allow_break=False, random_seed=0, **TINY)
    agent = train_and_evaluate_mp(args)
    steps = [int(row["step"]) for row in read_record(args.cwd)]
    hand_offs = len(range(512, 6_144 + 1, 512))
    assert agent.total_steps == 6_144 and steps[-1] == 6_144  # the learner ran its whole budget, and the final policy was evaluated
    assert len(steps) < hand_offs  # while the Evaluator was busy the learner went on, and the Evaluator took the newest snapshot


@pytest.mark.timeout(180)
def test_a_resumed_multiprocess_run_continues_its_steps_and_record(tmp_path):
    fields = dict(agent=AgentD3QN(), env="CartPole-v1", cwd=str(tmp_path), if_allow_break=False, random_seed=0, **TINY)
    first_run = Arguments(**fields, break_step=2_048)
    train_and_evaluate_mp(first_run)  # first_run stays alive: a run that ended lets go of its folder itself
    first = read_record(str(tmp_path))
    resumed = train_and_evaluate_mp(Arguments(**{**fields, "agent": AgentD3QN()}, break_step=4_096, if_resume=True))
    rows = read_record(str(tmp_path))
    assert resumed.total_steps == 4_096
    assert rows[: len(first)] == first  # the first run's record is kept
    assert [int(row["step"]) for row in rows[len(first):]] and all(int(row["step"]) > 2_048 for row in rows[len(first):])
    assert int(rows[-1]["step"]) == 4_096


@pytest.mark.timeout(180)
def test_two_lockstep_runs_with_one_seed_learn_the_same(tmp_path):
    def run(folder):
        args = Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=str(tmp_path / folder), break_step=3_072, if_allow_break=False,
                         random_seed=7, **TINY)
        train_and_evaluate_mp(args)
        return {row["step"]: row["return_mean"] for row in read_record(args.cwd)}

    record_a, record_b = run("a"), run("b")
    common = set(record_a) & set(record_b)
    assert len(common) >= 2 and all(record_a[step] == record_b[step] for step in common)
    state_a = torch.load(tmp_path / "a" / "agent.pth", weights_only=True)
    state_b = torch.load(tmp_path / "b" / "agent.pth", weights_only=True)
    for name, value in state_a["critic"].items():
        assert torch.equal(value, state_b["critic"][name]), name  # the same weights after the same updates on the same data


@pytest.mark.timeout(120)
def test_a_script_without_the_main_guard_fails_with_a_message_that_names_it(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "from elegantrl.agent import AgentD3QN\n"
        "from elegantrl.run import Arguments, train_and_evaluate_mp\n"
        f"train_and_evaluate_mp(Arguments(agent=AgentD3QN(), env='CartPole-v1', cwd={str(tmp_path / 'run')!r}, break_step=2000, rollout_num=1))\n"
    )
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=100)
    assert result.returncode != 0
    assert 'if __name__ == "__main__":' in result.stderr
    assert sorted(os.listdir(tmp_path)) == ["train.py"]  # a failed start leaves no run folder, and the workers made none


def test_preprocess_env_made_from_a_function_keeps_it_as_its_source():
    from elegantrl.run import as_preprocess_env

    env = as_preprocess_env(make_raising_cartpole)
    assert isinstance(env, PreprocessEnv) and env.source is make_raising_cartpole and env.state_dim == 4


def test_a_workers_error_worded_before_the_evaluators_last_save_is_corrected_once_it_stopped(tmp_path):
    """The race the multi-process learner closes: the error said no actor.pth was kept, then the Evaluator wrote one."""
    error = WorkerError(f"worker 1 failed, so training stopped. {NO_ACTOR_KEPT}Its traceback:\nRuntimeError: boom")
    recheck_kept_sentence(error, str(tmp_path))
    assert "holds no actor.pth" in str(error)  # still true: nothing was written
    (tmp_path / "actor.pth").write_bytes(b"")
    recheck_kept_sentence(error, str(tmp_path))
    assert str(error) == (f"worker 1 failed, so training stopped. The best actor so far is kept in {tmp_path}/actor.pth. "
                          f"Its traceback:\nRuntimeError: boom")
