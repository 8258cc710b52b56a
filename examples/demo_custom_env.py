"""Bring your own env: a minimal user-written env, checked, trained and used, end to end.

    python examples/demo_custom_env.py           # trains until the target (about 10 s)
    python examples/demo_custom_env.py --quick   # a smoke run

The env: a point on a line must reach the origin. It follows the Gymnasium API; check_env
would name any way it did not (try returning a 3-tuple from step()).
"""

import argparse

import gymnasium as gym
import numpy as np

from elegantrl.agent import AgentDQN
from elegantrl.env import PreprocessEnv, check_env
from elegantrl.run import Arguments, load_agent, train_and_evaluate


class GoToOrigin(gym.Env):
    """State: the position in [-1, 1]. Actions: 0 left, 1 stay, 2 right. Reward: -|position| per step."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.position = self.np_random.uniform(-1.0, 1.0)
        return np.array([self.position], np.float32), {}

    def step(self, action):
        self.position = float(np.clip(self.position + 0.1 * (int(action) - 1), -1.0, 1.0))
        terminated = abs(self.position) < 0.05  # reaching the origin ends the episode: a true terminal state
        return np.array([self.position], np.float32), -abs(self.position), terminated, False, {}


parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--quick", action="store_true")
options = parser.parse_args()

print("check_env notes:", check_env(GoToOrigin()) or "none")
# no time limit of its own: max_step adds one (a truncation, not a termination); target: a near-direct path
env = PreprocessEnv(GoToOrigin(), max_step=50, target_return=-2.0)
args = Arguments(agent=AgentDQN(), env=env, break_step=20_000, eval_gap=1000)
if options.quick:
    args.break_step, args.warmup_steps, args.eval_gap, args.eval_times1, args.eval_times2 = 512, 128, 256, 1, 0
train_and_evaluate(args)

agent = load_agent(args.cwd)  # the best actor, from the run folder
print("from position 0.8 the policy moves", ["left", "stays", "right"][int(agent.act(np.array([0.8], np.float32)))])
