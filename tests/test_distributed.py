"""Several learners on torch.distributed: two Gloo ranks on the CPU, started by the test, by
train_and_evaluate_mp (learner_gpus) and by torchrun.

Every test starts processes, so each has a timeout on every join, and the autouse fixture of
test_parallel fails any test that leaves a child process behind.
"""

import copy
import csv
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time

import gymnasium
import pytest
import torch
import torch.distributed as dist
from test_parallel import alive, child_pids, no_process_left_behind, own_fork_server  # noqa: F401  (an autouse fixture)

from elegantrl.agent import AgentD3QN, AgentDiscretePPO, AgentSAC
from elegantrl.distributed import LearnerGroup
from elegantrl.env import PreprocessEnv
from elegantrl.replay import Transitions
from elegantrl.run import Arguments, WorkerError, train_and_evaluate, train_and_evaluate_mp


@pytest.fixture(autouse=True)
def no_process_group_left_behind():
    yield
    assert not dist.is_initialized(), "a run left this process in a process group: the next run would join it"


def run_ranks(target, folder, world_size: int = 2, timeout: float = 180.0) -> None:
    """Runs ``target(rank, world_size, init_method, folder)`` in `world_size` spawned processes; all must exit 0."""
    context = multiprocessing.get_context("spawn")
    init_method = f"file://{folder}/rendezvous"
    processes = [context.Process(target=target, args=(rank, world_size, init_method, str(folder))) for rank in range(world_size)]
    for process in processes:
        process.start()
    try:
        deadline = time.monotonic() + timeout
        for process in processes:
            process.join(max(0.0, deadline - time.monotonic()))
        assert [process.exitcode for process in processes] == [0] * world_size, "a rank failed or hung; see its output"
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
            process.join()


def join(rank: int, world_size: int, init_method: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world_size)


def random_batch(seed: int, size: int = 32) -> Transitions:
    generator = torch.Generator().manual_seed(seed)
    return Transitions(torch.randn(size, 4, generator=generator), torch.randint(2, (size, 1), generator=generator),
                       torch.randn(size, generator=generator), torch.rand(size, generator=generator) < 0.1,
                       torch.rand(size, generator=generator) < 0.1, torch.randn(size, 4, generator=generator))


def gradient_rank(rank: int, world_size: int, init_method: str, folder: str) -> None:
    """One D3QN critic step on this rank's batch with the gradients averaged over the ranks, and the same step
    without ranks on all the ranks' batches concatenated."""
    join(rank, world_size, init_method)
    try:
        torch.manual_seed(0)
        agent = AgentD3QN()
        agent.init(net_dim=16, state_dim=4, action_dim=2, batch_size=32)
        alone, own = copy.deepcopy(agent), copy.deepcopy(agent)
        agent.learner_group = LearnerGroup("cpu")
        batches = [random_batch(seed) for seed in range(world_size)]
        agent.optimizer_update(agent.critic_optimizer, agent.get_obj_critic(batches[rank])[0])
        whole = Transitions(*(torch.cat(parts) for parts in zip(*batches)))
        alone.optimizer_update(alone.critic_optimizer, alone.get_obj_critic(whole)[0])
        own.optimizer_update(own.critic_optimizer, own.get_obj_critic(batches[rank])[0])
        torch.save({"ranks": [p.grad for p in agent.critic.parameters()], "alone": [p.grad for p in alone.critic.parameters()],
                    "own": [p.grad for p in own.critic.parameters()],
                    "rank_weights": list(agent.critic.parameters()), "alone_weights": list(alone.critic.parameters())},
                   f"{folder}/gradient{rank}.pt")
        dist.barrier()  # both done before either tears down: gloo may abort a rank whose peer left mid-teardown
    finally:
        dist.destroy_process_group()


