"""Learning tests: every agent beats a threshold that random play cannot reach, with a fixed seed.

Random play scores about 22 on CartPole-v1; the threshold is 195 (the old CartPole-v0 target).
"""

import csv
import os

import numpy as np
import pytest

from elegantrl.agent import AgentD3QN, AgentDoubleDQN, AgentDQN, AgentDuelingDQN, AgentMuZero, AgentQRDQN
from elegantrl.env import PreprocessEnv
from elegantrl.run import Arguments, train_and_evaluate


def mean_return(agent, env_id: str, episodes: int = 10, seed: int = 12345) -> float:
    """Mean return of the agent's deterministic policy on fresh episodes the training never saw."""
    env = PreprocessEnv(env_id)
    returns = []
    for episode in range(episodes):
        state, _ = env.reset(seed=seed + episode)
        total, done = 0.0, False
        while not done:
            state, reward, terminated, truncated, _ = env.step(agent.act(state))
            total += reward
            done = terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


@pytest.mark.parametrize("agent_class", [AgentDQN, AgentDuelingDQN, AgentDoubleDQN, AgentD3QN, AgentQRDQN])
def test_dqn_family_solves_cartpole_195(agent_class, tmp_path):
    args = Arguments(agent=agent_class(), env="CartPole-v1", random_seed=0, cwd=str(tmp_path), target_return=195.0,
                     break_step=30_000, eval_gap=1000, eval_times1=5, eval_times2=5, if_print=False)
    agent = train_and_evaluate(args)
    with open(os.path.join(args.cwd, "recorder.csv")) as file:
        best = max(float(row["return_mean"]) for row in csv.DictReader(file))
    assert best >= 195.0  # the evaluation during training (10 episodes: 5, then 5 more to confirm)
    # the actor kept on disk and returned is that policy: far above random play on unseen episodes
    assert mean_return(agent, "CartPole-v1") >= 150.0


def test_muzero_reaches_150_on_cartpole(tmp_path):
    # 8 envs searched at once (one batched model call per simulation); about 5,000 env steps and 20 s of training
    args = Arguments(agent=AgentMuZero(), env="CartPole-v1", num_envs=8, random_seed=0, cwd=str(tmp_path), target_return=200.0,
                     break_step=12_000, eval_gap=1000, eval_times1=4, eval_times2=4, if_print=False)
    agent = train_and_evaluate(args)
    with open(os.path.join(args.cwd, "recorder.csv")) as file:
        best = max(float(row["return_mean"]) for row in csv.DictReader(file))
    assert best >= 150.0
    assert mean_return(agent, "CartPole-v1") >= 150.0  # the saved actor, on episodes the training never saw
