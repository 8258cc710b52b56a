"""Agents that differ from elegantrl's in one piece of code, for sweeps that tried a change to the code.

A setting is swept with ``--candidate``; a change to the code (how a policy starts) cannot be, and
sweeping it from an edited working tree ties the result to code no commit holds. Each variant here is
that change as a subclass, so ``benchmarks/tune.py --agent AgentPPOLayerStart ...`` reruns the sweep
from a clean commit. A variant keeps its base's family, so it gets the same tuned entry.
"""

from __future__ import annotations

import torch
from torch import nn

from elegantrl.agent import AgentDiscretePPO, AgentPPO, AgentSAC
from elegantrl.net import ActorDiscretePPO, ActorPPO, build_mlp


class ActorPPOLayerStart(ActorPPO):
    """ActorPPO as it started before 6b0dc04: the mean layer's default init, so each state has its own
    arbitrary mean action, and std e^-0.5 = 0.61, where `init_gaussian_policy` starts every state at
    mean 0 with std 1."""

    def __init__(self, net_dim: int, state_dim: int, action_dim: int):
        nn.Module.__init__(self)  # not ActorPPO's: the same layers, made in the same order, without its start
        self.net = build_mlp([state_dim, net_dim, net_dim, action_dim], activation=nn.Tanh)
        self.log_std = nn.Parameter(torch.full((action_dim,), -0.5))


class AgentPPOLayerStart(AgentPPO):
    """AgentPPO with the Gaussian policy's earlier start (`ActorPPOLayerStart`)."""

    ClassAct = ActorPPOLayerStart


class ActorDiscretePPOUniformStart(ActorDiscretePPO):
    """ActorDiscretePPO whose logits start near 0 in every state, so every action starts equally likely
    (SB3's start: its policy layer's orthogonal init with gain 0.01), the categorical counterpart of
    `init_gaussian_policy`."""

    def __init__(self, net_dim: int, state_dim: int, action_dim: int):
        super().__init__(net_dim, state_dim, action_dim)
        with torch.no_grad():
            self.net[-1].weight.mul_(0.01)
            self.net[-1].bias.zero_()


class AgentDiscretePPOUniformStart(AgentDiscretePPO):
    """AgentDiscretePPO with a uniform start (`ActorDiscretePPOUniformStart`); swept, not adopted."""

    ClassAct = ActorDiscretePPOUniformStart


class AgentSACActorGap2(AgentSAC):
    """AgentSAC whose actor (and temperature) take one step per two critic steps, as ModSAC's and TD3's do,
    without ModSAC's reliability weighting: a third fewer backward passes per update."""

    actor_update_gap = 2


def agent_class(name: str) -> type:
    """The agent class called `name`: one of elegantrl's agents (not a family base such as AgentBase), or a variant here."""
    from elegantrl.run import list_agents

    ours = {"Agent" + short: cls for short, cls in list_agents().items()}
    variants = {key: value for key, value in globals().items() if key.startswith("Agent") and isinstance(value, type)}
    found = ours.get(name) or variants.get(name)
    if found is None:
        raise ValueError(f"no agent class {name!r}: elegantrl.agent has {', '.join(ours)}; benchmarks.variants has "
                         f"{', '.join(sorted(set(variants) - set(ours)))}")
    return found