@pytest.mark.timeout(240)
def test_the_averaged_gradient_is_the_gradient_of_the_ranks_batches_concatenated(tmp_path):
    run_ranks(gradient_rank, tmp_path)
    for rank in range(2):
        saved = torch.load(tmp_path / f"gradient{rank}.pt", weights_only=True)
        for averaged, alone in zip(saved["ranks"], saved["alone"]):
            torch.testing.assert_close(averaged, alone, rtol=1e-5, atol=1e-6)
        for after, alone in zip(saved["rank_weights"], saved["alone_weights"]):
            torch.testing.assert_close(after, alone, rtol=1e-5, atol=1e-6)  # so the step taken is that one too
        assert not all(torch.allclose(a, b) for a, b in zip(saved["ranks"], saved["own"]))  # the rank's own gradient was replaced


def target_kl_rank(rank: int, world_size: int, init_method: str, folder: str) -> None:
    """A PPO update with target_kl on this rank's own rollout: the ranks' KLs differ, their stop must not."""
    join(rank, world_size, init_method)
    try:
        env = PreprocessEnv("CartPole-v1")
        torch.manual_seed(0)
        agent = AgentDiscretePPO(target_kl=0.003)
        agent.init(64, env.state_dim, env.action_dim, batch_size=64, repeat_times=8.0, learning_rate=3e-4)
        agent.learner_group = LearnerGroup("cpu")
        agent.reset_exploration(env, seed=rank)
        rollout = agent.explore_env(env, 512)
        if rank == 1:  # states far from rank 0's: the same step moves this rank's policy much further
            rollout = rollout._replace(state=rollout.state * 20.0, next_state=rollout.next_state * 20.0)
        buffer = agent.make_buffer(0)
        buffer.extend(rollout)
        agent.update_net(buffer, 512)
        torch.save(agent.actor_optimizer.state_dict()["state"][0]["step"], f"{folder}/steps{rank}.pt")
        dist.barrier()  # both done before either tears down: gloo may abort a rank whose peer left mid-teardown
    finally:
        dist.destroy_process_group()


@pytest.mark.timeout(240)
def test_target_kl_stops_every_rank_at_the_same_step(tmp_path):
    run_ranks(target_kl_rank, tmp_path, timeout=60.0)  # a rank that stopped alone would hang the other: the timeout fails it
    steps = [torch.load(tmp_path / f"steps{rank}.pt", weights_only=True).item() for rank in range(2)]
    assert steps[0] == steps[1] >= 1


def training_rank(rank: int, world_size: int, init_method: str, folder: str) -> None:
    """Trains SAC on Pendulum-v1 as one of the ranks; saves every tensor of the agent and what it explored."""
    join(rank, world_size, init_method)
    try:
        args = Arguments(agent=AgentSAC(), env="Pendulum-v1", cwd=f"{folder}/run", random_seed=3, net_dim=32, batch_size=64, repeat_times=16,
                         warmup_steps=256, break_step=1536, eval_gap=512, eval_times1=1, eval_times2=0, if_state_norm=True,
                         if_print=False)
        agent = train_and_evaluate(args)
        # rank 0 returns its best actor, so its final state is the checkpoint's
        state = torch.load(f"{folder}/run/agent.pth", weights_only=True) if rank == 0 else agent.state_dict()
        torch.save({"agent": state, "last_state": torch.as_tensor(agent.last_state)}, f"{folder}/agent{rank}.pt")
        dist.barrier()  # both done before either tears down: gloo may abort a rank whose peer left mid-teardown
    finally:
        dist.destroy_process_group()


def flatten(state, prefix: str = "") -> dict:
    """Every tensor of a nested state dict, by its path."""
    if isinstance(state, torch.Tensor):
        return {prefix: state}
    if isinstance(state, dict):
        return {path: t for key, value in state.items() for path, t in flatten(value, f"{prefix}/{key}").items()}
    if isinstance(state, (list, tuple)):
        return {path: t for i, value in enumerate(state) for path, t in flatten(value, f"{prefix}/{i}").items()}
    return {prefix: torch.tensor(float(state))} if isinstance(state, (int, float)) else {}


