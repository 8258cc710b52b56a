"""SAC on BipedalWalker-v3: the original ElegantRL's showcase (passing a return of 300).

    pip install -e ".[box2d]"
    python examples/demo_BipedalWalker.py                 # the full run: 1M env steps
    python examples/demo_BipedalWalker.py --quick         # a short run to check the set-up
    python examples/demo_BipedalWalker.py --rollout-num 2 # 2 exploration worker processes, a learner and an Evaluator process
    python examples/demo_BipedalWalker.py --rollout-num 2 --async-workers  # the workers explore while the learner learns

The run folder (runs/BipedalWalker-v3_SAC_0 by default) holds the best actor, recorder.csv and
learning_curve.png; training stops early once an evaluation passes the target of 300.
"""

import argparse

from elegantrl.agent import AgentSAC
from elegantrl.env import PreprocessEnv
from elegantrl.run import Arguments, train_and_evaluate, train_and_evaluate_mp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a thousand steps, to check the set-up")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cwd", default=None, help="the run folder")
    parser.add_argument("--rollout-num", type=int, default=None,
                        help="explore in this many worker processes while the learner learns (train_and_evaluate_mp)")
    parser.add_argument("--async-workers", action="store_true",
                        help="with --rollout-num: the workers keep exploring while the learner updates, instead of in lockstep rounds")
    options = parser.parse_args()

    args = Arguments(agent=AgentSAC(), env=PreprocessEnv("BipedalWalker-v3"), random_seed=options.seed, cwd=options.cwd)
    # Wider networks than the Pendulum defaults: a 24-dimensional state and 4 joints to coordinate.
    args.net_dim = 256
    args.batch_size = 256
    args.repeat_times = 128.0  # one gradient step per two env steps: the CPU budget goes further
    args.warmup_steps = 10_000  # random walking fills the buffer with falls and pushes
    # A shorter horizon and faster target networks than the Pendulum defaults (as the SB3 zoo
    # also tunes SAC here): with gamma 0.99, tau 5e-3 and lr 3e-4 a first run learned to stand
    # still (return about -20) and stayed there for 100k steps.
    args.gamma = 0.98
    args.soft_update_tau = 0.02
    args.learning_rate = 7.3e-4
    args.eval_gap = 10_000
    args.eval_times1, args.eval_times2 = 4, 6
    args.break_step = 1_000_000
    if options.quick:
        args.warmup_steps, args.break_step, args.eval_gap, args.eval_times1, args.eval_times2 = 500, 1_000, 500, 1, 0
        args.max_step = 200  # an untrained walker would stand for the whole 1,600 steps of each evaluation episode
    if options.rollout_num is None:
        if options.async_workers:
            parser.error("--async-workers needs --rollout-num N")
        train_and_evaluate(args)
    else:  # each worker process starts by importing this script: hence the __main__ guard below
        args.rollout_num, args.if_async_workers = options.rollout_num, options.async_workers
        train_and_evaluate_mp(args)


if __name__ == "__main__":
    main()
