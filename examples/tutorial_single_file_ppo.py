"""PPO in one file: a lesson that reads top to bottom, with the names and structure of elegantrl.

    python examples/tutorial_single_file_ppo.py --env CartPole-v1      # solved (475) in about 30 s
    python examples/tutorial_single_file_ppo.py --env Pendulum-v1      # solved (-200) in a few minutes

It imports nothing from elegantrl: the library's AgentPPO does the same things, shared with
the other agents (see elegantrl/agent.py, replay.py and run.py).

The loop, as in elegantrl:
    explore_env: play the current policy for `target_step` steps and keep the transitions;
    update_net:  estimate advantages with GAE, then take `repeat_times` epochs of minibatch
                 steps on PPO's clipped objective;
    evaluate:    now and then, play the deterministic policy and stop once it reaches the target.
"""

import argparse
import time
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
from torch import nn

# ---- 1. The settings: a small Arguments ---------------------------------------------------------

@dataclass
class Arguments:
    env_id: str = "CartPole-v1"
    target_return: float = 475.0
    net_dim: int = 64  # width of the hidden layers
    target_step: int = 2048  # env steps per rollout
    batch_size: int = 256  # transitions per minibatch
    repeat_times: int = 8  # epochs over each rollout
    learning_rate: float = 3e-4
    gamma: float = 0.99  # discount per step
    lambda_gae_adv: float = 0.95  # GAE's λ: 0 trusts the critic, 1 trusts the sampled returns
    ratio_clip: float = 0.2  # how far one update may move the policy's probability ratio
    break_step: int = 200_000  # give up after this many env steps
    eval_times: int = 10  # episodes per evaluation
    seed: int = 0


# ---- 2. The networks -------------------------------------------------------------------------------

def build_mlp(dims: list[int]) -> nn.Sequential:
    """Linear layers with Tanh between them (a smooth activation suits policy gradients)."""
    layers: list[nn.Module] = []
    for dim_in, dim_out in zip(dims[:-1], dims[1:]):
        layers += [nn.Linear(dim_in, dim_out), nn.Tanh()]
    return nn.Sequential(*layers[:-1])


class ActorPPO(nn.Module):
    """Gaussian policy for continuous actions; its log std is learned but does not depend on the state."""

    def __init__(self, net_dim: int, state_dim: int, action_dim: int):
        super().__init__()
        self.net = build_mlp([state_dim, net_dim, net_dim, action_dim])
        self.log_std = nn.Parameter(torch.full((action_dim,), -0.5))

    def forward(self, state: torch.Tensor) -> torch.Tensor:  # the deterministic action, in [-1, 1]
        return self.net(state).tanh()

    def distribution(self, state: torch.Tensor) -> torch.distributions.Distribution:
        return torch.distributions.Independent(torch.distributions.Normal(self.net(state), self.log_std.exp()), 1)


class ActorDiscretePPO(nn.Module):
    """Categorical policy for discrete actions: the network gives one logit per action."""

    def __init__(self, net_dim: int, state_dim: int, action_dim: int):
        super().__init__()
        self.net = build_mlp([state_dim, net_dim, net_dim, action_dim])

    def forward(self, state: torch.Tensor) -> torch.Tensor:  # the deterministic action: the likeliest
        return self.net(state).argmax(dim=1)

    def distribution(self, state: torch.Tensor) -> torch.distributions.Distribution:
        return torch.distributions.Categorical(logits=self.net(state))


class CriticAdv(nn.Module):
    """State value V(s): what the policy expects to collect from s on."""

    def __init__(self, net_dim: int, state_dim: int):
        super().__init__()
        self.net = build_mlp([state_dim, net_dim, net_dim, 1])

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return self.net(state).squeeze(-1)


# ---- 3. The agent ---------------------------------------------------------------------------------