@pytest.mark.timeout(240)
def test_two_ranks_hold_identical_networks_targets_and_optimizers_after_training(tmp_path):
    run_ranks(training_rank, tmp_path)
    saved = [torch.load(tmp_path / f"agent{rank}.pt", weights_only=True) for rank in range(2)]
    tensors = [flatten(entry["agent"]) for entry in saved]
    assert tensors[0].keys() == tensors[1].keys()
    for name in ("critic", "critic_target", "actor", "critic_optimizer", "actor_optimizer", "alpha_optimizer", "log_alpha", "state_mean"):
        assert any(path.startswith(f"/{name}") for path in tensors[0]), name  # each part is in the comparison
    for path, tensor in tensors[0].items():
        assert torch.equal(tensor, tensors[1][path]), f"{path} differs between the ranks"
    assert tensors[0]["/total_steps"] == 1536  # the budget counts both ranks' env steps, and is not exceeded
    assert float(tensors[0]["/state_count"]) == 1536  # the state statistics merged both ranks' states
    assert tensors[0]["/critic_optimizer/state/0/step"] > 0
    assert not torch.equal(saved[0]["last_state"], saved[1]["last_state"])  # each rank explored its own episodes
    assert set(os.listdir(tmp_path)) - {"rendezvous"} == {"agent0.pt", "agent1.pt", "run"}  # rank 1 wrote nothing of its own
    with open(tmp_path / "run" / "recorder.csv") as file:
        assert [int(row["step"]) for row in csv.DictReader(file)] == [512, 1024, 1536]  # rank 0 evaluated


def read_record(cwd) -> list[dict]:
    with open(os.path.join(cwd, "recorder.csv")) as file:
        return list(csv.DictReader(file))


def torchrun(*flags: str) -> list[str]:
    """The command that runs ``python -m elegantrl`` on 2 Gloo ranks of this machine's CPU, as a user would."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "elegantrl", "--device", "cpu", *flags]


def cli_env() -> dict:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}


@pytest.mark.timeout(240)
def test_an_on_policy_agent_learns_on_two_ranks_under_torchrun(tmp_path):
    """Each rank with its own worker process, and no --cwd: rank 0 chooses the run folder, the other writes nothing."""
    result = subprocess.run(torchrun("--agent", "DiscretePPO", "--env", "CartPole-v1", "--rollout-num", "1", "--break-step", "40000",
                                     "--eval-gap", "4096", "--eval-times1", "5", "--eval-times2", "5", "--target-return", "475"),
                            capture_output=True, text=True, cwd=tmp_path, timeout=200, env=cli_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 learners (gloo)" in result.stdout and result.stdout.count("elegantrl: AgentDiscretePPO") == 1  # rank 0 alone prints
    assert os.listdir(tmp_path) == ["runs"] and os.listdir(tmp_path / "runs") == ["CartPole-v1_DiscretePPO_0"]
    rows = read_record(tmp_path / "runs" / "CartPole-v1_DiscretePPO_0")
    assert max(float(row["return_mean"]) for row in rows) >= 475.0  # a random policy averages about 22


@pytest.mark.timeout(240)
def test_an_off_policy_agent_learns_on_two_cpu_learners_that_train_and_evaluate_mp_starts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no cwd: rank 0 chooses runs/..., which the other rank never needs
    args = Arguments(agent=AgentD3QN(), env="CartPole-v1", target_return=195.0, break_step=30_000,
                     random_seed=0, if_print=False, rollout_num=1, learner_gpus=(-1, -1))
    agent = train_and_evaluate_mp(args)
    assert os.listdir(tmp_path) == ["runs"] and args.cwd == os.path.join("runs", "CartPole-v1_D3QN_0")
    assert max(float(row["return_mean"]) for row in read_record(args.cwd)) >= 195.0  # a random policy averages about 22
    assert agent.total_steps <= 30_000 and agent.learner_group is None  # the group is gone: the agent learns alone


def rank_one(pid: int) -> int:
    """Rank 1 among the learner processes under `pid`: under torchrun, its child with LOCAL_RANK=1; else the process
    with children (the workers of its own fork server) whose parent is `pid`'s fork server. Waits up to 60 s for it."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        below = child_pids(pid, own_fork_server())
        for child in below:
            try:
                with open(f"/proc/{child}/stat") as file:
                    parent = int(file.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{child}/environ", "rb") as file:
                    if (parent == pid and b"LOCAL_RANK=1\0" in file.read()) or (parent not in below | {pid} and child_pids(child)):
                        return child
            except OSError:
                continue
        time.sleep(0.2)
    raise AssertionError("no rank 1 process found")


@pytest.mark.timeout(240)
def test_killing_a_learner_rank_ends_the_run_with_an_error_naming_it(tmp_path):
    args = Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=str(tmp_path / "run"), break_step=10**7, if_allow_break=False,
                     random_seed=0, if_print=False, rollout_num=1, learner_gpus=(-1, -1), eval_gap=500)
    killed = []

    def kill_rank_one():
        deadline = time.monotonic() + 120
        while not os.path.isfile(tmp_path / "run" / "recorder.csv") and time.monotonic() < deadline:
            time.sleep(0.1)
        os.kill(rank_one(os.getpid()), signal.SIGKILL)
        killed.append(time.monotonic())

    thread = threading.Thread(target=kill_rank_one, daemon=True)
    thread.start()
    with pytest.raises(WorkerError, match=r"learner rank 1 died \(signal SIGKILL\); training stopped"):
        train_and_evaluate_mp(args)
    assert killed and time.monotonic() - killed[0] < 60
    assert os.path.isfile(tmp_path / "run" / "agent.pth")  # rank 0 kept the last checkpoint


