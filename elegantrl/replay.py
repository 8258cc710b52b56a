"""Experience storage shared by agent.py and run.py.

Shapes: a rollout from ``agent.explore_env(env, horizon)`` is a `Transitions` whose fields are
``(horizon, num_envs, ...)``: ``state`` and ``next_state`` ``(horizon, num_envs, state_dim)``,
``action`` ``(horizon, num_envs, action_dim)`` (float32) or ``(horizon, num_envs, 1)`` (int64,
discrete), ``reward``, ``terminated`` and ``truncated`` ``(horizon, num_envs)``. ``next_state`` is
the state the action led to, also when the episode ended there (the final observation, never the
reset state of the next episode), so bootstrapping from it is right on truncation.

The MCTS family's rollout is a `SearchTransitions`: the same fields and shapes, plus what the search found at
each step. It stores whole episodes (`EpisodeBuffer`) and learns from `Unroll` batches of shape
``(batch, K + 1, ...)``, one entry per unroll step; their alignment is in `EpisodeBuffer`'s docstring.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import torch


def free_memory(device: torch.device) -> int | None:
    """Bytes that `device` can still give, None where unknown: a GPU's free memory and what torch's cache holds
    unused; the CPU's MemAvailable, or less where a container's memory limit (cgroup v2) leaves less."""
    try:
        if device.type == "cuda":
            return torch.cuda.mem_get_info(device)[0] + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        if device.type != "cpu":
            return None
        with open("/proc/meminfo") as file:
            free = int(dict(line.split(":", 1) for line in file)["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError, RuntimeError):
        return None
    try:
        with open("/sys/fs/cgroup/memory.max") as limit, open("/sys/fs/cgroup/memory.current") as used, \
                open("/sys/fs/cgroup/memory.stat") as stat:
            cache = int(dict(line.split() for line in stat)["inactive_file"])  # page cache the kernel takes back when asked
            free = min(free, int(limit.read()) - int(used.read()) + cache)
    except (OSError, ValueError, KeyError):  # no cgroup v2, or "max": no limit
        pass
    return max(free, 0)


def allocate_storage(name: str, max_memo: int, device: torch.device, shapes: dict[str, tuple[tuple[int, ...], torch.dtype]],
                     make: Callable[..., torch.Tensor] = torch.empty) -> dict[str, torch.Tensor]:
    """`make((max_memo, *shape), dtype=..., device=device)` for each of `shapes` ({field: (shape, dtype)}), after checking
    that they fit.

    A buffer is allocated whole at the start, and pages it has not written yet cost nothing until the ring
    reaches them: one bigger than the free memory fails only when it fills, hours in, or takes the machine
    down with it. So it is refused here, with the setting to change.
    """
    per_transition = sum(torch.Size(shape).numel() * torch.empty(0, dtype=dtype).element_size() for shape, dtype in shapes.values())
    needed, free = max_memo * per_transition, free_memory(device)
    advice = (f"lower Arguments.max_memo (a run of n env steps stores no more than n transitions)"
              f"{f'; about {int(free * 0.8) // per_transition:,d} would fit' if free else ''}")
    if free is not None and needed > free:
        raise MemoryError(f"{name}(max_memo={max_memo:,d}) needs {needed / 2**30:.1f} GiB ({per_transition:,d} bytes a transition) "
                          f"on {device}, which has {free / 2**30:.1f} GiB free: {advice}")
    try:
        return {field: make((max_memo, *shape), dtype=dtype, device=device) for field, (shape, dtype) in shapes.items()}
    except RuntimeError as error:
        if not (isinstance(error, getattr(torch, "OutOfMemoryError", ())) or "alloc" in str(error)):  # not torch's allocator: not ours to explain
            raise
        raise MemoryError(f"{name}(max_memo={max_memo:,d}) could not be allocated on {device} ({needed / 2**30:.1f} GiB): {advice}") from error


class Transitions(NamedTuple):
    """A rollout or a stored batch of transitions, one tensor per field (shapes: module docstring)."""

    state: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor
    terminated: torch.Tensor  # true terminal state: no future value
    truncated: torch.Tensor  # cut by a time limit: the future value is bootstrapped
    next_state: torch.Tensor


class SearchTransitions(NamedTuple):
    """An MCTS agent's rollout: `Transitions`' fields (the trainers read only those) and the search's findings.

    Shapes ``(horizon, num_envs, ...)`` as for `Transitions`; `EpisodeBuffer.extend` cuts each env's column
    into episodes. Values are in the env's reward units (before `reward_scale`), as the rewards are.
    """

    state: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    next_state: torch.Tensor
    policy: torch.Tensor  # (horizon, num_envs, action_dim): the search's visit distribution at `state`
    root_value: torch.Tensor  # (horizon, num_envs): the search's value of `state`
    final_value: torch.Tensor  # (horizon, num_envs): the agent's value of `next_state` where truncated, else 0


class ReplayBuffer:
    """Off-policy storage: a ring of the latest `max_memo` transitions in preallocated tensors.

    ``extend`` writes a whole rollout at once; ``sample_batch`` draws a uniform batch with
    ``torch.randint`` on the buffer's device.
    """

    def __init__(self, max_memo: int, state_dim: int, action_dim: int, if_discrete: bool, device: str | torch.device = "cpu"):
        self.max_memo = int(max_memo)
        self.device = torch.device(device)
        self.if_discrete = if_discrete

        floats, flags = torch.float32, torch.bool
        shapes = dict(state=((state_dim,), floats), action=((1,), torch.int64) if if_discrete else ((action_dim,), floats),
                      reward=((), floats), terminated=((), flags), truncated=((), flags), next_state=((state_dim,), floats))
        storage = allocate_storage("ReplayBuffer", self.max_memo, self.device, shapes)
        self.state, self.action, self.reward, self.terminated, self.truncated, self.next_state = storage.values()

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



class Unroll(NamedTuple):
    """A batch of MCTS training samples: a start observation and K unroll steps (alignment: `EpisodeBuffer`)."""

    observation: torch.Tensor  # (batch, state_dim): s_t, the one observation the model sees
    action: torch.Tensor  # (batch, K) int64: a_t .. a_{t+K-1}, the action from unroll step k to k+1
    reward: torch.Tensor  # (batch, K+1): u_{t+k}, the reward of the action from step k-1; 0 at k = 0
    value: torch.Tensor  # (batch, K+1): n-step value targets z_{t+k}
    policy: torch.Tensor  # (batch, K+1, action_dim): search policies pi_{t+k}; zeros where policy_mask is False
    mask: torch.Tensor  # (batch, K+1) bool: the reward and value targets are true, train on them
    policy_mask: torch.Tensor  # (batch, K+1) bool: a searched position, train the policy on it
    weight: torch.Tensor  # (batch,) importance weights of prioritised sampling; ones when uniform
    index: torch.Tensor  # (batch,) the slot of each start position, for update_priority


class EpisodeBuffer:
    """MCTS (MuZero-style) storage: whole episodes with their search statistics, sampled as K-step unrolls.

    An episode of T steps holds, at each position p < T, the observation s_p the search ran at, its visit
    distribution pi_p, its root value v_p, the action a_p taken and the reward r_p it earned. Each position
    fills one slot of a ring of `max_memo` slots (``len()`` counts them); a slot knows its position p and its
    episode's length T, which maps a flat index to (episode, position). New episodes evict the oldest whole.

    Value targets, with n = `td_steps` and b = min(p + n, T), computed when an episode is added:

        z_p = sum_{i=p}^{b-1} gamma^(i-p) r_i  +  gamma^(b-p) v_b        for p = 0..T,

    where v_T, the value of the final observation s_T, is 0 after a termination and `final_value` after a
    truncation: the time limit cut off rewards that value stands for. (MuZero's pseudocode bootstraps 0 at
    every episode end, which teaches that a time limit ends all reward.)

    A sample starts at position t and unrolls K = `num_unroll` steps; step k = 0..K is position t+k:

        observation  s_t (later steps are the model's own hidden states)
        action       a_{t+k} for k < K: what the dynamics apply from step k to step k+1
        reward       u_{t+k} = r_{t+k-1} for k >= 1, the reward of the action from step k-1; 0 at k = 0
        value        z_{t+k}
        policy       pi_{t+k}
        policy_mask  t+k < T: a searched position
        mask         t+k <= T, or the episode terminated: the reward and value targets are true

    Past the end (t+k > T) the state is absorbing: reward 0, value 0, policy zeros, and actions uniform at
    random (as in MuZero: the model learns that every action keeps the absorbing state, not action 0 alone).
    After a termination that is the truth; after a truncation the env would have gone on, so `mask` drops
    those steps. An agent weights its reward and value losses by `mask`, its policy loss by `policy_mask`.

    Prioritised sampling (off while `priority_alpha` is 0) draws a slot with probability proportional to
    priority^alpha, the priority being |z_p - v_p| (MuZero's) until `update_priority` sets it; `Unroll.weight`
    is (N P)^-beta over its batch maximum. `generator` (on `device`) draws the samples and the actions past
    the end; None draws from torch's global RNG, which the run seeds.
    """

    priority_eps = 1e-6  # a position whose root value already matched its target stays drawable

    def __init__(self, max_memo: int, state_dim: int, action_dim: int, num_unroll: int = 5, td_steps: int = 10,
                 gamma: float = 0.997, priority_alpha: float = 0.0, priority_beta: float = 1.0,
                 device: str | torch.device = "cpu", generator: torch.Generator | None = None):
        for name, value in (("max_memo", max_memo), ("num_unroll", num_unroll), ("td_steps", td_steps)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"EpisodeBuffer({name}={value!r}): {name} must be an integer >= 1")
        if priority_alpha < 0:
            raise ValueError(f"EpisodeBuffer(priority_alpha={priority_alpha!r}): must be >= 0 (0 samples uniformly)")
        self.max_memo, self.state_dim, self.action_dim = max_memo, state_dim, action_dim
        self.num_unroll, self.td_steps, self.gamma = num_unroll, td_steps, gamma
        self.priority_alpha, self.priority_beta = priority_alpha, priority_beta
        self.device, self.generator = torch.device(device), generator

        floats, counts = torch.float32, torch.int64
        # per slot, of its episode: where it lies (position, length), and how the episode ended (end_value is z_T)
        shapes = dict(observation=((state_dim,), floats), action=((), counts), reward=((), floats), policy=((action_dim,), floats),
                      root_value=((), floats), value_target=((), floats), position=((), counts), length=((), counts),
                      end_value=((), floats), terminated=((), torch.bool), priority=((), floats))
        (self.observation, self.action, self.reward, self.policy, self.root_value, self.value_target, self.position, self.length,
         self.end_value, self.terminated, self.priority) = allocate_storage("EpisodeBuffer", max_memo, self.device, shapes, torch.zeros).values()
        self.episode_lengths: deque[int] = deque()  # the stored episodes, oldest first
        self.head = 0  # slot of the oldest stored position
        self.cur_size = 0  # stored positions (transitions)
        self.pending: dict[int, list[tuple[torch.Tensor, ...]]] = {}  # per env of `extend`: its unfinished episode

    def __len__(self) -> int:
        return self.cur_size

    def add_episode(self, observations: Any, actions: Any, rewards: Any, policies: Any, root_values: Any,
                    terminated: bool, truncated: bool, final_value: float | None = None) -> None:
        """Stores one ended episode of T steps, evicting the oldest whole episodes to make room.

        observations (T, state_dim), actions (T,) or (T, 1) integers, rewards (T,), policies (T, action_dim)
        and root_values (T,) may be tensors, arrays, or lists of per-step entries (how an agent collects
        each env's episode while it steps a vector env). `final_value` is the agent's value of the final
        observation (a search's root value there, or its prediction network's value): needed after a
        truncation, unused after a termination. An episode the agent cuts short itself counts as truncated.
        """
        if not (terminated or truncated):
            raise ValueError("EpisodeBuffer.add_episode stores ended episodes: pass terminated=True or truncated=True "
                             "(an episode cut short by the agent is truncated, with final_value)")
        if not terminated and final_value is None:
            raise ValueError("EpisodeBuffer.add_episode: a truncated episode bootstraps from its final observation; "
                             "pass final_value, the agent's value of that observation")

        reward = self._as_tensor(rewards, torch.float32)
        if reward.dim() != 1 or len(reward) == 0:
            raise ValueError(f"EpisodeBuffer.add_episode: rewards must have shape (T,) with T >= 1 steps, got {tuple(reward.shape)}")
        steps = len(reward)
        if steps > self.max_memo:
            raise ValueError(f"EpisodeBuffer.add_episode: an episode of {steps} steps does not fit in max_memo={self.max_memo}; "
                             "raise max_memo (it counts transitions)")
        observation, action, policy, root_value = (self._as_tensor(data, dtype) for data, dtype in (
            (observations, torch.float32), (actions, torch.int64), (policies, torch.float32), (root_values, torch.float32)))
        action = action.squeeze(-1) if action.shape == (steps, 1) else action
        for name, tensor, shape in (("observations", observation, (steps, self.state_dim)), ("actions", action, (steps,)),
                                    ("policies", policy, (steps, self.action_dim)), ("root_values", root_value, (steps,))):
            if tensor.shape != shape:
                raise ValueError(f"EpisodeBuffer.add_episode: {name} has shape {tuple(tensor.shape)}, but an episode of "
                                 f"{steps} steps (the length of rewards) needs {shape}")
        if action.min() < 0 or action.max() >= self.action_dim:
            raise ValueError(f"EpisodeBuffer.add_episode: actions must lie in [0, action_dim={self.action_dim})")

        # z_p for p = 0..T at once: the rewards of each n-step window, then the discounted bootstrap value v_b
        n, position = self.td_steps, torch.arange(steps + 1, device=self.device)
        window = torch.cat([reward, reward.new_zeros(n)]).unfold(0, n, 1)  # (T+1, n): r_p .. r_{p+n-1}, 0 past the end
        bootstrap = torch.minimum(position + n, torch.tensor(steps, device=self.device))
        value_at = torch.cat([root_value, root_value.new_tensor([0.0 if terminated else float(final_value)])])
        gamma_power = self.gamma ** torch.arange(n + 1, device=self.device, dtype=torch.float32)
        target = window @ gamma_power[:n] + gamma_power[bootstrap - position] * value_at[bootstrap]

        while self.cur_size + steps > self.max_memo:  # FIFO, whole episodes: a partial one would lose its targets' context
            evicted = self.episode_lengths.popleft()
            self.head, self.cur_size = (self.head + evicted) % self.max_memo, self.cur_size - evicted
        slot = (self.head + self.cur_size + position[:steps]) % self.max_memo
        self.observation[slot], self.action[slot], self.reward[slot] = observation, action, reward
        self.policy[slot], self.root_value[slot], self.value_target[slot] = policy, root_value, target[:steps]
        self.position[slot], self.length[slot] = position[:steps], steps
        self.end_value[slot], self.terminated[slot] = target[steps], bool(terminated)
        self.priority[slot] = (target[:steps] - root_value).abs() + self.priority_eps
        self.episode_lengths.append(steps)
        self.cur_size += steps

    def extend(self, rollout: SearchTransitions) -> None:
        """Stores the episodes that end in `rollout` (fields ``(horizon, num_envs, ...)``).

        Each env's steps after its last episode end wait in `pending` for the rollout that ends their
        episode, so an episode may span rounds. A truncated episode bootstraps from its `final_value`.
        """
        columns = (rollout.state, rollout.action, rollout.reward, rollout.policy, rollout.root_value)
        ended = (rollout.terminated | rollout.truncated).cpu()
        for env in range(ended.shape[1]):
            pending, start = self.pending.setdefault(env, []), 0
            for t in ended[:, env].nonzero().flatten().tolist():
                pending.append(tuple(column[start : t + 1, env] for column in columns))
                episode = [torch.cat(parts) for parts in zip(*pending)]
                self.add_episode(*episode, terminated=bool(rollout.terminated[t, env]), truncated=bool(rollout.truncated[t, env]),
                                 final_value=float(rollout.final_value[t, env]))
                pending.clear()
                start = t + 1
            if start < ended.shape[0]:
                pending.append(tuple(column[start:, env].clone() for column in columns))  # a view would keep the whole rollout

    def sample_batch(self, batch_size: int) -> Unroll:
        """A batch of `batch_size` unrolls from uniform (or prioritised) start positions (fields: `Unroll`)."""
        if self.cur_size == 0:
            raise RuntimeError("EpisodeBuffer.sample_batch() on an empty buffer: add_episode() an episode first")
        K, device, generator = self.num_unroll, self.device, self.generator
        if self.priority_alpha > 0:
            probability = self.priority[(self.head + torch.arange(self.cur_size, device=device)) % self.max_memo] ** self.priority_alpha
            probability = probability / probability.sum()
            offset = torch.multinomial(probability, batch_size, replacement=True, generator=generator)
            weight = (self.cur_size * probability[offset]) ** -self.priority_beta
            weight = weight / weight.max()
        else:
            offset = torch.randint(self.cur_size, (batch_size,), device=device, generator=generator)
            weight = torch.ones(batch_size, device=device)
        index = (self.head + offset) % self.max_memo
        start, length = self.position[index, None], self.length[index, None]  # t and T, (batch, 1)
        position = start + torch.arange(K + 1, device=device)  # t+k, (batch, K+1)
        # each step's slot, clamped into its episode: what that reads past the end is masked out below
        step = (index[:, None] + torch.minimum(position, length - 1) - start) % self.max_memo
        searched = position < length
        random_action = torch.randint(self.action_dim, (batch_size, K), device=device, generator=generator)
        value = torch.where(searched, self.value_target[step], torch.where(position == length, self.end_value[index, None], 0.0))
        reward = torch.zeros_like(value)
        reward[:, 1:] = torch.where(searched[:, :-1], self.reward[step[:, :-1]], 0.0)
        return Unroll(
            observation=self.observation[index],
            action=torch.where(searched[:, :K], self.action[step[:, :K]], random_action),
            reward=reward, value=value, policy=self.policy[step] * searched[..., None],
            mask=(position <= length) | self.terminated[index, None], policy_mask=searched, weight=weight, index=index,
        )

    def _as_tensor(self, data: Any, dtype: torch.dtype) -> torch.Tensor:
        """A tensor on the buffer's device from a tensor, an array, or a list of per-step entries."""
        if isinstance(data, Sequence) and len(data) > 0:
            data = torch.stack([torch.as_tensor(entry) for entry in data])
        return torch.as_tensor(data).to(self.device, dtype)

    def update_priority(self, index: torch.Tensor, priority: torch.Tensor) -> None:
        """Sets the priorities of slots `index` (an `Unroll.index`), e.g. to |z - predicted value| after a learning step."""
        self.priority[index] = priority.detach().abs().to(self.priority) + self.priority_eps


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
