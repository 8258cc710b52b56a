"""ReplayBuffer: ring storage, wrap-around, sampling."""

import pytest
import torch

from elegantrl.replay import ReplayBuffer, Transitions


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
