"""Side-by-side benchmark of elegantrl against Stable-Baselines3, in one run, on one machine.

Each row of `rows.ROWS` names an env, a target return, a budget of env steps, the SB3 baseline (with
the rl-baselines3-zoo hyperparameters; sb3-contrib's where SB3 lacks the algorithm) and the
elegantrl agents to compare with it: as users run them (each library's own settings) or at matched
compute (`rows.matched`: the same widths, batch, gradient steps per env step and warm-up). For every seed the SB3 job runs first, then each elegantrl
agent, each job in a fresh interpreter (`runner`), one at a time. Both libraries are evaluated the
same way: every `eval_gap` env steps the deterministic policy plays `eval_episodes` episodes on a
separate env with the same episode seeds, with the clock paused; a run that reaches the target
trains on to twice that env step (`rows.TARGET_HOLD`), to see whether the return holds. `report` turns the jobs into ratios of medians
with bootstrap intervals; `throughput` measures updates and env steps per second against plain
loops, the fastest plain loop and SB3's own update and collection; `index` rebuilds
docs/benchmarks.md and its chart of ratios.

    python -m benchmarks --suite quick
    python -m benchmarks --rows dqn-cartpole --seeds 0 1 2

writes ``benchmarks/results/<row>.md`` (tables, command, machine) and ``<row>.csv`` (one line per
run). ``python benchmarks/benchmark.py ...`` is the same command, kept for the earlier reports.
See benchmarks/README.md for the protocol and how to add a row.
"""
