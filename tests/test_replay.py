"""ReplayBuffer: ring storage, wrap-around, sampling. EpisodeBuffer: MCTS targets, unrolls, eviction."""

import os

import pytest
import torch

from elegantrl.replay import EpisodeBuffer, ReplayBuffer, Transitions


def rollout(first: int, n: int, state_dim: int = 3) -> Transitions:
    """n transitions, numbered first..first+n-1 in every field, shaped (n, 1, ...)."""
    ids = torch.arange(first, first + n, dtype=torch.float32)
    return Transitions(
        state=ids.view(n, 1, 1).expand(n, 1, state_dim).clone(),
        action=ids.long().view(n, 1, 1),
        reward=ids.view(n, 1),
        terminated=(ids % 2 == 0).view(n, 1),
        truncated=(ids % 3 == 0).view(n, 1),
        next_state=(ids + 0.5).view(n, 1, 1).expand(n, 1, state_dim).clone(),
    )


def test_extend_and_wrap_around_keeps_the_newest_transitions_aligned():
    buffer = ReplayBuffer(max_memo=8, state_dim=3, action_dim=4, if_discrete=True)
    buffer.extend(rollout(0, 5))
    assert (len(buffer), buffer.pointer) == (5, 5)
    buffer.extend(rollout(5, 6))  # 11 transitions into 8 slots: the ring wraps
    assert (len(buffer), buffer.pointer) == (8, 3)
    assert sorted(buffer.reward.tolist()) == list(range(3, 11))
    # every field of a slot belongs to the same transition, across the wrap
    assert torch.equal(buffer.state[:, 0], buffer.reward)
    assert torch.equal(buffer.next_state[:, 0], buffer.reward + 0.5)
    assert torch.equal(buffer.action[:, 0].float(), buffer.reward)
    assert torch.equal(buffer.terminated, buffer.reward % 2 == 0)
    assert torch.equal(buffer.truncated, buffer.reward % 3 == 0)


def test_extend_larger_than_capacity_keeps_the_last_max_memo():
    buffer = ReplayBuffer(max_memo=4, state_dim=3, action_dim=1, if_discrete=True)
    buffer.extend(rollout(0, 10))
    assert sorted(buffer.reward.tolist()) == [6, 7, 8, 9]


def test_sample_batch_shapes_and_only_stored_rows():
    torch.manual_seed(0)
    buffer = ReplayBuffer(max_memo=100, state_dim=3, action_dim=2, if_discrete=False)
    n = 10
    ids = torch.arange(n, dtype=torch.float32)
    buffer.extend(Transitions(ids.view(n, 1, 1).expand(n, 1, 3), ids.view(n, 1, 1).expand(n, 1, 2), ids.view(n, 1),
                              torch.zeros(n, 1, dtype=torch.bool), torch.zeros(n, 1, dtype=torch.bool), ids.view(n, 1, 1).expand(n, 1, 3)))
    batch = buffer.sample_batch(64)
    assert batch.state.shape == (64, 3) and batch.action.shape == (64, 2) and batch.reward.shape == (64,)
    assert batch.terminated.dtype == torch.bool and batch.next_state.shape == (64, 3)
    assert batch.reward.max() <= n - 1  # never the uninitialised rows beyond cur_size
    assert torch.equal(batch.state[:, 0], batch.reward) and torch.equal(batch.action[:, 1], batch.reward)
    assert len(set(batch.reward.tolist())) > 5


def test_sample_from_empty_buffer_says_what_to_do():
    with pytest.raises(RuntimeError, match="extend"):
        ReplayBuffer(max_memo=4, state_dim=3, action_dim=1, if_discrete=True).sample_batch(2)


# ---- EpisodeBuffer: the MCTS storage ---------------------------------------------------------------

REWARDS, ROOT_VALUES = [1.0, 2.0, 4.0], [10.0, 20.0, 30.0]  # a 3-step episode; gamma 0.5 makes the sums exact


