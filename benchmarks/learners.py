"""What several learners cost and buy on a CPU: 2 Gloo ranks of torch.distributed against 1 learner.

Two rows, each with its report in ``benchmarks/results/<row>.md`` and ``.csv``:

- ``learners-update-throughput``: SAC gradient steps per second of each of 2 Gloo ranks (every
  optimizer step all-reduces its gradients: `LearnerGroup.average_gradients`) against one learner
  alone, same width and batch per rank, from a replay buffer prefilled with random transitions.
  The ratio is the price of the communication on this machine's CPUs.
- ``learners-sac-pendulum``: SAC on Pendulum-v1 to -200, ``torchrun --nproc-per-node 2 -m elegantrl``
  (each rank batch 128: an averaged gradient step of 256 transitions) against ``python -m elegantrl``
  (batch 256), so both take the same gradient steps per env step on batches of the same size; the
  same seeds, evaluation and budget (env steps of all ranks). Jobs one at a time.

    python benchmarks/learners.py --rows learners-update-throughput learners-sac-pendulum --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import shlex
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository, for `import benchmarks`
from benchmarks.cli import check_distinct_seeds, positive_int, random_seed, run_in_own_group  # noqa: E402
from benchmarks.report import machine, median  # noqa: E402
from benchmarks.rows import HERE  # noqa: E402
from elegantrl.agent import AgentSAC
from elegantrl.distributed import LearnerGroup
from elegantrl.replay import ReplayBuffer, Transitions

WIDTH, BATCH, STATE_DIM, ACTION_DIM = 256, 256, 3, 1


def prefilled_agent(seed: int) -> tuple[AgentSAC, ReplayBuffer]:
    """AgentSAC at width 256, batch 256, one gradient step per env step, and a buffer of 10,000 random transitions."""
    torch.manual_seed(seed)
    agent = AgentSAC()
    agent.init(net_dim=WIDTH, state_dim=STATE_DIM, action_dim=ACTION_DIM, batch_size=BATCH, repeat_times=BATCH)
    buffer = ReplayBuffer(10_000, STATE_DIM, ACTION_DIM, False)
    n = 10_000
    buffer.extend(Transitions(torch.randn(n, STATE_DIM), torch.rand(n, ACTION_DIM) * 2 - 1, torch.randn(n),
                              torch.zeros(n, dtype=torch.bool), torch.zeros(n, dtype=torch.bool), torch.randn(n, STATE_DIM)))
    return agent, buffer


def time_updates(agent: AgentSAC, buffer: ReplayBuffer, updates: int, repeats: int) -> list[float]:
    """Updates per second of `repeats` timings of `updates` gradient steps each, after a warm-up."""
    agent.update_net(buffer, 32)
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        agent.update_net(buffer, updates)  # repeat_times == batch_size: one gradient step per new transition
        rates.append(updates / (time.perf_counter() - start))
    return rates


def rank_probe(rank: int, world_size: int, init_method: str, updates: int, repeats: int, out: str) -> None:
    os.sched_setaffinity(0, {rank % os.cpu_count()})  # one core per rank
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world_size)
    agent, buffer = prefilled_agent(rank)
    agent.learner_group = LearnerGroup("cpu")
    rates = time_updates(agent, buffer, updates, repeats)
    # the communication alone: the three all-reduces of one SAC update (critic, actor, alpha), as many times
    sizes = [sum(p.numel() for p in part.parameters()) for part in (agent.critic, agent.actor)] + [1]
    flats = [torch.randn(size) for size in sizes]
    start = time.perf_counter()
    for _ in range(updates):
        for flat in flats:
            dist.all_reduce(flat)
    torch.save({"rates": rates, "allreduce_ms": 1e3 * (time.perf_counter() - start) / updates}, f"{out}/rank{rank}.pt")
    dist.destroy_process_group()


def run_update_throughput(updates: int = 256, repeats: int = 15) -> list[dict]:
    torch.set_num_threads(1)
    affinity = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {0})
    alone = time_updates(*prefilled_agent(0), updates, repeats)
    os.sched_setaffinity(0, affinity)
    with tempfile.TemporaryDirectory() as folder:
        context = torch.multiprocessing.get_context("spawn")
        ranks = [context.Process(target=rank_probe, args=(rank, 2, f"file://{folder}/rendezvous", updates, repeats, folder))
                 for rank in range(2)]
        try:
            for process in ranks:
                process.start()
            for process in ranks:
                process.join(600)
                if process.exitcode is None:
                    raise RuntimeError("a rank of the probe was still running after 600 s")
                if process.exitcode != 0:
                    raise RuntimeError(f"a rank of the probe failed (exit status {process.exitcode})")
        finally:  # the other rank would wait in a collective for the failed one, and the script would never exit
            for process in ranks:
                if process.is_alive():
                    process.kill()
                    process.join()
        per_rank = [torch.load(f"{folder}/rank{rank}.pt") for rank in range(2)]
    return [{"setup": "1 learner alone", "updates_per_s_median": median(alone), "allreduce_ms_per_update": 0.0},
            *({"setup": f"rank {rank} of 2 (Gloo)", "updates_per_s_median": median(probe["rates"]),
               "allreduce_ms_per_update": probe["allreduce_ms"]} for rank, probe in enumerate(per_rank))]


def run_sac_pendulum(seeds: list[int], budget: int, work_dir: str) -> list[dict]:
    results = []
    common = ["--agent", "SAC", "--env", "Pendulum-v1", "--target-return", "-200", "--break-step", str(budget),
              "--eval-gap", "1000", "--eval-times1", "4", "--eval-times2", "8", "--no-print"]
    for seed in seeds:
        for learners in (1, 2):
            cwd = os.path.join(work_dir, f"learners{learners}-seed{seed}")
            flags = [*common, "--seed", str(seed), "--cwd", cwd, "--batch-size", str(256 // learners)]
            launcher = ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"] if learners == 2 else []
            start = time.perf_counter()
            run_in_own_group([sys.executable, *launcher, "-m", "elegantrl", *flags], env={**os.environ, "OMP_NUM_THREADS": "1"})
            wall = time.perf_counter() - start
            with open(os.path.join(cwd, "recorder.csv")) as file:
                rows = list(csv.DictReader(file))
            hit = next((row for row in rows if float(row["return_mean"]) >= -200), None)
            results.append({"seed": seed, "learners": learners, "batch_per_rank": 256 // learners, "wall_s": round(wall, 1),
                            "train_s_to_target": float(hit["seconds"]) if hit else None,
                            "steps_to_target": int(hit["step"]) if hit else None,
                            "best_return": max(float(row["return_mean"]) for row in rows)})
            print(results[-1], flush=True)
    return results


def write(name: str, title: str, results: list[dict], command: str, setup: str, table: str) -> None:
    out = os.path.join(HERE, "results")
    with open(os.path.join(out, f"{name}.csv"), "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=list(results[0]))
        writer.writeheader()
        writer.writerows(results)
    with open(os.path.join(out, f"{name}.md"), "w") as file:
        date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        file.write(f"# {name}: {title}\n\n- Command: `{command}`\n- Date: {date}\n- Machine: {machine()}\n- Setup: {setup}\n\n{table}\n")
    print(table)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", nargs="+", default=["learners-update-throughput", "learners-sac-pendulum"])
    parser.add_argument("--seeds", nargs="+", type=random_seed, default=[0, 1, 2])
    parser.add_argument("--budget", type=positive_int, default=40_000)
    options = parser.parse_args()
    check_distinct_seeds(parser, options.seeds)
    command = "python benchmarks/learners.py " + shlex.join(sys.argv[1:])
    if "learners-update-throughput" in options.rows:
        results = run_update_throughput()
        alone = results[0]["updates_per_s_median"]
        lines = ["| setup | SAC updates/s (median of 15 timings of 256 steps) | / alone | all-reduces alone, ms per update |",
                 "|---|---|---|---|"]
        lines += [f"| {r['setup']} | {r['updates_per_s_median']:.1f} | {r['updates_per_s_median'] / alone:.2f} | "
                  f"{r['allreduce_ms_per_update']:.2f} |" for r in results]
        write("learners-update-throughput", "SAC gradient steps per second, 2 Gloo ranks against 1 learner", results, command,
              f"AgentSAC, width {WIDTH}, batch {BATCH} per rank, Pendulum-v1's sizes, a ReplayBuffer of 10,000 random "
              f"transitions; CPU, one torch thread per process, each pinned to a core (the lone learner to core 0); the 2 ranks "
              f"run at once, and every optimizer step (critic, actor, alpha) all-reduces its gradients. The last column "
              f"times those three all-reduces alone, with nothing else running in the ranks.", "\n".join(lines))
    if "learners-sac-pendulum" in options.rows:
        with tempfile.TemporaryDirectory() as work_dir:
            results = run_sac_pendulum(options.seeds, options.budget, work_dir)
        lines = ["| learners | batch per rank | seeds reaching -200 | median env steps to -200 | median training s to -200 "
                 "| median wall s of the job |", "|---|---|---|---|---|---|"]
        medians = {}
        for learners in (1, 2):
            mine = [r for r in results if r["learners"] == learners]
            hits = [r for r in mine if r["train_s_to_target"] is not None]
            medians[learners] = median([r["train_s_to_target"] for r in hits]) if hits else float("nan")
            lines.append(f"| {learners} | {256 // learners} | {len(hits)}/{len(mine)} | "
                         f"{median([r['steps_to_target'] for r in hits]) if hits else '-'} | {medians[learners]:.1f} | "
                         f"{median([r['wall_s'] for r in mine]):.1f} |")
        lines.append(f"\nRatio of medians, training seconds to -200, 2 learners / 1: **{medians[2] / medians[1]:.2f}**")
        write("learners-sac-pendulum", "SAC on Pendulum-v1 to -200, 2 Gloo learners (torchrun) against 1", results, command,
              f"AgentSAC with its defaults otherwise (width 128 for Pendulum), budget {options.budget:,d} env steps of all ranks; "
              "1 learner: batch 256; 2 learners: batch 128 per rank, so each averaged gradient step covers 256 transitions and "
              "both take the same gradient steps per env step. Evaluation (4 episodes, 8 more to confirm a best) excluded "
              "from the training seconds; the wall time includes start-up and evaluation. One job at a time.", "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
