"""Experience storage shared by agent.py and run.py.

Shapes: a rollout from ``agent.explore_env(env, horizon)`` is a `Transitions` whose fields are
``(horizon, num_envs, ...)``: ``state`` and ``next_state`` ``(horizon, num_envs, state_dim)``,
``action`` ``(horizon, num_envs, action_dim)`` (float32) or ``(horizon, num_envs, 1)`` (int64,
discrete), ``reward``, ``terminated`` and ``truncated`` ``(horizon, num_envs)``. ``next_state`` is
the state the action led to, also when the episode ended there (the final observation, never the
reset state of the next episode), so bootstrapping from it is right on truncation.
"""

from __future__ import annotations

from typing import NamedTuple

import torch


class Transitions(NamedTuple):
    """A rollout or a stored batch of transitions, one tensor per field (shapes: module docstring)."""

    state: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor
    terminated: torch.Tensor  # true terminal state: no future value
    truncated: torch.Tensor  # cut by a time limit: the future value is bootstrapped
    next_state: torch.Tensor


class ReplayBuffer:
    """Off-policy storage: a ring of the latest `max_memo` transitions in preallocated tensors.

    ``extend`` writes a whole rollout at once; ``sample_batch`` draws a uniform batch with
    ``torch.randint`` on the buffer's device.
    """

    def __init__(self, max_memo: int, state_dim: int, action_dim: int, if_discrete: bool, device: str | torch.device = "cpu"):
        self.max_memo = int(max_memo)
        self.device = torch.device(device)
        self.if_discrete = if_discrete

        def empty(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
            return torch.empty((self.max_memo, *shape), dtype=dtype, device=self.device)

        self.state = empty(state_dim)
        self.action = empty(1, dtype=torch.int64) if if_discrete else empty(action_dim)
        self.reward = empty()
        self.terminated = empty(dtype=torch.bool)
        self.truncated = empty(dtype=torch.bool)
        self.next_state = empty(state_dim)

        self.pointer = 0  # where the next transition is written
        self.cur_size = 0  # how many transitions are stored

    def __len__(self) -> int:
        return self.cur_size

    def extend(self, transitions: Transitions) -> None:
        """Stores a rollout whose fields are ``(horizon, num_envs, ...)`` or already flat ``(n, ...)``."""
        n = transitions.reward.numel()
        flat = [t.reshape(n, *getattr(self, name).shape[1:]) for name, t in zip(Transitions._fields, transitions)]
        if n > self.max_memo:  # only the newest max_memo transitions fit
            flat = [t[-self.max_memo :] for t in flat]
            n = self.max_memo
        first = min(n, self.max_memo - self.pointer)  # up to the end of the ring, the rest from its start
        for name, t in zip(Transitions._fields, flat):
            store = getattr(self, name)
            store[self.pointer : self.pointer + first] = t[:first]
            store[: n - first] = t[first:]
        self.pointer = (self.pointer + n) % self.max_memo
        self.cur_size = min(self.cur_size + n, self.max_memo)

    def sample_batch(self, batch_size: int) -> Transitions:
        """A uniform random batch of stored transitions, each field ``(batch_size, ...)``."""
        if self.cur_size == 0:
            raise RuntimeError("ReplayBuffer.sample_batch() on an empty buffer: extend() it with a rollout first")
        index = torch.randint(self.cur_size, (batch_size,), device=self.device)
        return Transitions(*(getattr(self, name)[index] for name in Transitions._fields))


class RolloutBuffer:
    """On-policy storage: the latest rollout only, as `Transitions` of shape (horizon, num_envs, ...)."""

    def __init__(self, device: str | torch.device = "cpu"):
        self.device = torch.device(device)
        self.transitions: Transitions | None = None

    def __len__(self) -> int:
        return 0 if self.transitions is None else self.transitions.reward.numel()

    def extend(self, transitions: Transitions) -> None:
        """Replaces the stored rollout: on-policy learning uses each rollout once, then drops it."""
        self.transitions = Transitions(*(t.to(self.device) for t in transitions))


def compute_gae(
    reward: torch.Tensor, terminated: torch.Tensor, truncated: torch.Tensor, value: torch.Tensor,
    next_value: torch.Tensor, gamma: float, lambda_gae: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimates and value targets, in one reverse pass over the rollout.

    All arguments are (horizon, num_envs); ``next_value`` is V of each transition's own
    ``next_state``. A terminated transition has no future value; a truncated one bootstraps
    from V(final observation), and in both cases the advantage trace stops at the episode's end
    instead of running into the next episode. Returns (advantage, value target), each
    (horizon, num_envs).
    """
    delta = reward + gamma * (~terminated).float() * next_value - value
    continues = (~(terminated | truncated)).float() * gamma * lambda_gae
    advantage = torch.empty_like(delta)
    running = torch.zeros_like(delta[0])
    for t in range(delta.shape[0] - 1, -1, -1):
        running = delta[t] + continues[t] * running
        advantage[t] = running
    return advantage, advantage + value
