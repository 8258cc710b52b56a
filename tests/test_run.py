"""Arguments validation, train_and_evaluate, the Evaluator's files, NaN handling and the CLI."""

import concurrent.futures
import csv
import dataclasses
import json
import math
import multiprocessing
import os
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import pytest
import torch

import elegantrl.run
from elegantrl.agent import AgentD3QN, AgentDQN, AgentSAC
from elegantrl.env import PreprocessEnv
from elegantrl.run import Arguments, Evaluator, train_and_evaluate
from elegantrl.tuned import TUNED

# one env (not the 8 that CartPole's tuned entry explores with): rounds of target_step env steps, as the tests count them
TINY = dict(net_dim=16, batch_size=32, target_step=32, warmup_steps=64, eval_gap=128, eval_times1=2, eval_times2=1,
            break_step=512, num_envs=1, if_print=False)


def read_record(cwd):
    with open(os.path.join(cwd, "recorder.csv")) as file:
        return list(csv.DictReader(file))


def test_agent_class_is_accepted_and_defaults_are_filled(tmp_path):
    args = Arguments(agent=AgentD3QN, env="CartPole-v1", cwd=str(tmp_path / "run"))
    args.init_before_training()
    assert isinstance(args.agent, AgentD3QN) and isinstance(args.env, PreprocessEnv)
    # a field in the tuned entry for the DQN family on CartPole takes it, the others the family's defaults
    assert args.net_dim == TUNED["DQN", "CartPole-v1"]["net_dim"] and args.target_return == 475.0
    assert args.batch_size == AgentD3QN.arg_defaults["batch_size"] and "batch_size" not in TUNED["DQN", "CartPole-v1"]
    assert args.if_on_policy is False and os.path.isdir(args.cwd)


@pytest.mark.parametrize(
    "changes, error, message",
    [
        (dict(agent=None), ValueError, "agent is not set"),
        (dict(agent="D3QN"), TypeError, "elegantrl agent"),
        (dict(env=None), ValueError, "env is not set"),
        (dict(env=42), TypeError, "Gym-API env"),
        (dict(env="CartPole-v9"), ValueError, "CartPole-v1"),
        (dict(net_dim="64"), TypeError, "net_dim must be int"),
        (dict(net_dim=64.0), TypeError, "net_dim must be int"),
        (dict(break_step=1e4), TypeError, "break_step must be int, got 10000.0 \\(float\\); write 10_000"),
        (dict(if_allow_break=1), TypeError, "if_allow_break must be bool"),
        (dict(batch_size=0), ValueError, "batch_size must be positive"),
        (dict(learning_rate=-1e-3), ValueError, "learning_rate must be positive"),
        (dict(gamma=1.5), ValueError, "gamma"),
        (dict(target_hold=0.5), ValueError, "target_hold"),
        (dict(lr_decay_steps=-1), ValueError, "lr_decay_steps must be zero or positive"),
        (dict(lr_decay_steps=500, warmup_steps=1000), ValueError, "lr_decay_steps=500 ends the learning-rate decay within"),
        (dict(batch_size=512, max_memo=256), ValueError, "exceeds max_memo"),
        (dict(if_on_policy=True), ValueError, "off-policy"),
        (dict(env="Pendulum-v1"), ValueError, "needs a discrete action space.*Pendulum-v1 has Box"),
        (dict(reward_scale=0.0), ValueError, "reward_scale must be positive"),
        (dict(reward_scale=float("nan")), ValueError, "reward_scale must be a finite number"),
        (dict(repeat_times=float("inf")), ValueError, "repeat_times must be a finite number"),
        (dict(random_seed=-1), ValueError, "random_seed must be an integer from 0"),
        (dict(device="cuda:7"), ValueError, "'cuda:7' is not available here"),
        (dict(device="gpu"), ValueError, "not a torch device"),
        (dict(device="hpu"), ValueError, "'hpu' is not available here"),  # torch imports its module for it, absent in most builds
        (dict(eval_env="Acrobot-v1"), ValueError, "eval_env 'Acrobot-v1' does not match env 'CartPole-v1'"),
        (dict(if_resume=True), FileNotFoundError, "needs Arguments.cwd set to a run folder that holds agent.pth"),
    ],
)
def test_arguments_errors_name_the_fix(tmp_path, changes, error, message):
    fields = dict(agent=AgentD3QN(), env="CartPole-v1", cwd=str(tmp_path / "run"))
    with pytest.raises(error, match=message):
        Arguments(**{**fields, **changes}).init_before_training()


def test_discrete_agent_error_lists_the_agents_that_fit(tmp_path):
    with pytest.raises(ValueError, match="AgentDQN") as info:
        Arguments(agent=AgentDQN(), env="Pendulum-v1", cwd=str(tmp_path)).init_before_training()
    assert "AgentDQN" not in str(info.value).split("use one of:")[1]  # DQN does not fit a Box env


@pytest.mark.parametrize("wrap", [PreprocessEnv, lambda raw: raw], ids=["preprocess-env", "raw-env"])
def test_eval_env_that_is_the_exploring_env_is_refused(tmp_path, wrap):
    raw = gym.make("CartPole-v1")
    env, eval_env = PreprocessEnv(raw), wrap(raw)
    with pytest.raises(ValueError, match="eval_env is the same env as Arguments.env"):
        Arguments(agent=AgentD3QN(), env=env, eval_env=eval_env, cwd=str(tmp_path / "run")).init_before_training()
    assert not (tmp_path / "run").exists()


def test_existing_run_folder_is_kept_unless_if_remove(tmp_path):
    cwd = tmp_path / "run"
    cwd.mkdir()
    (cwd / "config.json").write_text('{"elegantrl_run": 1}')
    (cwd / "actor.pth").write_bytes(b"an earlier run")
    with pytest.raises(FileExistsError, match="already holds a run.*if_remove"):
        Arguments(agent=AgentDQN(), env="CartPole-v1", cwd=str(cwd)).init_before_training()
    assert (cwd / "actor.pth").read_bytes() == b"an earlier run"
    Arguments(agent=AgentDQN(), env="CartPole-v1", cwd=str(cwd), if_remove=True).init_before_training()
    assert os.listdir(cwd) == []


@pytest.mark.parametrize("link", ["tensorboard", "actor.pth", "tensorboard/events.out.tfevents.1.host"])
def test_if_remove_never_follows_a_link_out_of_the_run_folder(tmp_path, link):
    cwd, user = tmp_path / "run", tmp_path / "user"
    (cwd / "tensorboard").mkdir(parents=True)
    (cwd / "config.json").write_text('{"elegantrl_run": 1}')
    user.mkdir()
    name = "events.out.tfevents.1.host" if link == "tensorboard" else os.path.basename(link)
    (user / name).write_bytes(b"the user's own file")  # a name a run writes, so only the link gives it away
    if link == "tensorboard":
        (cwd / "tensorboard").rmdir()
        (cwd / "tensorboard").symlink_to(user, target_is_directory=True)
    else:
        (cwd / link).symlink_to(user / name)
    with pytest.raises(FileExistsError, match="nothing was deleted"):
        Arguments(agent=AgentDQN(), env="CartPole-v1", cwd=str(cwd), if_remove=True).init_before_training()
    assert (user / name).read_bytes() == b"the user's own file"
    assert (cwd / "config.json").exists() and os.path.lexists(cwd / link)