def cartpole_without_a_licence_on_rank_one():
    """CartPole, except in learner rank 1, where making it fails as a simulator without its licence would."""
    if dist.is_initialized() and dist.get_rank() == 1:
        raise RuntimeError("no simulator licence on this node")
    return gymnasium.make("CartPole-v1")


@pytest.mark.timeout(120)
def test_a_learner_rank_that_raises_ends_the_run_with_its_traceback(tmp_path):
    args = Arguments(agent=AgentD3QN(), env=cartpole_without_a_licence_on_rank_one, cwd=str(tmp_path / "run"), random_seed=0,
                     if_print=False, rollout_num=1, learner_gpus=(-1, -1))
    with pytest.raises(WorkerError, match="learner rank 1 failed") as failure:
        train_and_evaluate_mp(args)
    assert "no simulator licence on this node" in str(failure.value)  # its traceback
    assert not os.path.exists(tmp_path / "run")  # a failed start leaves nothing behind


@pytest.mark.timeout(240)
def test_killing_a_rank_under_torchrun_ends_every_rank(tmp_path):
    process = subprocess.Popen(torchrun("--agent", "D3QN", "--env", "CartPole-v1", "--cwd", "run", "--break-step", "10000000",
                                        "--no-allow-break", "--eval-gap", "500"),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path, env=cli_env())
    try:
        deadline = time.monotonic() + 120
        while not os.path.isfile(tmp_path / "run" / "recorder.csv"):
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()[0]
            time.sleep(0.1)
        ranks = child_pids(process.pid)
        os.kill(rank_one(process.pid), signal.SIGKILL)
        output, _ = process.communicate(timeout=60)
    finally:
        process.kill()
        process.wait()
    assert process.returncode != 0
    assert "rank      : 1" in output or "rank: 1" in output, output  # torchrun's report names the rank
    assert not any(alive(pid) for pid in ranks)  # every rank, and every process below one


def test_gpu_check_says_where_there_is_no_gpu_and_exits_0():
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks", "gpu_check.py")
    result = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120,
                            env={**cli_env(), "CUDA_VISIBLE_DEVICES": ""})  # hides any GPU: the check of a GPU is a benchmark
    assert result.returncode == 0, result.stderr
    assert "no CUDA GPU here" in result.stdout


def test_a_torchrun_rank_without_a_gpu_of_its_own_is_told_how_to_fix_it():
    from elegantrl.distributed import rank_gpu

    gpus = torch.cuda.device_count()
    fewer = f"--nproc-per-node {gpus} or fewer, or " if gpus else ""
    with pytest.raises(ValueError, match=f"local rank {gpus} takes cuda:{gpus}.*: {fewer}--device cpu"):
        rank_gpu(gpus)