def episode_buffer(td_steps: int = 2, num_unroll: int = 5, max_memo: int = 100, **kwargs) -> EpisodeBuffer:
    return EpisodeBuffer(max_memo, state_dim=2, action_dim=3, num_unroll=num_unroll, td_steps=td_steps, gamma=0.5, **kwargs)


def add(buffer: EpisodeBuffer, steps: int = 3, first: int = 0, rewards=None, root_values=None, terminated=True, final_value=None):
    """An episode whose observations are (first + p, p), actions p % 3, policies one-hot on that action."""
    position = torch.arange(steps)
    buffer.add_episode(
        observations=torch.stack([position + first, position], dim=1).float(),
        actions=position % 3,
        rewards=torch.arange(steps).float() if rewards is None else rewards,
        policies=torch.nn.functional.one_hot(position % 3, 3).float(),
        root_values=torch.zeros(steps) if root_values is None else root_values,
        terminated=terminated, truncated=not terminated, final_value=final_value,
    )


def unrolls_from(buffer: EpisodeBuffer, start: int, batch_size: int = 200):
    """Samples until some unroll starts at position `start`; returns the first such row of every field."""
    batch = buffer.sample_batch(batch_size)
    row = int((buffer.position[batch.index] == start).nonzero()[0])
    return type(batch)(*(field[row] for field in batch))


@pytest.mark.parametrize("terminated, td_steps, expected", [
    # z_p = sum_{i<b-p} 0.5^i r_{p+i} + 0.5^(b-p) v_b, b = min(p+n, 3), v_3 = 0 (terminated) or 8 (truncated)
    (True, 2, [1 + 0.5 * 2 + 0.25 * 30, 2 + 0.5 * 4, 4.0, 0.0]),
    (True, 5, [1 + 0.5 * 2 + 0.25 * 4, 2 + 0.5 * 4, 4.0, 0.0]),
    (False, 2, [1 + 0.5 * 2 + 0.25 * 30, 2 + 0.5 * 4 + 0.25 * 8, 4 + 0.5 * 8, 8.0]),
    (False, 5, [1 + 0.5 * 2 + 0.25 * 4 + 0.125 * 8, 2 + 0.5 * 4 + 0.25 * 8, 4 + 0.5 * 8, 8.0]),
])
def test_n_step_value_targets_stop_at_termination_and_bootstrap_at_truncation(terminated, td_steps, expected):
    buffer = episode_buffer(td_steps=td_steps, generator=torch.Generator().manual_seed(0))
    add(buffer, rewards=REWARDS, root_values=ROOT_VALUES, terminated=terminated, final_value=None if terminated else 8.0)
    assert buffer.value_target[:3].tolist() == expected[:3] and buffer.end_value[0].item() == expected[3]
    unroll = unrolls_from(buffer, start=0)  # K = 5 runs past the end: z_0 .. z_3, then absorbing zeros
    assert unroll.value.tolist() == expected + [0.0, 0.0]


@pytest.mark.parametrize("terminated", [True, False])
def test_unroll_past_the_end_is_absorbing_and_masked(terminated):
    buffer = episode_buffer(td_steps=2, generator=torch.Generator().manual_seed(0))
    add(buffer, rewards=REWARDS, root_values=ROOT_VALUES, terminated=terminated, final_value=None if terminated else 8.0)
    batch = buffer.sample_batch(16)
    assert batch.observation.shape == (16, 2) and batch.action.shape == (16, 5) and batch.action.dtype == torch.int64
    assert batch.reward.shape == batch.value.shape == batch.mask.shape == batch.policy_mask.shape == (16, 6)
    assert batch.policy.shape == (16, 6, 3) and batch.index.shape == (16,) and torch.equal(batch.weight, torch.ones(16))

    unroll = unrolls_from(buffer, start=1)  # positions 1..6 of a 3-step episode: 1, 2 searched, 3 final, 4.. past
    assert unroll.observation.tolist() == [1.0, 1.0]
    assert unroll.policy_mask.tolist() == [True, True, False, False, False, False]
    assert unroll.mask.tolist() == ([True] * 6 if terminated else [True, True, True, False, False, False])
    assert unroll.reward.tolist() == [0.0, 2.0, 4.0, 0.0, 0.0, 0.0]  # r_1, r_2: the last action's reward is real
    assert unroll.value.tolist() == ([4.0, 4.0, 0.0, 0, 0, 0] if terminated else [6.0, 8.0, 8.0, 0, 0, 0])
    assert unroll.policy[:2].tolist() == [[0, 1, 0], [0, 0, 1]] and not unroll.policy[2:].any()
    assert unroll.action[:2].tolist() == [1, 2]
    past_end = batch.action[~batch.policy_mask[:, :5]]  # uniform random actions past the end, all in range
    assert past_end.min() >= 0 and past_end.max() < 3 and len(set(past_end.tolist())) == 3