def test_default_run_folder_never_overwrites_an_earlier_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = Arguments(agent=AgentDQN(), env="CartPole-v1", random_seed=3)
    first.init_before_training()
    assert first.cwd == os.path.join("runs", "CartPole-v1_DQN_3")
    open(os.path.join(first.cwd, "recorder.csv"), "w").close()  # even a folder that is not a run of ours is skipped
    second = Arguments(agent=AgentDQN(), env="CartPole-v1", random_seed=3)
    second.init_before_training()
    assert second.cwd == os.path.join("runs", "CartPole-v1_DQN_3-2")


def test_runs_started_at_once_never_share_a_default_run_folder(tmp_path, monkeypatch):
    # A run's folder stays empty until its config.json is written, seconds after start; a second run
    # starting in that window must not take it, or both write the same files.
    monkeypatch.chdir(tmp_path)
    first = Arguments(agent=AgentDQN(), env="CartPole-v1", random_seed=3)
    first.init_before_training()
    assert os.listdir(first.cwd) == []
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        others = list(pool.map(lambda _: Arguments(agent=AgentDQN(), env="CartPole-v1", random_seed=3), range(4)))
        list(pool.map(Arguments.init_before_training, others))
    folders = [first.cwd] + [args.cwd for args in others]
    assert len(set(folders)) == 5
    assert sorted(folders)[1:] == [os.path.join("runs", f"CartPole-v1_DQN_3-{i}") for i in range(2, 6)]


def test_two_runs_never_share_a_folder_they_name_themselves(tmp_path):
    # Both see the same empty folder; without a lock both would write the same files
    cwd = tmp_path / "shared"
    cwd.mkdir()
    first = Arguments(agent=AgentDQN(), env="CartPole-v1", cwd=str(cwd))
    first.init_before_training()
    for second in (dict(), dict(if_remove=True), dict(if_resume=True)):  # a resume too, though nothing is saved there yet
        with pytest.raises(FileExistsError, match="in use by another elegantrl run"):
            Arguments(agent=AgentDQN(), env="CartPole-v1", cwd=str(cwd), **second).init_before_training()
    first.init_before_training()  # the same Arguments again (then train_and_evaluate): the same run, still its folder
    del first  # an Arguments that never trains lets go of its folder when it goes
    run = Arguments(agent=AgentDQN(), env="CartPole-v1", cwd=str(cwd), break_step=128, warmup_steps=64, eval_times1=1, eval_times2=0)
    train_and_evaluate(run)
    Arguments(agent=AgentDQN(), env="CartPole-v1", cwd=str(cwd), if_resume=True, break_step=256).init_before_training()  # run ended: free


def test_the_same_arguments_trained_again_take_a_new_default_folder_and_resume_their_last(tmp_path, monkeypatch):
    # a notebook cell run twice: the folder the first run took holds that run, which the second must not touch
    monkeypatch.chdir(tmp_path)
    args = Arguments(agent=AgentDQN(), env="CartPole-v1", random_seed=3, **{**TINY, "break_step": 128})
    train_and_evaluate(args)
    first = args.cwd
    record = open(os.path.join(first, "recorder.csv")).read()
    train_and_evaluate(args)
    assert (first, args.cwd) == (os.path.join("runs", "CartPole-v1_DQN_3"), os.path.join("runs", "CartPole-v1_DQN_3-2"))
    assert open(os.path.join(first, "recorder.csv")).read() == record
    args.if_resume, args.break_step = True, 256  # continuing is the one way back into a folder
    assert train_and_evaluate(args).total_steps >= 256 and args.cwd == os.path.join("runs", "CartPole-v1_DQN_3-2")


def test_a_run_whose_final_save_fails_still_lets_go_of_its_folder(tmp_path, monkeypatch):
    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    args = Arguments(agent=AgentDQN(), env="CartPole-v1", cwd=str(tmp_path / "run"), **TINY)
    monkeypatch.setattr(elegantrl.run, "save_run", full_disk)
    with pytest.raises(OSError, match="No space left"):
        train_and_evaluate(args)
    monkeypatch.undo()
    Arguments(agent=AgentDQN(), env="CartPole-v1", cwd=str(tmp_path / "run"), if_remove=True).init_before_training()  # args is alive


