"""MuZero on CartPole-v1: env steps and time to 475, and the search's throughput (issue 12's row).

- ``muzero-cartpole``: ``python -m elegantrl --agent MuZero --env CartPole-v1 --num-envs 8`` with its
  built-in settings, target 475, per seed: env steps and training seconds (evaluation excluded) to
  the first evaluation at or above 475, and the job's wall time. One job at a time.
- ``muzero-search-throughput``: simulations per second of `AgentMCTS.search` (the batched tree search,
  8 simulations, an untrained `MuZeroNet` of the default width) for 1, 8 and 32 envs searched at once.

    python benchmarks/muzero.py --seeds 0 1 2 3 4
"""

from __future__ import annotations

import argparse
import csv
import os
import shlex
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository, for `import benchmarks`
from learners import write

from benchmarks.cli import check_distinct_seeds, random_seed, run_in_own_group  # noqa: E402
from benchmarks.report import median  # noqa: E402
from elegantrl.agent import AgentMuZero

TARGET, BUDGET = 475.0, 30_000


def run_cartpole(seeds: list[int], work_dir: str) -> list[dict]:
    results = []
    for seed in seeds:
        cwd = os.path.join(work_dir, f"seed{seed}")
        start = time.perf_counter()
        run_in_own_group([sys.executable, "-m", "elegantrl", "--agent", "MuZero", "--env", "CartPole-v1", "--num-envs", "8",
                          "--target-return", str(TARGET), "--break-step", str(BUDGET), "--seed", str(seed), "--cwd", cwd, "--no-print"])
        wall = time.perf_counter() - start
        with open(os.path.join(cwd, "recorder.csv")) as file:
            rows = list(csv.DictReader(file))
        hit = next((row for row in rows if float(row["return_mean"]) >= TARGET), None)
        results.append({"seed": seed, "steps_to_target": int(hit["step"]) if hit else None,
                        "train_s_to_target": round(float(hit["seconds"]), 1) if hit else None, "wall_s": round(wall, 1),
                        "best_return": max(float(row["return_mean"]) for row in rows)})
        print(results[-1], flush=True)
    return results


def run_search_throughput(repeats: int = 30) -> list[dict]:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    agent = AgentMuZero()
    agent.init(net_dim=AgentMuZero.arg_defaults["net_dim"], state_dim=4, action_dim=2)
    results = []
    for envs in (1, 8, 32):
        state = torch.randn(envs, 4)
        with torch.no_grad():
            agent.search(state)  # warm-up
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                agent.search(state)
                times.append(time.perf_counter() - start)
        seconds = median(times)
        results.append({"envs": envs, "ms_per_search": 1e3 * seconds,
                        "tree_simulations_per_s": envs * agent.num_simulations / seconds})
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", nargs="+", type=random_seed, default=[0, 1, 2, 3, 4])
    options = parser.parse_args()
    check_distinct_seeds(parser, options.seeds)
    command = "python benchmarks/muzero.py " + shlex.join(sys.argv[1:])
    results = run_search_throughput()
    lines = ["| envs searched at once | ms per search (median of 30) | tree-simulations/s |", "|---|---|---|"]
    lines += [f"| {r['envs']} | {r['ms_per_search']:.2f} | {r['tree_simulations_per_s']:,.0f} |" for r in results]
    write("muzero-search-throughput", "AgentMuZero's batched tree search, simulations per second", results, command,
          "AgentMuZero's defaults (8 simulations, width 64), an untrained MuZeroNet, CartPole-v1's sizes (4 state features, "
          "2 actions), random states; CPU, one torch thread; a search with Dirichlet noise at the roots, as in exploration.",
          "\n".join(lines))
    with tempfile.TemporaryDirectory() as work_dir:
        results = run_cartpole(options.seeds, work_dir)
    hits = [r for r in results if r["steps_to_target"] is not None]
    lines = ["| seed | env steps to 475 | training s to 475 | job wall s | best return |", "|---|---|---|---|---|"]
    lines += [f"| {r['seed']} | {r['steps_to_target'] or '-'} | {r['train_s_to_target'] or '-'} | {r['wall_s']} | {r['best_return']:.1f} |"
              for r in results]
    if hits:
        within = sum(r["steps_to_target"] <= 15_000 for r in hits)
        steps, seconds = median([r["steps_to_target"] for r in hits]), median([r["train_s_to_target"] for r in hits])
        lines.append(f"\n{len(hits)}/{len(results)} seeds reach 475 within {BUDGET:,d} env steps; median {steps:,.0f} env steps and "
                     f"{seconds:.1f} training s; {within}/{len(results)} within the goal of 15,000 env steps.")
    write("muzero-cartpole", "MuZero on CartPole-v1 to 475, the built-in settings with 8 envs", results, command,
          f"`python -m elegantrl --agent MuZero --env CartPole-v1 --num-envs 8 --target-return 475 --break-step {BUDGET}` per seed: "
          "the agent's built-in settings (8 simulations, width 64, batch 128, 32 uses per transition, 5-step unrolls, 50-step "
          "values); evaluation 4 episodes and 8 more to confirm a best, excluded from the training seconds; one job at a time, "
          "one torch thread.", "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
