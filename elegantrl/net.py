"""The networks, and nothing else: Q networks, actors and critics.

Every network takes ``(net_dim, state_dim, action_dim)`` like the original ElegantRL and maps a
batch of states of shape ``(batch, state_dim)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


def build_mlp(dims: Sequence[int], activation: type[nn.Module] = nn.ReLU, if_raw_out: bool = True) -> nn.Sequential:
    """Linear layers of sizes ``dims[0] -> dims[1] -> ... -> dims[-1]`` with `activation` between.

    With ``if_raw_out`` the last layer has no activation (an output layer); without it the MLP
    ends in `activation` (an encoder whose output feeds further heads).
    """
    layers: list[nn.Module] = []
    for dim_in, dim_out in zip(dims[:-1], dims[1:]):
        layers += [nn.Linear(dim_in, dim_out), activation()]
    if if_raw_out:
        layers.pop()
    return nn.Sequential(*layers)


class DuelHead(nn.Module):
    """Dueling head: Q(s, a) = V(s) + A(s, a) - mean_a A(s, a) (Wang et al., 2016)."""

    def __init__(self, net_dim: int, action_dim: int):
        super().__init__()
        self.value = nn.Linear(net_dim, 1)
        self.advantage = nn.Linear(net_dim, action_dim)

    def forward(self, feature: torch.Tensor) -> torch.Tensor:
        advantage = self.advantage(feature)
        return self.value(feature) + advantage - advantage.mean(dim=1, keepdim=True)


class QNet(nn.Module):
    """Q network for discrete actions: ``forward(state) -> Q(state, ·)`` of shape (batch, action_dim)."""

    Head: type[nn.Module] = nn.Linear
    num_heads = 1

    def __init__(self, net_dim: int, state_dim: int, action_dim: int):
        super().__init__()
        self.encoder = build_mlp([state_dim, net_dim, net_dim], if_raw_out=False)
        self.heads = nn.ModuleList(self.Head(net_dim, action_dim) for _ in range(self.num_heads))

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return self.heads[0](self.encoder(state))

    def get_q_heads(self, state: torch.Tensor) -> list[torch.Tensor]:
        """The Q values of every head, each (batch, action_dim); one head for QNet and QNetDuel."""
        feature = self.encoder(state)
        return [head(feature) for head in self.heads]


class QNetDuel(QNet):
    """QNet with a dueling head."""

    Head = DuelHead


class QNetTwin(QNet):
    """Two Q heads on one encoder, for clipped double Q-learning; ``forward`` uses the first head."""

    num_heads = 2


class QNetTwinDuel(QNetTwin):
    """QNetTwin with dueling heads."""

    Head = DuelHead