def test_without_a_system_lock_a_prepared_run_still_trains_in_the_folder_it_prepared(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(elegantrl.run, "fcntl", None)  # Windows, or a file system without flock
    args = Arguments(agent=AgentDQN(), env="CartPole-v1", random_seed=3, **TINY)
    args.init_before_training()
    prepared = args.cwd
    train_and_evaluate(args)
    assert args.cwd == prepared and os.listdir("runs") == ["CartPole-v1_DQN_3"]


def test_a_failed_start_removes_only_folders_this_run_still_holds(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = Arguments(agent=AgentDQN(), env="CartPole-v1", cwd="runs/x", **TINY)
    first.init_before_training()  # makes runs/ and runs/x
    first.release_folder()
    second = Arguments(agent=AgentDQN(), env="CartPole-v1", cwd="runs/x", **TINY)
    second.init_before_training()  # runs/x is now second's
    os.mkdir("other")
    first.cwd, first.max_memo = "other", 2**40  # a start that fails when the buffer is made
    with pytest.raises(MemoryError):
        train_and_evaluate(first)
    assert os.path.isdir("runs/x") and os.path.isdir("other")  # runs/x was removed, though second held it


def test_config_json_keeps_only_env_kwargs_that_come_back_the_same():
    from elegantrl.run import json_env_kwargs

    assert json_env_kwargs(PreprocessEnv(gym.make("Pendulum-v1", g=2.0))) == {"g": 2.0}
    assert json_env_kwargs(PreprocessEnv(gym.make("CartPole-v1"))) == {}
    # a tuple would come back from JSON as a list: a render would make another env
    assert json_env_kwargs(PreprocessEnv(gym.make("CartPole-v1", sutton_barto_reward=(1,)))) is None


@pytest.mark.timeout(120)
def test_a_live_run_keeps_its_folder_and_a_killed_one_lets_go(tmp_path):
    cwd = tmp_path / "run"
    script = (f"from elegantrl.agent import AgentDQN\nfrom elegantrl.run import Arguments, train_and_evaluate\n"
              f"train_and_evaluate(Arguments(agent=AgentDQN(), env='CartPole-v1', cwd={str(cwd)!r}, break_step=10**9, "
              f"eval_gap=64, warmup_steps=64, eval_times1=1, eval_times2=0, if_allow_break=False, net_dim=16))\n")
    run = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 90
        while not (cwd / "recorder.csv").exists():  # written at its first evaluation
            assert run.poll() is None and time.monotonic() < deadline, run.stderr.read().decode()[-2000:] if run.poll() else "no evaluation"
            time.sleep(0.2)
        for other in (dict(if_remove=True), dict(if_resume=True)):
            with pytest.raises(FileExistsError, match="in use by another elegantrl run"):
                Arguments(agent=AgentDQN(), env="CartPole-v1", cwd=str(cwd), net_dim=16, **other).init_before_training()
        assert (cwd / "config.json").exists() and (cwd / "recorder.csv").exists()  # if_remove deleted nothing
    finally:
        run.kill()
        run.wait(timeout=30)
    # SIGKILL ran no cleanup, and yet the folder is free: the system drops the lock with the process
    Arguments(agent=AgentDQN(), env="CartPole-v1", cwd=str(cwd), if_remove=True).init_before_training()
    assert os.listdir(cwd) == []


@pytest.mark.timeout(60)
def test_a_process_forked_from_a_run_does_not_keep_its_folder_locked(tmp_path):
    # an async env's worker is forked from the run; if the run is killed first, its folder must be free at once
    args = Arguments(agent=AgentDQN(), env="CartPole-v1", cwd=str(tmp_path / "run"))
    args.init_before_training()
    child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(30,))
    child.start()
    try:
        args.release_folder()  # as the kill of the run would: the child lives on
        Arguments(agent=AgentDQN(), env="CartPole-v1", cwd=str(tmp_path / "run"), if_remove=True).init_before_training()
    finally:
        child.kill()
        child.join(timeout=30)


@pytest.mark.timeout(120)
def test_arguments_prepared_in_a_parent_train_in_a_forked_child(tmp_path):
    args = Arguments(agent=AgentDQN(), env="CartPole-v1", cwd=str(tmp_path / "run"), **TINY)
    args.init_before_training()
    child = multiprocessing.get_context("fork").Process(target=train_and_evaluate, args=(args,))
    child.start()
    child.join(timeout=100)
    assert child.exitcode == 0 and (tmp_path / "run" / "agent.pth").exists()


@pytest.mark.timeout(120)
def test_a_failed_start_closes_its_async_env_workers(tmp_path):
    args = Arguments(agent=AgentDQN(), env="CartPole-v1", cwd=str(tmp_path / "run"), if_async_envs=True,
                     max_memo=2**40, **{**TINY, "num_envs": 2})  # fails when the buffer is made, after the vector env started
    with pytest.raises(MemoryError) as failure:
        train_and_evaluate(args)
    assert failure.value is not None and multiprocessing.active_children() == []  # closed, not left to the garbage collector


def test_train_and_evaluate_writes_the_run_folder(tmp_path):
    args = Arguments(agent=AgentD3QN(), env=PreprocessEnv(gym.make("CartPole-v1")), cwd=str(tmp_path / "run"), **TINY)
    agent = train_and_evaluate(args)
    assert {"actor.pth", "agent.pth", "recorder.csv", "learning_curve.png"} <= set(os.listdir(args.cwd))
    rows = read_record(args.cwd)
    assert [int(r["step"]) for r in rows] == [128, 256, 384, 512]  # a fixed cadence in env steps
    assert {"seconds", "return_mean", "return_std", "best_return", "obj_critic", "q_value", "explore_rate"} <= set(rows[0])
    best = max(float(r["return_mean"]) for r in rows)
    assert float(rows[-1]["best_return"]) == pytest.approx(best)
    # the returned agent acts with the best actor, which is the one on disk
    saved = torch.load(os.path.join(args.cwd, "actor.pth"), weights_only=True)
    assert all(torch.equal(saved[k], v) for k, v in agent.actor.state_dict().items())
    assert open(os.path.join(args.cwd, "learning_curve.png"), "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_the_final_policy_is_evaluated_when_break_step_falls_between_evaluations(tmp_path):
    args = Arguments(agent=AgentDQN(), env="CartPole-v1", cwd=str(tmp_path / "run"), **{**TINY, "eval_gap": 10_000})
    train_and_evaluate(args)
    assert [r["step"] for r in read_record(args.cwd)] == ["512"]
    assert os.path.isfile(os.path.join(args.cwd, "actor.pth"))


def test_same_seed_gives_the_same_record(tmp_path):
    def run(seed, name):
        args = Arguments(agent=AgentD3QN(), env="CartPole-v1", random_seed=seed, cwd=str(tmp_path / name), **TINY)
        train_and_evaluate(args)
        return [(r["step"], r["return_mean"], r["obj_critic"], r["q_value"]) for r in read_record(args.cwd)]

    first, second, other = run(1, "a"), run(1, "b"), run(2, "c")
    assert first == second
    assert first != other


class NaNRewardAfter(gym.Wrapper):
    """A faulty env: the reward becomes NaN from step `bad_step` on, counted from the last seeded reset."""

    def __init__(self, env, bad_step):
        super().__init__(env)
        self.bad_step, self.steps = bad_step, 0

    def reset(self, *, seed=None, options=None):
        if seed is not None:  # check_env's trial steps and the training run each start with a seeded reset
            self.steps = 0
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        state, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        return state, (np.nan if self.steps >= self.bad_step else reward), terminated, truncated, info


def test_nan_from_the_env_stops_with_the_step_and_keeps_the_best_actor(tmp_path):
    env = PreprocessEnv(NaNRewardAfter(gym.make("CartPole-v1"), bad_step=300))
    eval_env = PreprocessEnv("CartPole-v1")
    args = Arguments(agent=AgentDQN(), env=env, eval_env=eval_env, cwd=str(tmp_path / "run"), **TINY)
    with pytest.raises(FloatingPointError, match=r"env step 300\. .*Training stopped\. The best actor so far is kept in "):
        train_and_evaluate(args)
    assert os.path.isfile(os.path.join(args.cwd, "actor.pth"))
    assert [r["step"] for r in read_record(args.cwd)] == ["128", "256"]


class NaNStateAfter(NaNRewardAfter):
    """A faulty env: the observation becomes NaN from step `bad_step` on, counted from the last seeded reset."""

    def step(self, action):
        state, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        return (state * np.nan if self.steps >= self.bad_step else state), reward, terminated, truncated, info


def test_a_nan_state_stops_a_sampling_discrete_policy_with_the_cause_not_a_torch_error(tmp_path):
    from elegantrl.agent import AgentDiscretePPO

    args = Arguments(agent=AgentDiscretePPO(), env=PreprocessEnv(NaNStateAfter(gym.make("CartPole-v1"), bad_step=40)),
                     eval_env=PreprocessEnv("CartPole-v1"), cwd=str(tmp_path / "run"), **{**TINY, "warmup_steps": 0})
    with pytest.raises(FloatingPointError, match=r"the env returned a non-finite state .* by env step 41.*outputs\. Training stopped\. The run "
                                                 r"folder holds no actor\.pth \(one is written when an evaluation sets a new best return\)\.$"):
        train_and_evaluate(args)


def test_a_nan_state_met_by_a_continuous_policy_says_which_actor_the_run_kept(tmp_path):
    """The env, not the run, raises here (the policy passed the NaN on as an action): the message still says what was kept."""
    args = Arguments(agent=AgentSAC(), env=PreprocessEnv(NaNStateAfter(gym.make("Pendulum-v1"), bad_step=300)),
                     eval_env=PreprocessEnv("Pendulum-v1"), cwd=str(tmp_path / "run"), **TINY)
    with pytest.raises(FloatingPointError, match=r"returned a non-finite observation .* at episode step 100; check the env's .*"
                                                 r"outputs\. Training stopped\. The best actor so far is kept in .*run/actor\.pth\.$"):
        train_and_evaluate(args)
    assert [r["step"] for r in read_record(args.cwd)] == ["128", "256"]


DIVERGED_POLICY = """
import sys, torch
from elegantrl.agent import AgentDiscretePPO
from elegantrl.env import PreprocessEnv
agent = AgentDiscretePPO()
agent.init(16, 4, 2, device=sys.argv[1])
env = PreprocessEnv("CartPole-v1")
agent.reset_exploration(env, seed=0)
with torch.no_grad():
    for param in agent.actor.parameters():
        param.fill_(float("nan"))
agent.explore_env(env, 8)
"""


@pytest.mark.timeout(120)
@pytest.mark.parametrize("device", ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())][:1])
def test_a_sampling_discrete_policy_with_diverged_weights_says_so_not_a_torch_error(device):
    """In a process of its own: on a GPU, NaN probabilities are a device-side assert, which leaves the GPU unusable."""
    result = subprocess.run([sys.executable, "-c", DIVERGED_POLICY, device], capture_output=True, text=True, timeout=100)
    assert result.returncode == 1, result.stderr
    last_line = result.stderr.strip().splitlines()[-1]
    assert last_line.startswith("FloatingPointError"), result.stderr
    assert "by env step 1" in last_line and "diverged" in last_line, last_line


