"""Continuous control off-policy: SAC, TD3 and DDPG on Pendulum-v1 (target -200).

    python examples/demo_off_policy_continuous.py             # each agent until -200 (about 15 s each)
    python examples/demo_off_policy_continuous.py --quick     # a smoke run

Actors act in [-1, 1]; PreprocessEnv maps actions to the env's torque bounds [-2, 2].
"""

import argparse

from elegantrl.agent import AgentDDPG, AgentSAC, AgentTD3
from elegantrl.run import Arguments, train_and_evaluate

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--quick", action="store_true")
options = parser.parse_args()

for agent in (AgentSAC(), AgentTD3(policy_noise=0.2), AgentDDPG(if_ou_noise=True)):
    args = Arguments(agent=agent, env="Pendulum-v1", random_seed=0)
    if options.quick:
        args.break_step, args.warmup_steps, args.eval_gap, args.eval_times1, args.eval_times2 = 512, 128, 256, 1, 0
    train_and_evaluate(args)
