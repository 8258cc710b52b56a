"""The networks, and nothing else: Q networks, actors and critics, and MuZero's model.

Every network takes ``(net_dim, state_dim, action_dim)`` like the original ElegantRL and maps a
batch of states of shape ``(batch, state_dim)``.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

import torch
from torch import nn


class StateNorm(nn.Module):
    """(input - mean) / std, clipped to ±10, with the statistics as buffers so that they are saved with the network.

    The identity until ``AgentBase.update_state_norm`` sets them (``Arguments.if_state_norm``).
    Where the input is a state followed by an action (a Q critic), only the state part is set.
    """

    def __init__(self, dim: int):
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("std", torch.ones(dim))
        # a Python flag, not a tensor test: the unnormalised path then costs nothing on every forward
        self.if_active = False

    clip = 10.0  # ±clip bounds the input (as SB3's VecNormalize): a state far outside those seen so far, or a feature
    # whose std is still tiny, would otherwise reach the network as a huge number

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / self.std).clamp(-self.clip, self.clip) if self.if_active else x

    @torch.no_grad()
    def set(self, mean: torch.Tensor, std: torch.Tensor) -> None:
        """Sets the statistics of the first ``len(mean)`` input features (the state's)."""
        self.mean[: len(mean)] = mean
        self.std[: len(std)] = std
        self.if_active = True

    def _load_from_state_dict(self, *args: Any, **kwargs: Any) -> None:
        super()._load_from_state_dict(*args, **kwargs)
        self._infer_if_active()

    def __setstate__(self, state: dict[str, Any]) -> None:  # a whole module pickled before the flag existed
        super().__setstate__(state)
        if "if_active" not in self.__dict__:
            self._infer_if_active()

    def _infer_if_active(self) -> None:
        # statistics still at their initial values mean the saved network did not normalise
        self.if_active = bool(self.mean.any() or self.std.ne(1).any())


def build_mlp(dims: Sequence[int], activation: type[nn.Module] = nn.ReLU, if_raw_out: bool = True,
              num_nets: int = 0) -> nn.Sequential:
    """`StateNorm`, then linear layers of sizes ``dims[0] -> ... -> dims[-1]`` with `activation` between.

    With ``if_raw_out`` the last layer has no activation (an output layer); without it the MLP
    ends in `activation` (an encoder whose output feeds further heads). Every MLP here that reads
    states starts with a `StateNorm`; those that read features are built with `build_head`. With
    ``num_nets`` the layers are `StackedLinear`: that many independent MLPs evaluated as one.
    """
    return nn.Sequential(StateNorm(dims[0]), *build_head(dims, activation, if_raw_out, num_nets))


def build_head(dims: Sequence[int], activation: type[nn.Module] = nn.ReLU, if_raw_out: bool = True,
               num_nets: int = 0) -> nn.Sequential:
    """`build_mlp` without the `StateNorm`, for layers that read features, not states."""
    layers: list[nn.Module] = []
    for dim_in, dim_out in zip(dims[:-1], dims[1:]):
        layers += [StackedLinear(num_nets, dim_in, dim_out) if num_nets else nn.Linear(dim_in, dim_out), activation()]
    if if_raw_out:
        layers.pop()
    return nn.Sequential(*layers)


class StackedLinear(nn.Module):
    """`num_nets` independent linear layers applied in one batched matmul (an ensemble's layer).

    Maps (num_nets, batch, dim_in) to (num_nets, batch, dim_out); a (batch, dim_in) input is read
    by every member. Twin critics built from these cost one kernel per layer instead of one per
    layer and network, which is most of a small network's time on a GPU. Each member starts as an
    `nn.Linear` of the same size does: weights and biases uniform in ±1/sqrt(dim_in).
    """

    def __init__(self, num_nets: int, dim_in: int, dim_out: int):
        super().__init__()
        bound = 1.0 / math.sqrt(dim_in)
        self.weight = nn.Parameter(torch.empty(num_nets, dim_in, dim_out).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(num_nets, 1, dim_out).uniform_(-bound, bound))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 2:
            x = x.expand(self.weight.shape[0], *x.shape)
        return torch.baddbmm(self.bias, x, self.weight)


def stack_separate_nets(state_dict: dict[str, Any], old_prefix: str, new_prefix: str) -> None:
    """Rewrites, in place, the weights of MLPs saved one per network (``old_prefix{i}.{layer}.weight``,
    as elegantrl kept twin critics before `StackedLinear`) as the stacked layers at ``new_prefix``, so
    that older checkpoints still load."""
    pattern = re.compile(re.escape(old_prefix) + r"(\d+)\.(\d+\.\w+)")  # network i, then its layer's tensor
    parts: dict[str, dict[int, torch.Tensor]] = {}
    for key in list(state_dict):
        if match := pattern.fullmatch(key):
            parts.setdefault(match[2], {})[int(match[1])] = state_dict.pop(key)
    for name, tensors in parts.items():
        members = [tensors[i] for i in sorted(tensors)]
        if name.endswith("weight"):  # nn.Linear's (out, in) -> (in, out)
            state_dict[new_prefix + name] = torch.stack([tensor.t() for tensor in members])
        elif name.endswith("bias"):
            state_dict[new_prefix + name] = torch.stack(members).unsqueeze(1)
        else:  # a StateNorm's statistics, the same in every network
            state_dict[new_prefix + name] = members[0]


@contextlib.contextmanager
def frozen(net: nn.Module) -> Iterator[None]:
    """Lets gradients flow through `net` to its inputs without computing them for its weights."""
    params = [param for param in net.parameters() if param.requires_grad]
    for param in params:
        param.requires_grad_(False)
    try:
        yield
    finally:
        for param in params:
            param.requires_grad_(True)


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


class QNetQuantile(nn.Module):
    """Quantile Q network (QR-DQN): `num_quantiles` quantiles of the return per action.

    ``forward(state)`` is their mean, the Q values (batch, action_dim), so that acting is the same
    argmax as for every Q network; ``get_quantiles(state)`` gives the quantiles themselves.
    """

    def __init__(self, net_dim: int, state_dim: int, action_dim: int, num_quantiles: int = 16):
        super().__init__()
        self.action_dim, self.num_quantiles = action_dim, num_quantiles
        self.net = build_mlp([state_dim, net_dim, net_dim, action_dim * num_quantiles])

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return self.get_quantiles(state).mean(dim=2)

    def get_quantiles(self, state: torch.Tensor) -> torch.Tensor:
        """The quantiles at fractions τ̂ᵢ = (2i + 1) / 2N, (batch, action_dim, num_quantiles)."""
        return self.net(state).view(-1, self.action_dim, self.num_quantiles)


class Actor(nn.Module):
    """Deterministic policy: ``forward(state) -> action`` in [-1, 1] (tanh-bounded)."""

    def __init__(self, net_dim: int, state_dim: int, action_dim: int):
        super().__init__()
        self.net = build_mlp([state_dim, net_dim, net_dim, action_dim])

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return self.net(state).tanh()


class ActorSAC(nn.Module):
    """Tanh-squashed Gaussian policy; ``forward(state)`` is its deterministic action tanh(mean)."""

    def __init__(self, net_dim: int, state_dim: int, action_dim: int):
        super().__init__()
        self.encoder = build_mlp([state_dim, net_dim, net_dim], if_raw_out=False)
        self.head = GaussianHead(net_dim, action_dim)

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(state))

    def get_action_logprob(self, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A sampled action (batch, action_dim) and its log-probability (batch,)."""
        return self.head.sample(self.encoder(state))


class GaussianHead(nn.Module):
    """Mean and log-std of a Gaussian whose samples are squashed into [-1, 1] by tanh."""

    def __init__(self, net_dim: int, action_dim: int):
        super().__init__()
        self.mean_log_std = nn.Linear(net_dim, action_dim * 2)

    def forward(self, feature: torch.Tensor) -> torch.Tensor:
        return self.mean_log_std(feature).chunk(2, dim=1)[0].tanh()

    def sample(self, feature: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A squashed sample and its log-probability: (action in [-1, 1], (batch, action_dim); log π, (batch,))."""
        mean, log_std = self.mean_log_std(feature).chunk(2, dim=1)
        log_std = log_std.clamp(-16.0, 2.0)
        noise = torch.randn_like(mean)
        u = mean + log_std.exp() * noise
        # log N(u; mean, std) minus the log-Jacobian of tanh, log(1 - tanh(u)^2), written in a
        # form that stays finite when |u| is large: 2 * (log 2 - u - softplus(-2u)).
        log_prob = -0.5 * noise.pow(2) - log_std - 0.5 * math.log(2 * math.pi)
        log_prob = log_prob - 2.0 * (math.log(2.0) - u - nn.functional.softplus(-2.0 * u))
        return u.tanh(), log_prob.sum(dim=1)


class Critic(nn.Module):
    """Q network for continuous actions: ``forward(state, action) -> Q`` of shape (batch,).

    Its `num_nets` Q networks are independent but stacked (`StackedLinear`), so that all of them
    cost one batched matmul per layer.
    """

    num_nets = 1

    def __init__(self, net_dim: int, state_dim: int, action_dim: int):
        super().__init__()
        self.net = build_mlp([state_dim + action_dim, net_dim, net_dim, 1], num_nets=self.num_nets)

    def forward(self, state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Q(state, action) of the first network alone, (batch,): the others' layers are not run."""
        x = self.net[0](torch.cat((state, action), dim=1))  # the StateNorm
        for layer in self.net[1:]:
            x = torch.addmm(layer.bias[0], x, layer.weight[0]) if isinstance(layer, StackedLinear) else layer(x)
        return x.squeeze(1)

    def get_q_heads(self, state: torch.Tensor, action: torch.Tensor) -> list[torch.Tensor]:
        """Q(state, action) of every network, each (batch,)."""
        return list(self.net(torch.cat((state, action), dim=1)).squeeze(2).unbind(0))

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any) -> None:
        stack_separate_nets(state_dict, f"{prefix}nets.", f"{prefix}net.")
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class CriticTwin(Critic):
    """Two independent Q networks, for clipped double Q-learning (TD3, SAC)."""

    num_nets = 2


class InterSPG(nn.Module):
    """SAC's actor and twin critics on one shared state encoder (the original's InterSAC network).

    ``forward(state)`` is the deterministic action, ``get_action_logprob`` samples the policy, and
    ``get_q_heads(state, action)`` gives both Q values from the shared state feature.
    """

    def __init__(self, net_dim: int, state_dim: int, action_dim: int):
        super().__init__()
        self.encoder = build_mlp([state_dim, net_dim, net_dim], if_raw_out=False)
        self.actor_head = GaussianHead(net_dim, action_dim)
        self.q_nets = build_head([net_dim + action_dim, net_dim, 1], num_nets=2)

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return self.actor_head(self.encoder(state))

    def get_action_logprob(self, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A sampled action (batch, action_dim) and its log-probability (batch,)."""
        return self.actor_head.sample(self.encoder(state))

    def get_q_heads(self, state: torch.Tensor, action: torch.Tensor, if_actor_objective: bool = False) -> list[torch.Tensor]:
        """Q(state, action) of both heads, each (batch,).

        For the actor's objective the gradient must reach only the action: the state feature is
        detached and the Q heads' weights get no gradient, so the actor cannot "improve" by
        reshaping the critic.
        """
        feature = self.encoder(state)
        if not if_actor_objective:
            return list(self.q_nets(torch.cat((feature, action), dim=1)).squeeze(2).unbind(0))
        feature_action = torch.cat((feature.detach(), action), dim=1)
        with frozen(self.q_nets):
            return list(self.q_nets(feature_action).squeeze(2).unbind(0))

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any) -> None:
        stack_separate_nets(state_dict, f"{prefix}q_nets.", f"{prefix}q_nets.")
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


def init_gaussian_policy(mean_layer: nn.Linear, action_dim: int) -> nn.Parameter:
    """Starts a state-independent Gaussian policy wide and alike in every state; returns its log std.

    The mean layer's weights are scaled down 100-fold and its bias zeroed, so that the first rollouts
    explore around 0 from every state instead of from an arbitrary action per state, and the log std
    starts at 0 (std 1, SB3's start) rather than -0.5. On tuning seeds it took PPO to 200 on
    LunarLanderContinuous-v3 in a median 344k env steps against 787k, and to -200 on Pendulum-v1 in
    29k against 49k, holding it after the hit more often (tune-ppo-*-hold-init*.md).
    """
    with torch.no_grad():
        mean_layer.weight.mul_(0.01)
        mean_layer.bias.zero_()
    return nn.Parameter(torch.zeros(action_dim))


LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


class GaussianPolicy(nn.Module):
    """A Gaussian policy over unbounded actions with a learned, state-independent log std (PPO, A2C).

    Actions are sampled unbounded, ``u ~ N(mean(s), std)``; the env receives ``tanh(u)`` (see
    ``AgentPPO.env_action``), and ``forward(state)`` is the deterministic action ``tanh(mean)``.
    A subclass says how the mean is computed (`action_mean`) and holds ``log_std``.
    """

    log_std: nn.Parameter

    def action_mean(self, state: torch.Tensor) -> torch.Tensor:
        """The mean of the unbounded action, (batch, action_dim)."""
        raise NotImplementedError

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return self.action_mean(state).tanh()

    def distribution(self, state: torch.Tensor) -> torch.distributions.Normal:
        """The policy's distribution over unbounded actions u for a batch of states."""
        return torch.distributions.Normal(self.action_mean(state), self.log_std.exp(), validate_args=False)

    def sample_action(self, state: torch.Tensor) -> torch.Tensor:
        """An exploration action u ~ N(mean, std), (batch, action_dim); cheaper than distribution().sample()."""
        mean = self.action_mean(state)
        return mean + self.log_std.exp() * torch.randn_like(mean)

    def get_logprob_entropy(self, state: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """log π(action | state) and the policy's entropy, each (batch,).

        `distribution`'s numbers, written out: without building the distribution, the policy's forward and
        backward pass took 517 µs against 571 µs (width 64, batch 256, one CPU thread).
        """
        mean = self.action_mean(state)
        log_prob = -0.5 * ((action - mean) * (-self.log_std).exp()).square() - self.log_std - LOG_SQRT_2PI
        entropy = (0.5 + LOG_SQRT_2PI + self.log_std).sum().expand(mean.shape[0])
        return log_prob.sum(dim=1), entropy


class ActorPPO(GaussianPolicy):
    """PPO's and A2C's Gaussian policy (`GaussianPolicy`) on an MLP of its own."""

    def __init__(self, net_dim: int, state_dim: int, action_dim: int):
        super().__init__()
        self.net = build_mlp([state_dim, net_dim, net_dim, action_dim], activation=nn.Tanh)
        self.log_std = init_gaussian_policy(self.net[-1], action_dim)

    def action_mean(self, state: torch.Tensor) -> torch.Tensor:
        return self.net(state)


class ActorDiscretePPO(nn.Module):
    """Categorical policy: ``forward(state)`` gives the logits (batch, action_dim)."""

    def __init__(self, net_dim: int, state_dim: int, action_dim: int):
        super().__init__()
        self.net = build_mlp([state_dim, net_dim, net_dim, action_dim], activation=nn.Tanh)

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return self.net(state)

    def distribution(self, state: torch.Tensor) -> torch.distributions.Categorical:
        """The policy's distribution over action indices for a batch of states."""
        return torch.distributions.Categorical(logits=self.net(state), validate_args=False)

    def sample_action(self, state: torch.Tensor) -> torch.Tensor:
        """Sampled action indices, (batch,); cheaper per env step than distribution().sample()."""
        return torch.multinomial(self.net(state).softmax(dim=1), 1).squeeze(1)

    def get_logprob_entropy(self, state: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """log π(action | state) for action indices (batch, 1), and the entropy, each (batch,).

        The same numbers as `distribution`'s, without building the distribution, which cost a PPO
        minibatch step on CartPole about 6% of its time (width 64, batch 256, one CPU thread).
        """
        log_probs = self.net(state).log_softmax(dim=1)
        # a probability of exactly 0 has log -inf: clamped, its term in the entropy is 0 * finite, not nan
        entropy = -(log_probs.exp() * log_probs.clamp(min=torch.finfo(log_probs.dtype).min)).sum(dim=1)
        return log_probs.gather(1, action.long()).squeeze(1), entropy  # long: indices of any integer or float dtype, as Categorical took


class CriticAdv(nn.Module):
    """State value V(state) of shape (batch,), for advantage estimates."""

    def __init__(self, net_dim: int, state_dim: int, action_dim: int):
        super().__init__()
        self.net = build_mlp([state_dim, net_dim, net_dim, 1], activation=nn.Tanh)

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return self.net(state).squeeze(1)


class InterGPO(GaussianPolicy):
    """PPO's Gaussian policy (`GaussianPolicy`) and state value on one shared state encoder (the InterPPO
    network); ``get_value(state)`` is V."""

    def __init__(self, net_dim: int, state_dim: int, action_dim: int):
        super().__init__()
        self.encoder = build_mlp([state_dim, net_dim, net_dim], activation=nn.Tanh, if_raw_out=False)
        self.mean = nn.Linear(net_dim, action_dim)
        self.log_std = init_gaussian_policy(self.mean, action_dim)
        self.value = nn.Linear(net_dim, 1)

    def action_mean(self, state: torch.Tensor) -> torch.Tensor:
        return self.mean(self.encoder(state))

    def get_value(self, state: torch.Tensor) -> torch.Tensor:
        """V(state), (batch,)."""
        return self.value(self.encoder(state)).squeeze(1)


class MuZeroNet(nn.Module):
    """MuZero's three networks (Schrittwieser et al., 2020) as small MLPs on a latent of `net_dim` features.

    representation: state -> latent; dynamics: (latent, action) -> (next latent, reward); prediction:
    latent -> (policy logits, value). Latents are min-max scaled to [0, 1] per sample, as in the paper, so that
    the dynamics and the prediction read one range however deep the unroll goes.

    Values and rewards are scalars, not categorical supports: this library's envs have rewards of a modest
    range (and `reward_scale` brings others there), where one linear output and a Huber loss (as the DQN
    family's critic) learn them; the support and its invertible transform pay off for Atari-sized returns,
    and would cost a softmax and an inverse transform at every step of the search.

    ``forward(state)`` is the prediction's policy logits at the state, what `AgentBase.act` takes the
    argmax of; `initial` and `recurrent` are the search's two calls.
    """

    def __init__(self, net_dim: int, state_dim: int, action_dim: int):
        super().__init__()
        self.action_dim = action_dim
        self.representation = build_mlp([state_dim, net_dim, net_dim])
        self.dynamics = build_head([net_dim + action_dim, net_dim, net_dim + 1])  # the next latent, then the reward
        self.prediction = build_head([net_dim, net_dim, action_dim + 1])  # the policy logits, then the value
        # A uniform prior, zero values and zero rewards at first: the untrained model's searches then visit
        # the actions evenly. Random outputs would bias them, and the policy, trained toward their visits,
        # would keep that bias long after the model has learned better (zeroed as in EfficientZero).
        with torch.no_grad():
            for output in (self.prediction[-1].weight, self.prediction[-1].bias, self.dynamics[-1].weight[-1:], self.dynamics[-1].bias[-1:]):
                output.zero_()

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return self.initial(state)[1]

    def initial(self, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """For states (batch, state_dim): latent (batch, net_dim), policy logits (batch, action_dim), value (batch,)."""
        latent = scale_latent(self.representation(state))
        return (latent, *self.predict(latent))

    def recurrent(self, latent: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """One model step by actions (batch,) int64: next latent, reward (batch,), policy logits, value (batch,)."""
        output = self.dynamics(torch.cat((latent, nn.functional.one_hot(action, self.action_dim).to(latent)), dim=1))
        next_latent = scale_latent(output[:, :-1])
        return (next_latent, output[:, -1], *self.predict(next_latent))

    def predict(self, latent: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The prediction network: policy logits (batch, action_dim) and value (batch,) of latents."""
        output = self.prediction(latent)
        return output[:, :-1], output[:, -1]


def scale_latent(latent: torch.Tensor) -> torch.Tensor:
    """Min-max scales each latent (row) to [0, 1]; a constant one becomes zeros rather than a division by zero."""
    # amin and amax rather than aminmax: torch 2.11 has no derivative for aminmax (seen on CUDA)
    low, high = latent.amin(dim=1, keepdim=True), latent.amax(dim=1, keepdim=True)
    return (latent - low) / (high - low).clamp_min(1e-5)