class EnvBreaksAfter(NaNRewardAfter):
    """A faulty env: step `bad_step` raises."""

    def step(self, action):
        self.steps += 1
        if self.steps >= self.bad_step:
            raise RuntimeError("the env broke")
        return self.env.step(action)


class AgentDQNUnsaveable(AgentDQN):
    """Its final save fails, as it does on a GPU that a device-side assert left unreadable."""

    def save_or_load_agent(self, cwd, if_save):
        if if_save and self.total_steps > 128:
            raise OSError("the final save failed")
        super().save_or_load_agent(cwd, if_save)


def test_a_failing_final_save_does_not_hide_the_error_that_ended_the_run(tmp_path):
    args = Arguments(agent=AgentDQNUnsaveable(), env=PreprocessEnv(EnvBreaksAfter(gym.make("CartPole-v1"), bad_step=200)),
                     eval_env=PreprocessEnv("CartPole-v1"), cwd=str(tmp_path / "run"), **TINY)
    with pytest.raises(RuntimeError, match="the env broke"), pytest.warns(UserWarning, match="the final save failed too.*OSError"):
        train_and_evaluate(args)
    assert os.path.isfile(tmp_path / "run" / "agent.pth")  # the save at the evaluation of env step 128


def test_a_failing_final_save_is_raised_for_a_run_that_finished_even_inside_the_callers_except_block(tmp_path):
    agent = AgentDQNUnsaveable()
    agent.init(16, 4, 2)
    agent.total_steps = 256
    args = Arguments(agent=agent, env="CartPole-v1", cwd=str(tmp_path / "run"))
    evaluator = Evaluator(str(tmp_path / "run"), PreprocessEnv("CartPole-v1"), 128, 2, 0, 475.0, if_print=False)
    try:
        raise KeyError("the caller's own, already handled")
    except KeyError:
        with pytest.raises(OSError, match="the final save failed"):
            elegantrl.run.save_run(args, agent, evaluator)
    with pytest.warns(UserWarning, match="the final save failed too"):
        elegantrl.run.save_run(args, agent, evaluator, if_failed=True)


def test_a_diverged_agent_is_not_saved_over_the_last_good_checkpoint(tmp_path):
    agent = AgentSAC()
    agent.init(16, 3, 1)
    agent.save_or_load_agent(str(tmp_path), if_save=True)
    good = {name: value.clone() for name, value in agent.actor.state_dict().items()}
    with torch.no_grad():
        next(agent.critic.parameters()).fill_(float("nan"))
        next(agent.actor.parameters()).add_(1.0)
    assert agent.non_finite_parts() == ["critic"]
    with pytest.warns(UserWarning, match="not saved at env step 0: critic hold NaN or inf"):
        agent.save_or_load_agent(str(tmp_path), if_save=True)
    agent.save_or_load_agent(str(tmp_path), if_save=False)
    assert agent.non_finite_parts() == []
    assert all(torch.equal(agent.actor.state_dict()[name], value) for name, value in good.items())


def test_arguments_take_a_numpy_max_step_and_a_torch_device(tmp_path):
    args = Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=str(tmp_path / "run"), max_step=np.int64(200), device=torch.device("cpu"))
    args.check()
    assert (args.max_step, args.env.max_step, args.device) == (200, 200, "cpu")


def run_cli(*flags, cwd):
    return subprocess.run([sys.executable, "-m", "elegantrl", *flags], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_cli_help_lists_agents_and_options(tmp_path):
    result = run_cli("--help", cwd=tmp_path)
    assert result.returncode == 0
    for word in ("D3QN", "DoubleDQN", "DuelingDQN", "QRDQN", "--break-step", "--seed", "--net-dim", "--env"):
        assert word in result.stdout


def test_cli_tiny_run_writes_csv_png_and_actor(tmp_path):
    result = run_cli("--agent", "DoubleDQN", "--env", "CartPole-v1", "--seed", "3", "--break-step", "256",
                     "--eval-gap", "128", "--warmup-steps", "64", "--eval-times1", "2", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    run_folder = tmp_path / "runs" / "CartPole-v1_DoubleDQN_3"
    assert {"actor.pth", "recorder.csv", "learning_curve.png"} <= set(os.listdir(run_folder))
    assert "return (mean ± std)" in result.stdout and "       256" in result.stdout


def test_cli_bad_input_is_one_clear_line(tmp_path):
    result = run_cli("--env", "Pendulum-v1", "--break-step", "100", cwd=tmp_path)
    assert result.returncode == 2 and "needs a discrete action space" in result.stderr
    assert "Traceback" not in result.stderr
    result = run_cli("--env", "CartPol-v1", cwd=tmp_path)
    assert result.returncode == 2 and "CartPole-v1" in result.stderr
    result = run_cli("--async-workers", cwd=tmp_path)  # a setting of worker processes, without any
    assert result.returncode == 2 and "--async-workers needs --rollout-num N" in result.stderr
    assert not (tmp_path / "runs").exists()


def test_load_agent_and_video_of_a_run_folder(tmp_path):
    from PIL import Image

    from elegantrl.run import get_video_to_watch_env_render, load_agent

    args = Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=str(tmp_path / "run"), **TINY)
    trained = train_and_evaluate(args)
    agent = load_agent(args.cwd)
    states = np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32)
    assert isinstance(agent, AgentD3QN) and np.array_equal(agent.act(states), trained.act(states))

    driver = os.environ.pop("SDL_VIDEODRIVER", None)
    try:
        path = get_video_to_watch_env_render(args.cwd, episodes=2, fps=25)
        assert "SDL_VIDEODRIVER" not in os.environ  # its headless driver was for the call only
    finally:
        if driver is not None:
            os.environ["SDL_VIDEODRIVER"] = driver
    env = PreprocessEnv("CartPole-v1")
    steps = 0
    for episode in range(2):  # the same deterministic episodes, counted without rendering
        state, _ = env.reset(seed=episode)
        done = False
        while not done:
            state, _, terminated, truncated, _ = env.step(agent.act(state))
            steps += 1
            done = terminated or truncated
    with Image.open(path) as video:
        assert video.size == (600, 400)
        durations = []
        for frame in range(video.n_frames):
            video.seek(frame)
            durations.append(video.info["duration"])
    # one frame per step plus each episode's first, 40 ms each at 25 fps (GIF merges repeated frames, adding their durations)
    assert sum(durations) == (steps + 2) * 40



class Corridor(gym.Env):
    """A user's env, not registered: walk right to the end; it renders only if its subclass says how."""

    observation_space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, render_mode=None):
        self.render_mode, self.position = render_mode, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.position = 0
        return self._obs(), {}

    def step(self, action):
        self.position = max(0, self.position + (1 if action == 1 else -1))
        done = self.position == 4
        return self._obs(), float(done), done, False, {}

    def _obs(self):
        return np.array([self.position / 4, 1.0], dtype=np.float32)


