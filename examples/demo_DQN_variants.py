"""The DQN family on CartPole-v1: DQN, DuelingDQN, DoubleDQN and D3QN side by side.

    python examples/demo_DQN_variants.py            # each agent until it reaches 475 (about 10-20 s each)
    python examples/demo_DQN_variants.py --quick    # a few hundred steps each, to check the set-up

Each agent differs from AgentDQN only in its Q network (see elegantrl/agent.py); their run
folders under runs/ hold the learning curves to compare.
"""

import argparse

from elegantrl.agent import AgentD3QN, AgentDoubleDQN, AgentDQN, AgentDuelingDQN
from elegantrl.run import Arguments, train_and_evaluate

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--quick", action="store_true")
options = parser.parse_args()

for agent_class in (AgentDQN, AgentDuelingDQN, AgentDoubleDQN, AgentD3QN):
    args = Arguments(agent=agent_class(), env="CartPole-v1", random_seed=0)
    if options.quick:  # a smoke run: tiny budget, tiny evaluation
        args.break_step, args.warmup_steps, args.eval_gap, args.eval_times1, args.eval_times2 = 512, 128, 256, 1, 0
    train_and_evaluate(args)
