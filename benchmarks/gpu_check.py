"""A GPU machine's check, under 5 minutes: SAC on Pendulum-v1 and DiscretePPO on a vector of CartPole-v1
envs, trained on the GPU (and on 2 ranks under torchrun where 2 GPUs exist), printing learner updates/s,
env steps/s and the time to the target. Where no CUDA GPU is present it says so and exits 0.

    python benchmarks/gpu_check.py                 # on a GPU machine
    python benchmarks/gpu_check.py --device cpu    # the same check on the CPU, to try the script
    python benchmarks/gpu_check.py --out benchmarks/results   # also writes gpu-check.md and, on a GPU,
                                                              # sac-throughput-cuda.md (the SAC update on the GPU
                                                              # against plain PyTorch, the fastest plain loop and SB3)

Figures: updates/s times `agent.update_net` alone on a prefilled buffer (a gradient step is a critic
step for SAC, a minibatch step for PPO); env steps/s and seconds to target come from the run's own
record (training time, evaluation excluded).
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository, for `import benchmarks`
from benchmarks.cli import positive_int  # noqa: E402
from elegantrl.agent import AgentDiscretePPO, AgentSAC
from elegantrl.env import build_vector_env
from elegantrl.run import Arguments, build_agent, train_and_evaluate

CHECKS = {  # name: (agent, env id, target, break_step, extra Arguments fields)
    "SAC Pendulum-v1": (AgentSAC, "Pendulum-v1", -200.0, 30_000, {}),
    "DiscretePPO CartPole-v1 x16 envs": (AgentDiscretePPO, "CartPole-v1", 475.0, 300_000, {"num_envs": 16, "target_step": 256}),
}


def updates_per_second(args: Arguments, steps: int = 2048) -> float:
    """Gradient steps per second of ``agent.update_net`` on a buffer filled by exploring `steps` env steps."""
    args.check()
    build_agent(args)
    agent = args.agent
    env = build_vector_env(args.env, args.num_envs, False) if args.num_envs > 1 else args.env
    agent.reset_exploration(env, 0)
    buffer = agent.make_buffer(args.max_memo)
    buffer.extend(agent.explore_env(env, max(1, steps // args.num_envs)))
    new_steps = max(1, steps // args.num_envs) * args.num_envs
    agent.update_net(buffer, new_steps)  # warm-up: CUDA kernels, allocator
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    start, counted = time.perf_counter(), 0
    while time.perf_counter() - start < 5.0:
        before = getattr(agent, "update_count", 0)
        agent.update_net(buffer, new_steps)
        if hasattr(agent, "update_count"):
            counted += agent.update_count - before
        else:  # on-policy: epochs × minibatches of the rollout
            counted += max(1, round(args.repeat_times)) * -(-new_steps // args.batch_size)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    return counted / (time.perf_counter() - start)


def record_figures(cwd: str, target: float) -> tuple[float, float | None, int | None]:
    """(env steps/s over the run, training seconds to the target, env steps to the target) from recorder.csv."""
    with open(os.path.join(cwd, "recorder.csv")) as file:
        rows = list(csv.DictReader(file))
    last = rows[-1]
    hit = next((row for row in rows if float(row["return_mean"]) >= target), None)
    return int(last["step"]) / max(float(last["seconds"]), 1e-9), float(hit["seconds"]) if hit else None, int(hit["step"]) if hit else None


def arguments(name: str, device: str, cwd: str) -> Arguments:
    agent_class, env_id, target, budget, fields = CHECKS[name]
    return Arguments(agent=agent_class(), env=env_id, device=device, cwd=cwd, random_seed=0, target_return=target,
                     break_step=budget, if_print=False, **fields)


def check_one(name: str, device: str, work_dir: str) -> dict:
    rate = updates_per_second(arguments(name, device, os.path.join(work_dir, "probe")))
    cwd = os.path.join(work_dir, name.split()[0])
    train_and_evaluate(arguments(name, device, cwd))
    steps_per_s, seconds, steps = record_figures(cwd, CHECKS[name][2])
    return {"check": name, "learners": 1, "updates_per_s": rate, "env_steps_per_s": steps_per_s, "s_to_target": seconds, "steps_to_target": steps}


def check_two_ranks(name: str, work_dir: str) -> dict:
    """The same run on 2 GPUs, one rank each, under torchrun (each rank's batch halved: the same averaged batch)."""
    agent_class, env_id, target, budget, fields = CHECKS[name]
    cwd = os.path.join(work_dir, name.split()[0] + "-2")
    batch = Arguments(agent=agent_class(), env=env_id)
    batch.check()
    flags = ["--agent", agent_class.__name__.removeprefix("Agent"), "--env", env_id, "--cwd", cwd, "--seed", "0",
             "--target-return", str(target), "--break-step", str(budget), "--no-print", "--batch-size", str(batch.batch_size // 2),
             *[f"--{key.replace('_', '-')}={value}" for key, value in fields.items()]]
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "elegantrl", *flags],
                   check=True, timeout=300)
    steps_per_s, seconds, steps = record_figures(cwd, target)
    return {"check": name, "learners": 2, "updates_per_s": None, "env_steps_per_s": steps_per_s, "s_to_target": seconds, "steps_to_target": steps}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda:0", help="cuda:0 (default), or cpu to try the script on a CPU")
    parser.add_argument("--out", help="a folder to write gpu-check.md/.csv into, and on a GPU sac-throughput-cuda.md/.csv")
    parser.add_argument("--repeats", type=positive_int, default=10, help="timings per library in sac-throughput-cuda (default: 10)")
    options = parser.parse_args()
    if options.device.startswith("cuda") and not torch.cuda.is_available():
        print("gpu_check: no CUDA GPU here (torch.cuda.is_available() is False), so there is nothing to check; "
              "run it on a GPU machine, or with --device cpu to try it on the CPU.")
        return 0
    if options.device.startswith("cuda"):  # the current device: what torch.cuda.synchronize() waits for in the timings
        torch.cuda.set_device(options.device)
    where = torch.cuda.get_device_name(options.device) if options.device.startswith("cuda") else platform.processor() or "CPU"
    print(f"gpu_check on {where} ({torch.cuda.device_count()} CUDA devices), torch {torch.__version__}, {os.cpu_count()} CPUs")
    results = []
    with tempfile.TemporaryDirectory() as work_dir:
        for name in CHECKS:
            results.append(check_one(name, options.device, work_dir))
            print(results[-1], flush=True)
        if options.device.startswith("cuda") and torch.cuda.device_count() >= 2:
            for name in CHECKS:
                results.append(check_two_ranks(name, work_dir))
                print(results[-1], flush=True)
    lines = ["| check | learners | updates/s | env steps/s | s to target | env steps to target |", "|---|---|---|---|---|---|"]
    for r in results:
        rate = f"{r['updates_per_s']:.0f}" if r["updates_per_s"] else "-"
        hit = f"{r['s_to_target']:.1f} | {r['steps_to_target']:,d}" if r["s_to_target"] is not None else "not reached | -"
        lines.append(f"| {r['check']} | {r['learners']} | {rate} | {r['env_steps_per_s']:.0f} | {hit} |")
    table = "\n".join(lines) + "\n"
    if not options.out:
        print("\n" + table)
        return 0
    from benchmarks.throughput import run_sac_throughput, write_throughput_report

    command = "python benchmarks/gpu_check.py " + " ".join(sys.argv[1:])
    setup = (f"- Device: {where}, torch {torch.__version__}, {os.cpu_count()} CPUs; the learner on {options.device}, one torch "
             "thread, the envs on the CPU; seed 0 (a check, not a benchmark over seeds)\n"
             + "".join(f"- {name}: {agent.__name__}, target {target}, budget {budget:,d} env steps, the built-in settings"
                       + "".join(f", {key}={value}" for key, value in fields.items()) + "\n"
                       for name, (agent, _, target, budget, fields) in CHECKS.items())
             + "- updates/s: `agent.update_net` alone on a buffer filled by 2,048 env steps (SAC: critic steps; PPO: minibatch "
             "steps); env steps/s and s to target: the run's own record (training time, evaluation excluded)\n\n")
    write_throughput_report("gpu-check", f"SAC and DiscretePPO trained on {options.device}", results, setup, table, options.out, command)
    if options.device.startswith("cuda"):
        run_sac_throughput(options.out, command, options.repeats, net_dims=(256,), device=options.device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