class PaintedCorridor(Corridor):
    def render(self):
        frame = np.zeros((8, 8, 3), dtype=np.uint8)
        frame[:, 2 * self.position:] = 255
        return frame


def test_a_render_takes_the_users_own_env_as_training_did_and_names_one_that_cannot_render(tmp_path):
    from PIL import Image

    from elegantrl.run import get_video_to_watch_env_render

    args = Arguments(agent=AgentD3QN(), env=PaintedCorridor(), cwd=str(tmp_path / "run"), max_step=20, **TINY)
    train_and_evaluate(args)
    path = get_video_to_watch_env_render(args.cwd, env=PaintedCorridor(render_mode="rgb_array"))  # no PreprocessEnv, as in training
    with Image.open(path) as video:
        assert video.size == (8, 8)
    os.remove(path)
    with pytest.raises(ValueError, match="env 'Corridor' has no render\\(\\) method.*returns an RGB array"):
        get_video_to_watch_env_render(args.cwd, env=Corridor(render_mode="rgb_array"))
    assert not os.path.exists(path)

def test_a_render_makes_the_env_the_run_had_and_takes_an_agent_class_of_your_own(tmp_path):
    from elegantrl.run import get_video_to_watch_env_render, read_config

    class AgentMyD3QN(AgentD3QN):
        pass

    # the continuous lander: the registered LunarLander-v3 with continuous=True, which the default would not accept
    env = PreprocessEnv(gym.make("LunarLander-v3", continuous=True))
    args = Arguments(agent=AgentSAC(), env=env, cwd=str(tmp_path / "lander"), break_step=128, warmup_steps=64, eval_times1=1,
                     eval_times2=0, max_step=40, net_dim=16, if_print=False)
    train_and_evaluate(args)
    assert read_config(args.cwd)["env_kwargs"] == {**gym.spec("LunarLander-v3").kwargs, "continuous": True}
    assert os.path.isfile(get_video_to_watch_env_render(args.cwd))

    args = Arguments(agent=AgentMyD3QN(), env="CartPole-v1", cwd=str(tmp_path / "mine"), **TINY)
    train_and_evaluate(args)
    with pytest.raises(ValueError, match="get_video_to_watch_env_render\\(cwd, agent_class=AgentMyD3QN\\)"):
        get_video_to_watch_env_render(args.cwd)
    assert os.path.isfile(get_video_to_watch_env_render(args.cwd, agent_class=AgentMyD3QN))


def test_cli_render_writes_the_video(tmp_path):
    args = Arguments(agent=AgentDQN(), env="CartPole-v1", cwd=str(tmp_path / "run"), **TINY)
    train_and_evaluate(args)
    result = run_cli("--render", args.cwd, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert os.path.getsize(os.path.join(args.cwd, "video.gif")) > 1000
    result = run_cli("--render", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2 and "not an elegantrl run folder" in result.stderr
    config_path = os.path.join(args.cwd, "config.json")
    with open(config_path) as file:
        config = json.load(file)
    with open(config_path, "w") as file:
        json.dump({**config, "env": "MyEnv-v0"}, file)  # a run of a user's env that is not registered
    result = run_cli("--render", args.cwd, cwd=tmp_path)
    # the advice is Python, not rewritten into flags that --render does not take
    assert result.returncode == 2 and "env=MyEnv(render_mode='rgb_array'))" in result.stderr, result.stderr


class CrashAfter(gym.Wrapper):
    """A faulty env: at step 100 after a seeded reset, it raises, or kills its process outright."""

    def __init__(self, env, if_hard):
        super().__init__(env)
        self.if_hard, self.steps = if_hard, 0

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.steps = 0
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        self.steps += 1
        if self.steps == 100:
            if self.if_hard:
                os._exit(3)
            raise RuntimeError("simulator lost after %d steps" % self.steps)  # noqa: UP031 - a "%" in the traceback tripped Gymnasium's logger
        return self.env.step(action)


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")  # the vector env is closed, not left to __del__
@pytest.mark.parametrize("if_hard, message", [(False, "simulator lost"), (True, "worker process of the async vector env died")])
def test_a_crashed_env_worker_ends_the_run_with_its_error_and_keeps_the_best_actor(if_hard, message, tmp_path):
    env = PreprocessEnv(CrashAfter(gym.make("CartPole-v1"), if_hard))
    args = Arguments(agent=AgentDQN(), env=env, eval_env=PreprocessEnv("CartPole-v1"), if_async_envs=True,
                     cwd=str(tmp_path / "run"), **{**TINY, "num_envs": 2, "warmup_steps": 64,
                                                         "target_step": 16, "eval_gap": 64, "break_step": 10_000})
    with pytest.raises(RuntimeError, match=message) as failure:
        train_and_evaluate(args)
    assert {"actor.pth", "agent.pth", "recorder.csv", "learning_curve.png"} <= set(os.listdir(args.cwd))
    if not if_hard:  # the env's own traceback in its worker comes with it
        assert "in step" in str(failure.value.__cause__) and "simulator lost after" in str(failure.value.__cause__)


def test_the_final_evaluation_after_a_round_too_short_to_learn_keeps_the_last_figures(tmp_path):
    args = Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=str(tmp_path / "run"),
                     **{**TINY, "batch_size": 64, "repeat_times": 1.0, "target_step": 64, "break_step": 520})  # the last round: 8 steps, no update
    train_and_evaluate(args)
    rows = read_record(args.cwd)
    assert int(rows[-1]["step"]) == 520 and rows[-1]["obj_critic"] != "" and rows[-1]["q_value"] != ""


def test_tensorboard_logs_the_same_figures_as_the_csv(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    args = Arguments(agent=AgentDQN(), env="CartPole-v1", cwd=str(tmp_path / "run"), if_tensorboard=True, **TINY)
    train_and_evaluate(args)
    events = EventAccumulator(os.path.join(args.cwd, "tensorboard"))
    events.Reload()
    logged = [(event.step, event.value) for event in events.Scalars("return_mean")]
    rows = read_record(args.cwd)
    assert [step for step, _ in logged] == [int(row["step"]) for row in rows]
    assert [value for _, value in logged] == pytest.approx([float(row["return_mean"]) for row in rows])
    assert {"obj_critic", "q_value", "explore_rate", "best_return", "seconds"} <= set(events.Tags()["scalars"])


def test_tensorboard_writes_nothing_before_the_first_record(tmp_path):
    # the workers' Evaluator starts before the workers: if one of them then fails, the folder must be empty
    evaluator = Evaluator(str(tmp_path), PreprocessEnv("CartPole-v1"), 128, 1, 0, 475.0, 0, False, True, "")
    assert os.listdir(tmp_path) == [] and evaluator.writer is None


class SlowEpisodes(gym.Wrapper):
    def step(self, action):
        time.sleep(0.02)
        return self.env.step(action)


def test_an_evaluations_own_time_is_not_counted_as_training(tmp_path):
    agent = AgentDQN()
    agent.init(8, 4, 2)
    env = PreprocessEnv(SlowEpisodes(gym.make("CartPole-v1", max_episode_steps=20)))
    evaluator = Evaluator(str(tmp_path), env, 128, 2, 0, 475.0, 0, False, False, "")
    evaluator.start_clock()
    start = time.perf_counter()
    evaluator.evaluate_and_save(agent, 128, {}, if_force=True)
    evaluating = time.perf_counter() - start  # two episodes of 0.02 s steps
    assert evaluator.records[0]["seconds"] < evaluating / 2 and evaluator.train_seconds < evaluating / 2


def test_a_misspelt_field_is_an_error_not_ignored():
    args = Arguments(agent=AgentD3QN(), env="CartPole-v1")
    with pytest.raises(AttributeError, match="did you mean 'break_step'"):
        args.break_steps = 10**9
    with pytest.raises(TypeError, match=r"Arguments got an unexpected setting 'learing_rate': did you mean 'learning_rate'\?"):
        Arguments(agent=AgentD3QN(), env="CartPole-v1", learing_rate=1e-3)
    with pytest.raises(TypeError, match=r"Arguments got an unexpected setting 'explore_rate'.*go to its constructor"):
        Arguments(agent=AgentD3QN(), explore_rate=(1.0, 0.1))


class PresetArguments(Arguments):
    """A user's subclass whose own __init__ takes a keyword of its own."""

    def __init__(self, preset: str = "fast", **fields):
        super().__init__(**fields)
        self.break_step = {"fast": 1000, "slow": 10_000}[preset]


@dataclasses.dataclass
class SeededArguments(Arguments):
    """A dataclass subclass with an init-only field."""

    base_seed: dataclasses.InitVar[int] = 0

    def __post_init__(self, base_seed):
        self.random_seed = base_seed + 1


def test_subclasses_of_arguments_take_their_own_keywords_and_name_themselves_for_a_typo():
    assert PresetArguments(preset="slow", agent=AgentD3QN()).break_step == 10_000
    assert SeededArguments(agent=AgentD3QN(), base_seed=6).random_seed == 7
    with pytest.raises(TypeError, match=r"SeededArguments got an unexpected setting 'base_sed': did you mean 'base_seed'\?"):
        SeededArguments(base_sed=6)


def test_a_setting_an_agent_does_not_take_names_the_ones_it_does():
    from elegantrl.agent import AgentPPO

    with pytest.raises(TypeError, match=r"AgentPPO got an unexpected setting 'clip_range': it takes ratio_clip, .*target_kl"):
        AgentPPO(clip_range=0.1)
    with pytest.raises(TypeError, match=r"AgentDQN got an unexpected setting 'explore_rat': did you mean 'explore_rate'\?"):
        AgentDQN(explore_rat=(1.0, 0.1))
    with pytest.raises(TypeError, match=r"AgentD3QN got an unexpected setting 'learning_rate'.*fields of Arguments"):
        AgentD3QN(learning_rate=1e-3)


def test_resuming_continues_the_weights_the_steps_and_the_record(tmp_path):
    cwd = str(tmp_path / "run")
    first = train_and_evaluate(Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=cwd, **TINY))
    saved = torch.load(os.path.join(cwd, "agent.pth"), weights_only=True)
    adam_steps = saved["critic_optimizer"]["state"][0]["step"]
    with pytest.raises(ValueError, match="Arguments.net_dim is 32, the run.s 16"):
        Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=cwd, if_resume=True, **{**TINY, "net_dim": 32}).init_before_training()
    with pytest.raises(ValueError, match="already has 512 env steps and break_step is 512"):
        train_and_evaluate(Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=cwd, if_resume=True, **TINY))
    resumed = train_and_evaluate(Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=cwd, if_resume=True, learning_rate=1e-4,
                                           **{**TINY, "break_step": first.total_steps + 128}))
    # 64 steps refill the buffer (counted), then two rounds of 32 steps buy 32 gradient steps each
    # and the gradient-step count goes on too, so that a target_update_gap keeps its phase
    assert resumed.total_steps == first.total_steps + 128 and resumed.update_count == first.update_count + 64
    # Adam's step count goes on from the saved one: networks and optimizers were loaded, not rebuilt
    assert resumed.critic_optimizer.state_dict()["state"][0]["step"] == adam_steps + 64
    assert resumed.critic_optimizer.param_groups[0]["lr"] == 1e-4  # this run's setting, not the saved run's
    steps = [int(record["step"]) for record in read_record(cwd)]
    assert steps == [128, 256, 384, 512, resumed.total_steps]