def test_reward_target_at_step_k_is_the_reward_of_the_action_at_t_plus_k_minus_1():
    # reward r_p = 10 * s_p + a_p: it names the observation and the action that earned it
    buffer = episode_buffer(num_unroll=3, generator=torch.Generator().manual_seed(1))
    steps = 8
    add(buffer, steps=steps, rewards=10 * torch.arange(steps) + torch.arange(steps) % 3)
    batch = buffer.sample_batch(64)
    start = batch.observation[:, 0]
    for k in range(1, 4):
        real = batch.policy_mask[:, k - 1]  # a_{t+k-1} was taken in the episode
        expected = 10 * (start + k - 1) + batch.action[:, k - 1]
        assert torch.equal(batch.reward[real, k], expected[real].float())
        assert not batch.reward[~real, k].any()
    assert not batch.reward[:, 0].any()  # step 0 has no reward target


def test_fifo_eviction_drops_whole_oldest_episodes_and_keeps_capacity():
    buffer = episode_buffer(max_memo=10, generator=torch.Generator().manual_seed(0))
    for first, steps in ((0, 4), (100, 4)):
        add(buffer, steps=steps, first=first)
    assert (len(buffer), list(buffer.episode_lengths)) == (8, [4, 4])
    add(buffer, steps=3, first=200)  # 8 + 3 > 10: the oldest episode goes, the new one wraps around the ring
    assert (len(buffer), list(buffer.episode_lengths)) == (7, [4, 3])
    add(buffer, steps=5, first=300)
    assert (len(buffer), list(buffer.episode_lengths)) == (8, [3, 5])
    batch = buffer.sample_batch(256)
    assert set(batch.observation[:, 0].tolist()) == {200, 201, 202, 300, 301, 302, 303, 304}
    # each unroll stays in its own episode across the wrap: real steps read on along its observations
    assert torch.equal(batch.action[:, 0], batch.observation[:, 1].long() % 3)
    real = batch.policy_mask[:, 1]
    assert torch.equal(batch.action[real, 1], (batch.observation[real, 1].long() + 1) % 3)
    with pytest.raises(ValueError, match="raise max_memo"):
        add(buffer, steps=11)


@pytest.mark.parametrize("own_generator", [True, False])
def test_one_seed_gives_one_sample(own_generator):
    def sample(seed: int):
        torch.manual_seed(seed)  # the global RNG draws when the buffer has no generator of its own
        buffer = episode_buffer(generator=torch.Generator().manual_seed(seed) if own_generator else None)
        add(buffer, steps=4)
        add(buffer, steps=3, terminated=False, final_value=1.0)
        return buffer.sample_batch(32)

    first, again, other = sample(7), sample(7), sample(8)
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    assert not torch.equal(first.index, other.index)


