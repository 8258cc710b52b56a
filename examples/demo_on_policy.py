"""On-policy: PPO with 8 envs on CartPole-v1, and PPO on Pendulum-v1.

    python examples/demo_on_policy.py            # CartPole to 475 in seconds, Pendulum to -200 in about a minute
    python examples/demo_on_policy.py --quick    # a smoke run

`num_envs=8` explores with a vector of 8 envs: one policy forward pass serves 8 env steps.
"""

import argparse

from elegantrl.agent import AgentDiscretePPO, AgentPPO
from elegantrl.run import Arguments, train_and_evaluate

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--quick", action="store_true")
options = parser.parse_args()

runs = [
    # the tuned entry for CartPole (elegantrl/tuned.py, printed at the start) fills every field left unset:
    # short rollouts of 64 steps x 8 envs, 10 epochs, rewards scaled by 0.1, a learning rate decayed over 100k steps
    Arguments(agent=AgentDiscretePPO(), env="CartPole-v1", eval_gap=1000),
    # Pendulum's reward matters only a few dozen steps ahead: gamma 0.9
    Arguments(agent=AgentPPO(), env="Pendulum-v1", gamma=0.9, learning_rate=1e-3),
]
for args in runs:
    if options.quick:
        args.break_step, args.target_step, args.eval_gap, args.eval_times1, args.eval_times2 = 512, 64, 256, 1, 0
    train_and_evaluate(args)