def test_a_damaged_run_folder_is_named_and_refused_before_anything_is_overwritten(tmp_path):
    cwd = str(tmp_path / "run")
    train_and_evaluate(Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=cwd, **TINY))
    more = {**TINY, "break_step": 1024}
    files = {name: open(os.path.join(cwd, name), "rb").read() for name in ("agent.pth", "actor.pth", "config.json", "recorder.csv")}

    def damaged(name, content):
        with open(os.path.join(cwd, name), "wb") as file:
            file.write(content)

    def restore():
        for name, content in files.items():
            damaged(name, content)

    damaged("agent.pth", files["agent.pth"][:1000])  # a copy cut short
    with pytest.raises(ValueError, match="agent.pth cannot be loaded: it is not a checkpoint"):
        train_and_evaluate(Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=cwd, if_resume=True, **more))
    restore()
    for content in (b"not a checkpoint", bytes(len(files["actor.pth"]))):  # another file; one a crash zeroed
        damaged("actor.pth", content)
        with pytest.raises(ValueError, match="actor.pth cannot be loaded: it is not a checkpoint") as info:
            elegantrl.run.load_agent(cwd)
        assert "weights_only" not in str(info.value)  # torch's advice, weights_only=False, would run what the file holds
        with pytest.raises(ValueError, match="cannot resume the run .*actor.pth cannot be loaded"):  # at the start, not the end
            train_and_evaluate(Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=cwd, if_resume=True, **more))
        assert open(os.path.join(cwd, "agent.pth"), "rb").read() == files["agent.pth"]
    restore()
    damaged("config.json", b"{bad json")
    for attempt in (lambda: elegantrl.run.load_agent(cwd),
                    lambda: train_and_evaluate(Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=cwd, if_resume=True, **more))):
        with pytest.raises(ValueError, match="config.json cannot be read"):
            attempt()
    restore()
    os.remove(os.path.join(cwd, "recorder.csv"))  # the best return of actor.pth is lost with it
    with pytest.raises(ValueError, match="recorder.csv, which holds the best return of actor.pth, is missing"):
        train_and_evaluate(Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=cwd, if_resume=True, **more))
    assert open(os.path.join(cwd, "actor.pth"), "rb").read() == files["actor.pth"]
    os.remove(os.path.join(cwd, "actor.pth"))  # the way the message gives: the run goes on without it
    train_and_evaluate(Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=cwd, if_resume=True, **more))
    assert os.path.isfile(os.path.join(cwd, "actor.pth"))


def test_a_resumed_run_whose_actor_file_is_gone_writes_a_new_one(tmp_path):
    cwd = str(tmp_path / "run")
    train_and_evaluate(Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=cwd, **TINY))
    rows = read_record(cwd)
    for row in rows:  # a record no later evaluation can beat: only a fresh best return lets one save its actor
        row["best_return"] = "500.0"
    with open(os.path.join(cwd, "recorder.csv"), "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    os.remove(os.path.join(cwd, "actor.pth"))
    with pytest.raises(FileNotFoundError, match="has no actor.pth: the run stopped before an evaluation wrote one, or it was moved out"):
        elegantrl.run.load_agent(cwd)  # evaluations had finished: the message must not say none had
    agent = train_and_evaluate(Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=cwd, if_resume=True, **{**TINY, "break_step": 640}))
    assert os.path.isfile(os.path.join(cwd, "actor.pth"))
    loaded = elegantrl.run.load_agent(cwd)
    state = torch.zeros(1, 4)
    assert np.array_equal(loaded.act(state), agent.act(state))