def test_prioritised_sampling_draws_by_value_error_and_weights_the_frequent_down():
    buffer = episode_buffer(td_steps=1, priority_alpha=1.0, generator=torch.Generator().manual_seed(0))
    # td_steps 1, terminated: z = (1 + 0.5 v_1, 2 + 0.5 v_2, 4) = (3.5, 4, 4); the root values miss them by 3, 1, 0
    add(buffer, steps=3, rewards=REWARDS, root_values=[6.5, 5.0, 4.0])
    batch = buffer.sample_batch(400)
    drawn = buffer.position[batch.index]
    assert 0.65 < (drawn == 0).float().mean() < 0.85 and not (drawn == 2).any()  # P = 3/4, 1/4, ~0
    assert torch.allclose(batch.weight[drawn == 0], torch.tensor(1 / 3)) and (batch.weight[drawn == 1] == 1).all()
    buffer.update_priority(torch.tensor([0, 1, 2]), torch.tensor([0.0, 0.0, 1.0]))
    assert (buffer.position[buffer.sample_batch(50).index] == 2).all()


def test_episode_collected_as_per_step_lists_is_stored_like_tensors():
    buffer, listed = episode_buffer(), episode_buffer()
    add(buffer, steps=3, rewards=REWARDS)
    listed.add_episode([torch.tensor([0.0, 0.0]), torch.tensor([1.0, 1.0]), torch.tensor([2.0, 2.0])], [0, 1, 2], REWARDS,
                       [torch.eye(3)[0], torch.eye(3)[1], torch.eye(3)[2]], [0.0, 0.0, 0.0], terminated=True, truncated=False)
    for name in ("observation", "action", "reward", "policy", "value_target"):
        assert torch.equal(getattr(buffer, name)[:3], getattr(listed, name)[:3])


@pytest.mark.parametrize("kwargs, message", [
    (dict(num_unroll=0), "num_unroll"), (dict(td_steps=0), "td_steps"), (dict(max_memo=0), "max_memo"),
    (dict(priority_alpha=-1.0), "priority_alpha"),
])
def test_bad_settings_name_the_setting(kwargs, message):
    with pytest.raises(ValueError, match=message):
        episode_buffer(**kwargs)


@pytest.mark.parametrize("change, message", [
    (dict(observations=torch.zeros(3, 5)), r"observations has shape \(3, 5\).*needs \(3, 2\)"),
    (dict(actions=torch.zeros(2, dtype=torch.long)), r"actions has shape \(2,\).*length of rewards"),
    (dict(policies=torch.zeros(4, 3)), "policies has shape"),
    (dict(root_values=torch.zeros(3, 1)), "root_values has shape"),
    (dict(rewards=torch.zeros(0)), "T >= 1"),
    (dict(actions=torch.tensor([0, 1, 3])), r"actions must lie in \[0, action_dim=3\)"),
    (dict(terminated=False), "terminated=True or truncated=True"),
    (dict(terminated=False, truncated=True), "pass final_value"),
])
def test_bad_episodes_get_a_clear_error(change, message):
    episode = dict(observations=torch.zeros(3, 2), actions=torch.zeros(3, dtype=torch.long), rewards=torch.zeros(3),
                   policies=torch.zeros(3, 3), root_values=torch.zeros(3), terminated=True, truncated=False)
    with pytest.raises(ValueError, match=message):
        episode_buffer().add_episode(**{**episode, **change})


def test_sample_from_empty_episode_buffer_says_what_to_do():
    with pytest.raises(RuntimeError, match="add_episode"):
        episode_buffer().sample_batch(2)


@pytest.mark.skipif(not os.path.exists("/proc/meminfo"), reason="the free memory is read from /proc/meminfo (Linux)")
@pytest.mark.parametrize("make", [lambda n: ReplayBuffer(n, 4, 2, if_discrete=False), lambda n: EpisodeBuffer(n, 4, 2)])
def test_a_buffer_larger_than_the_free_memory_is_refused_before_it_is_allocated(make):
    # allocated whole but written as the ring fills: too big, it would fail or take the machine down hours in
    with pytest.raises(MemoryError, match=r"max_memo=1,099,511,627,776\) needs .* GiB.*lower Arguments.max_memo"):
        make(2**40)
    assert len(make(1024)) == 0