class AgentPPO:
    def __init__(self, args: Arguments, state_dim: int, action_dim: int, if_discrete: bool):
        self.args, self.if_discrete = args, if_discrete
        actor_class = ActorDiscretePPO if if_discrete else ActorPPO
        self.actor = actor_class(args.net_dim, state_dim, action_dim)
        self.critic = CriticAdv(args.net_dim, state_dim)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), args.learning_rate)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), args.learning_rate)
        self.last_state = None

    def env_action(self, action: np.ndarray):
        # a Gaussian sample is unbounded; tanh maps it into the [-1, 1] box we scale to the env's bounds
        return int(action) if self.if_discrete else np.tanh(action)

    @torch.no_grad()
    def explore_env(self, env: gym.Env, horizon: int) -> dict[str, torch.Tensor]:
        """Plays the current (random) policy for `horizon` steps; returns the transitions as tensors."""
        keys = ("state", "action", "reward", "terminated", "truncated", "next_state")
        rollout: dict[str, list] = {key: [] for key in keys}
        state = self.last_state
        for _ in range(horizon):
            action = self.actor.distribution(torch.as_tensor(state).unsqueeze(0)).sample()[0].numpy()
            next_state, reward, terminated, truncated, _ = env.step(self.env_action(action))
            # Keep the real next state, also when the episode ends here: after a time limit
            # (truncated) its value still counts, since the state itself is not terminal.
            for key, value in zip(keys, (state, action, reward, terminated, truncated, next_state)):
                rollout[key].append(value)
            state = env.reset()[0] if terminated or truncated else next_state
        self.last_state = state
        return {key: torch.as_tensor(np.array(values, dtype=None if key == "action" else np.float32)) for key, values in rollout.items()}

    def update_net(self, rollout: dict[str, torch.Tensor]) -> float:
        """GAE, then `repeat_times` epochs of PPO's clipped objective over minibatches."""
        args = self.args
        state, action = rollout["state"], rollout["action"]
        with torch.no_grad():
            value, next_value = self.critic(state), self.critic(rollout["next_state"])
            # One step's advantage: what happened, minus what the critic expected. Only a true
            # terminal state has zero future value; a truncated one bootstraps from V(next_state).
            delta = rollout["reward"] + args.gamma * (1 - rollout["terminated"]) * next_value - value
            # GAE sums those deltas backwards, each discounted by γλ, and stops at an episode's end.
            continues = (1 - torch.maximum(rollout["terminated"], rollout["truncated"])) * args.gamma * args.lambda_gae_adv
            advantage, running = torch.empty_like(delta), torch.tensor(0.0)
            for t in reversed(range(len(delta))):
                running = delta[t] + continues[t] * running
                advantage[t] = running
            value_target = advantage + value
            advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
            old_log_prob = self.actor.distribution(state).log_prob(action)  # nothing changed since exploring

        for _ in range(args.repeat_times):
            for index in torch.randperm(len(state)).split(args.batch_size):
                critic_loss = nn.functional.smooth_l1_loss(self.critic(state[index]), value_target[index])
                self.critic_optimizer.zero_grad()
                critic_loss.backward()
                self.critic_optimizer.step()

                # PPO: raise the probability of better-than-expected actions, but only while the
                # ratio new/old policy stays within [1 - clip, 1 + clip]: small, safe steps.
                ratio = (self.actor.distribution(state[index]).log_prob(action[index]) - old_log_prob[index]).exp()
                clipped = ratio.clamp(1 - args.ratio_clip, 1 + args.ratio_clip)
                actor_loss = -torch.min(ratio * advantage[index], clipped * advantage[index]).mean()
                self.actor_optimizer.zero_grad()
                actor_loss.backward()
                self.actor_optimizer.step()
        return critic_loss.item()


# ---- 4. Train and evaluate ---------------------------------------------------------------------------

class ScaleAction(gym.ActionWrapper):
    """Maps the policy's [-1, 1] actions to the env's own bounds (PreprocessEnv does this in elegantrl)."""

    def action(self, action):
        low, high = self.env.action_space.low, self.env.action_space.high
        return low + (np.asarray(action) + 1.0) * 0.5 * (high - low)


def make_env(env_id: str) -> gym.Env:
    env = gym.make(env_id)
    return env if isinstance(env.action_space, gym.spaces.Discrete) else ScaleAction(env)


@torch.no_grad()
def evaluate(agent: AgentPPO, env: gym.Env, episodes: int, seed: int) -> float:
    """Mean return of the deterministic policy over `episodes` episodes."""
    returns = []
    for episode in range(episodes):
        state, _ = env.reset(seed=seed + episode)
        total, done = 0.0, False
        while not done:
            action = agent.actor(torch.as_tensor(state, dtype=torch.float32).unsqueeze(0))[0].numpy()
            state, reward, terminated, truncated, _ = env.step(int(action) if agent.if_discrete else action)
            total, done = total + reward, terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


def train_and_evaluate(args: Arguments) -> float:
    torch.manual_seed(args.seed)
    env, eval_env = make_env(args.env_id), make_env(args.env_id)
    if_discrete = isinstance(env.action_space, gym.spaces.Discrete)
    action_dim = env.action_space.n if if_discrete else env.action_space.shape[0]
    agent = AgentPPO(args, env.observation_space.shape[0], action_dim, if_discrete)
    agent.last_state, _ = env.reset(seed=args.seed)

    start, steps, best = time.time(), 0, -np.inf
    print(f"{'steps':>8} {'seconds':>8} {'return':>9} {'best':>9}")
    while steps < args.break_step:
        rollout = agent.explore_env(env, args.target_step)
        steps += args.target_step
        agent.update_net(rollout)
        episode_return = evaluate(agent, eval_env, args.eval_times, seed=10_000 + steps)
        best = max(best, episode_return)
        print(f"{steps:>8,d} {time.time() - start:>8.1f} {episode_return:>9.1f} {best:>9.1f}", flush=True)
        if episode_return >= args.target_return:
            print(f"solved {args.env_id}: {episode_return:.1f} >= {args.target_return}")
            break
    return best


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="PPO in one file")
    parser.add_argument("--env", default="CartPole-v1", choices=["CartPole-v1", "Pendulum-v1"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--break-step", type=int, default=None, help="give up after this many env steps")
    parser.add_argument("--target-return", type=float, default=None, help="stop at this evaluation return")
    options = parser.parse_args()
    if options.break_step is not None and options.break_step < 1:
        parser.error(f"--break-step must be 1 or more, got {options.break_step}")
    if options.env == "CartPole-v1":
        args = Arguments(seed=options.seed)
    else:  # Pendulum's rewards matter only a few dozen steps ahead: a short horizon (γ = 0.9) learns faster
        args = Arguments(env_id="Pendulum-v1", target_return=-200.0, gamma=0.9, learning_rate=1e-3, seed=options.seed)
    if options.break_step is not None:
        args.break_step = options.break_step
    if options.target_return is not None:
        args.target_return = options.target_return
    train_and_evaluate(args)