def test_warmup_that_fills_the_whole_run_is_warned_of_and_the_meta_device_refused(tmp_path):
    fields = dict(agent=AgentD3QN(), env="CartPole-v1", cwd=str(tmp_path / "run"))
    # 1,000 warm-up steps on 8 envs are 125 rounds of 8, which leave nothing of 1,001
    smoke = Arguments(**{**fields, "cwd": str(tmp_path / "smoke")}, num_envs=8, warmup_steps=1000, break_step=1001, if_print=False)
    with pytest.warns(UserWarning, match="no gradient step will be taken"):
        agent = train_and_evaluate(smoke)
    assert agent.update_count == 0
    with pytest.raises(ValueError, match="'meta' holds shapes but no data"):
        Arguments(**fields, device="meta").init_before_training()
    assert not os.path.exists(fields["cwd"])


def test_the_record_keeps_its_columns_when_a_figure_is_first_logged_later_and_resumes_from_them(tmp_path):
    agent = AgentD3QN()
    agent.init(16, 4, 2)
    evaluator = Evaluator(str(tmp_path), PreprocessEnv("CartPole-v1"), 100, 1, 0, 475.0, if_print=False)
    for step, logs in [(100, {}), (200, {"obj_critic": 1.0}), (300, {"obj_critic": 2.0, "obj_actor": 3.0})]:
        evaluator.evaluate_and_save(agent, step, logs)
    rows = read_record(str(tmp_path))
    assert list(rows[0])[-2:] == ["obj_critic", "obj_actor"]
    assert [(r["obj_critic"], r["obj_actor"]) for r in rows] == [("", ""), ("1.0", ""), ("2.0", "3.0")]
    again = Evaluator(str(tmp_path), PreprocessEnv("CartPole-v1"), 100, 1, 0, 475.0, if_print=False)
    again.resume(300)
    assert again.records == evaluator.records and again.next_eval_step == 400


def test_the_training_clock_stops_while_the_curve_is_drawn(tmp_path, monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(elegantrl.run.time, "perf_counter", lambda: clock[0])
    agent = AgentD3QN()
    agent.init(16, 4, 2)
    evaluator = Evaluator(str(tmp_path), PreprocessEnv("CartPole-v1"), 100, 1, 0, 475.0, if_print=False)

    def slow_curve() -> str:  # a curve that takes 100 s to draw
        clock[0] += 100.0
        evaluator.curve_time = time.monotonic()
        return ""

    monkeypatch.setattr(evaluator, "save_curve", slow_curve)
    for step in (100, 200):
        clock[0] += 1.0  # a second of training before each evaluation
        evaluator.curve_time = -math.inf  # draw at each one
        evaluator.evaluate_and_save(agent, step, {})
    assert clock[0] == 202.0 and [record["seconds"] for record in evaluator.records] == [1.0, 2.0]


def test_divergence_is_reported_before_the_diverged_actor_is_evaluated(tmp_path):
    agent = AgentD3QN()
    agent.init(16, 4, 2)
    with torch.no_grad():
        for param in agent.actor.parameters():
            param.fill_(float("nan"))
    evaluator = Evaluator(str(tmp_path), PreprocessEnv("CartPole-v1"), 128, 2, 0, 475.0, if_print=False)
    with pytest.raises(FloatingPointError, match="training diverged at env step 128: obj_critic is nan.*no actor.pth"):
        evaluator.evaluate_and_save(agent, 128, {"obj_critic": float("nan")})


class NaNObservation(gym.ObservationWrapper):
    def observation(self, observation):
        return np.full_like(observation, np.nan)


def test_a_non_finite_state_from_the_evaluation_env_stops_the_run(tmp_path):
    agent = AgentD3QN()
    agent.init(16, 4, 2)
    eval_env = PreprocessEnv(NaNObservation(gym.make("CartPole-v1")))
    evaluator = Evaluator(str(tmp_path), eval_env, 128, 2, 0, 475.0, if_print=False)
    with pytest.raises(FloatingPointError, match="non-finite state: .*The run folder holds no actor.pth"):
        evaluator.evaluate_and_save(agent, 128, {})


class NaNAtReset(gym.Wrapper):
    def reset(self, **kwargs):
        state, info = self.env.reset(**kwargs)
        return np.full_like(state, np.nan), info


def test_a_non_finite_state_from_the_evaluation_envs_reset_stops_the_run(tmp_path):
    """A discrete policy acts on a NaN state without a word (its argmax is some action): the state is checked, not the action."""
    agent = AgentD3QN()
    agent.init(16, 4, 2)
    evaluator = Evaluator(str(tmp_path), PreprocessEnv(NaNAtReset(gym.make("CartPole-v1"))), 128, 2, 0, 475.0, if_print=False)
    with pytest.raises(FloatingPointError, match=r"^evaluation: env 'CartPole-v1' returned a non-finite state: \[nan.*"
                                                 r"outputs\. Training stopped\. The run folder holds no actor\.pth"):
        evaluator.evaluate_and_save(agent, 128, {})


def test_an_actor_that_diverged_in_its_last_update_is_reported_by_the_evaluation_with_what_was_kept(tmp_path):
    agent = AgentSAC()
    agent.init(16, 3, 1)
    evaluator = Evaluator(str(tmp_path), PreprocessEnv("Pendulum-v1"), 128, 2, 0, -200.0, if_print=False)
    evaluator.evaluate_and_save(agent, 128, {})  # a finite actor: saved as the best so far
    with torch.no_grad():
        for param in agent.actor.parameters():
            param.fill_(float("nan"))
    with pytest.raises(FloatingPointError, match=r"^evaluation: env 'Pendulum-v1' was given a non-finite action .* diverged .*"
                                                 r"reward_scale\. Training stopped\. The best actor so far is kept in .*actor\.pth\.$"):
        evaluator.evaluate_and_save(agent, 256, {"obj_critic": 1.0})  # finite logs: the weights went in the last step


def test_numpy_scalars_are_taken_as_their_python_values(tmp_path):
    args = Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=str(tmp_path / "run"),
                     net_dim=np.int64(32), learning_rate=np.float32(1e-3), if_print=np.bool_(False))
    args.init_before_training()
    assert type(args.net_dim) is int and type(args.learning_rate) is float and args.if_print is False


def test_one_seed_gives_one_record_with_a_vector_of_envs(tmp_path):
    # the warm-up's random actions come from the vector env's action space, which must be seeded too
    def record(folder):
        args = Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=str(tmp_path / folder), random_seed=3, **{**TINY, "num_envs": 2})
        train_and_evaluate(args)
        return [{k: v for k, v in row.items() if k != "seconds"} for row in read_record(args.cwd)]

    assert record("a") == record("b")


def test_target_hold_trains_on_past_the_first_hit_and_evaluates_where_it_stops(tmp_path):
    args = Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=str(tmp_path / "run"), target_return=60.0, target_hold=2.0,
                     break_step=20_000, eval_gap=500, eval_times1=2, eval_times2=0, if_print=False)
    train_and_evaluate(args)
    rows = read_record(args.cwd)
    hit = next(int(row["step"]) for row in rows if float(row["best_return"]) >= 60.0)
    last = int(rows[-1]["step"])
    assert 2 * hit <= last <= 2 * hit + args.target_step * args.num_envs  # stopped in the first round past twice the hit, not at the budget
    assert sum(int(row["step"]) > hit for row in rows) >= 2  # evaluations after the hit, the last one where it stopped



def test_a_resumed_run_counts_its_target_hold_from_its_own_first_hit(tmp_path):
    run = dict(env="CartPole-v1", cwd=str(tmp_path / "run"), target_return=60.0, break_step=20_000, eval_gap=500, eval_times1=2,
               eval_times2=0, if_print=False)
    train_and_evaluate(Arguments(agent=AgentD3QN(), **run))  # stops at its first hit
    hit = int(read_record(run["cwd"])[-1]["step"])
    args = Arguments(agent=AgentD3QN(), if_resume=True, target_hold=3.0, **run)
    train_and_evaluate(args)
    assert 3 * hit <= int(read_record(args.cwd)[-1]["step"]) <= 3 * hit + args.target_step * args.num_envs


def test_lr_decay_steps_decays_every_learning_rate_linearly_and_a_resumed_run_goes_on_along_it(tmp_path):
    cwd, decay = str(tmp_path / "run"), 1024
    first = train_and_evaluate(Arguments(agent=AgentSAC(), env="Pendulum-v1", cwd=cwd, learning_rate=1e-3, lr_decay_steps=decay,
                                         **{**TINY, "break_step": 256}))
    optimizers = (first.critic_optimizer, first.actor_optimizer, first.alpha_optimizer)  # SAC's temperature too, as in SB3
    # the last update came after the last round's steps: the rate is what remains of the decay there
    assert [o.param_groups[0]["lr"] for o in optimizers] == [pytest.approx(1e-3 * (1 - 256 / decay))] * 3
    resumed = train_and_evaluate(Arguments(agent=AgentSAC(), env="Pendulum-v1", cwd=cwd, if_resume=True, learning_rate=1e-3,
                                           lr_decay_steps=decay, **{**TINY, "break_step": 512}))
    assert resumed.critic_optimizer.param_groups[0]["lr"] == pytest.approx(1e-3 * (1 - 512 / decay))
    constant = train_and_evaluate(Arguments(agent=AgentSAC(), env="Pendulum-v1", cwd=str(tmp_path / "constant"), learning_rate=1e-3,
                                            **{**TINY, "break_step": 256}))
    assert constant.critic_optimizer.param_groups[0]["lr"] == 1e-3  # the default, 0, keeps it


def test_scale_learning_rates_scales_the_rates_of_the_first_call_not_the_last():
    agent = AgentSAC()
    agent.init(16, 3, 1, learning_rate=1e-3)
    agent.scale_learning_rates(0.5)
    agent.scale_learning_rates(0.25)
    assert agent.actor_optimizer.param_groups[0]["lr"] == pytest.approx(2.5e-4)
    with pytest.raises(ValueError, match="finite number of at least 0"):
        agent.scale_learning_rates(float("nan"))


def test_cli_messages_name_flags_and_agents_as_the_command_line_takes_them():
    assert elegantrl.run.in_flags("resume it with Arguments(cwd=..., if_resume=True)") == "resume it with --cwd ... --resume"
    assert elegantrl.run.in_flags("use one of: AgentSAC, AgentD3QN") == "use one of: SAC, D3QN"


class AgentDQNOfMine(AgentDQN):
    """A user's own agent: elegantrl's DQN under another name, as the README invites."""


def test_load_agent_rebuilds_a_users_own_agent_class_when_given_it(tmp_path):
    cwd = str(tmp_path / "run")
    trained = train_and_evaluate(Arguments(agent=AgentDQNOfMine(), env="CartPole-v1", cwd=cwd, **TINY))
    with pytest.raises(ValueError, match="trained AgentDQNOfMine, which is not one of elegantrl's agents.*agent_class=AgentDQNOfMine"):
        elegantrl.run.load_agent(cwd)
    with pytest.raises(ValueError, match="agent_class must be that class"):
        elegantrl.run.load_agent(cwd, agent_class=AgentDQN)
    loaded = elegantrl.run.load_agent(cwd, agent_class=AgentDQNOfMine)
    states = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
    assert type(loaded) is AgentDQNOfMine and np.array_equal(loaded.act(states), trained.act(states))


def test_an_agent_before_init_says_to_call_init_or_load_agent(tmp_path):
    agent = AgentD3QN()
    for use in (lambda: agent.act(np.zeros(4, np.float32)), lambda: agent.save_or_load_agent(str(tmp_path), if_save=False)):
        with pytest.raises(RuntimeError, match=r"AgentD3QN.init\(net_dim, state_dim, action_dim\).*load_agent\(cwd\)"):
            use()


def test_the_run_seed_reaches_numpy_and_pythons_global_generators():
    # an old-Gym style env that draws its start from np.random or random is reproducible too
    import random

    from elegantrl.run import build_agent

    draws = []
    for _ in range(2):
        args = Arguments(agent=AgentDQN(), env="CartPole-v1", random_seed=7, **TINY)
        args.check()
        build_agent(args)
        draws.append((np.random.random(), random.random()))
    assert draws[0] == draws[1]


def observations_times_ten() -> gym.Env:
    from gymnasium.wrappers import TransformObservation

    return TransformObservation(gym.make("CartPole-v1"), lambda state: state * 10, gym.spaces.Box(-np.inf, np.inf, (4,), np.float32))


def test_a_run_on_a_wrapped_env_is_neither_rendered_nor_resumed_without_its_wrappers(tmp_path):
    """Made again from its id, the env would lack the user's wrapper: a video of the policy on other observations."""
    cwd = str(tmp_path / "run")
    train_and_evaluate(Arguments(agent=AgentD3QN(), env=observations_times_ten(), cwd=cwd, **TINY))
    assert elegantrl.run.read_config(cwd)["env_wrappers"] == ["TransformObservation"]
    with pytest.raises(ValueError, match=r"trained on 'CartPole-v1' wrapped in TransformObservation, which cannot be made again from its "
                                         r"id; pass the env as it trained: .*"
                                         r"env=TransformObservation\(gym.make\('CartPole-v1', render_mode='rgb_array'\), \.\.\.\)\)"):
        elegantrl.run.get_video_to_watch_env_render(cwd)
    from gymnasium.wrappers import TransformObservation

    as_advised = TransformObservation(gym.make("CartPole-v1", render_mode="rgb_array"), lambda state: state * 10,
                                      gym.spaces.Box(-np.inf, np.inf, (4,), np.float32))
    assert os.path.getsize(elegantrl.run.get_video_to_watch_env_render(cwd, env=as_advised, episodes=1)) > 1000
    with pytest.raises(ValueError, match=r"another task: the wrappers on the env is \[\], the run's \['TransformObservation'\]"):
        train_and_evaluate(Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=cwd, if_resume=True, **{**TINY, "break_step": 640}))
    agent = train_and_evaluate(Arguments(agent=AgentD3QN(), env=observations_times_ten(), cwd=cwd, if_resume=True,
                                         **{**TINY, "break_step": 640}))
    assert agent.total_steps == 640
    from gymnasium.wrappers import RecordEpisodeStatistics

    statistics = PreprocessEnv(RecordEpisodeStatistics(observations_times_ten()))
    assert elegantrl.run.added_wrappers(statistics) == ["TransformObservation"]  # a recorder changes nothing the agent sees
