"""The algorithms: `AgentBase`, the template every agent follows, and its subclasses.

An agent is built in two steps, as in the original ElegantRL: ``AgentD3QN()`` holds the
algorithm's own settings, and ``agent.init(net_dim, state_dim, action_dim, ...)`` builds the
networks once the env is known (``train_and_evaluate`` calls it). After that:

- ``make_buffer(max_memo)`` makes the storage its family learns from;
- ``explore_env(env, horizon)`` steps the env and returns a `Transitions` rollout;
- ``update_net(buffer, new_steps)`` does the gradient steps that the new data pays for;
- ``act(states)`` gives the deterministic actions of the current policy.
"""

from __future__ import annotations

import copy
import difflib
import functools
import inspect
import math
import os
import pickle
import warnings
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import nn

from elegantrl.net import (
    Actor,
    ActorDiscretePPO,
    ActorPPO,
    ActorSAC,
    Critic,
    CriticAdv,
    CriticTwin,
    InterGPO,
    InterSPG,
    MuZeroNet,
    QNet,
    QNetDuel,
    QNetQuantile,
    QNetTwin,
    QNetTwinDuel,
    StateNorm,
    frozen,
)
from elegantrl.replay import EpisodeBuffer, ReplayBuffer, RolloutBuffer, SearchTransitions, Transitions, Unroll, compute_gae


def run_and_average(steps: Iterable[dict[str, torch.Tensor]]) -> dict[str, float]:
    """Runs the gradient steps of `steps` (a generator) and averages each figure over the steps that logged it.

    The figures stay tensors until the end: one conversion to float per figure, not per step.
    """
    sums: dict[str, torch.Tensor] = {}
    counts: dict[str, int] = {}
    for logs in steps:
        for name, value in logs.items():
            sums[name] = sums.get(name, 0.0) + value.detach()
            counts[name] = counts.get(name, 0) + 1
    return {name: float(value) / counts[name] for name, value in sums.items()}


def check_setting(agent: object, name: str, value: Any, ok: bool, rule: str) -> None:
    """Raises ValueError naming the agent's setting and the rule it breaks: at construction, not mid-run."""
    if not ok:
        raise ValueError(f"{type(agent).__name__}({name}={value!r}): {name} must be {rule}")


def refuse_unknown_keywords(cls: type, kwargs: dict[str, Any], where_else: str) -> None:
    """Raises TypeError for a keyword ``cls.__init__`` does not take, naming the closest it does (else all of them) and
    where settings of the other kind go: Python's own error names the keyword and nothing more. An __init__ that takes
    ``**kwargs`` takes anything."""
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]  # without self
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters):
        return
    takes = [parameter.name for parameter in parameters if parameter.kind is not inspect.Parameter.VAR_POSITIONAL]
    if unknown := sorted(kwargs.keys() - set(takes)):
        close = difflib.get_close_matches(unknown[0], takes, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"it takes {', '.join(takes) or 'none'}"
        raise TypeError(f"{cls.__name__} got an unexpected setting {unknown[0]!r}: {hint} ({where_else})")


def _is_real(value: Any) -> bool:
    """A finite real number (not a bool or a string): callers test it first, so that a wrong type fails as a
    `check_setting` message rather than as a TypeError from the comparison."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 1


def make_adam(params: Iterable[torch.Tensor], learning_rate: float) -> torch.optim.Adam:
    """Adam with torch's fused kernel where this torch has one for the parameters' device, else its default.

    The fused step updates every tensor in one call instead of one small kernel per tensor: on one
    CPU thread it made a SAC update about 10% faster (benchmarks/results/sac-throughput.md); CPU
    support came with torch 2.4, and older releases refuse ``fused=True`` when it is built.
    """
    params = list(params)
    try:
        return torch.optim.Adam(params, learning_rate, fused=True)
    except RuntimeError:
        return torch.optim.Adam(params, learning_rate)


def clip_grad_norm(params: Iterable[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Scales the gradients of `params` so that their joint 2-norm is at most `max_norm`, as
    ``torch.nn.utils.clip_grad_norm_`` does, and returns their norm before the scaling.

    The same arithmetic in two foreach calls: torch's own groups the tensors by device and dtype and
    checks its options at every call, which on a 256-wide network on one CPU thread took 0.22 ms
    against 0.13 ms for this (medians of 15 interleaved timings on an AMD EPYC core), out of a 1.7 ms
    gradient step. Lists the foreach kernels refuse (several devices, an old torch) go to torch's function.
    """
    params = list(params)
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return torch.zeros(())
    try:
        total_norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
        torch._foreach_mul_(grads, (max_norm / (total_norm + 1e-6)).clamp(max=1.0))
    except (RuntimeError, TypeError, AttributeError):
        return nn.utils.clip_grad_norm_(params, max_norm)
    return total_norm


def _check_max_grad_norm(agent: object, max_grad_norm: float | None) -> None:
    """Refuses a gradient-clipping norm that is neither None nor a positive number."""
    check_setting(agent, "max_grad_norm", max_grad_norm, max_grad_norm is None or (_is_real(max_grad_norm) and max_grad_norm > 0.0),
                  "positive, e.g. 0.5 or 10, or None for no clipping")


class AgentBase:
    """What every agent has: networks, acting, exploring, the state statistics and the checkpoint.

    How it learns is its family's: `AgentOffPolicy` (replay, TD targets) or `AgentOnPolicy` (rollouts,
    GAE, policy-gradient epochs), each making its own storage (`make_buffer`) and learning from it
    (`update_net`). The trainers call only these and `explore_env`, never asking for the family.

    Class attributes a subclass sets:
        ClassCri, ClassAct: network classes of the critic and the actor. ``ClassAct = None``
            means the critic network acts too (DQN's greedy policy, InterSAC's shared network).
        if_discrete: the action space the agent fits (True discrete, False continuous).
        arg_defaults: the family's tuned defaults for `Arguments` fields left as None.
    """

    ClassCri: type[nn.Module] | None = None
    ClassAct: type[nn.Module] | None = None
    if_discrete: bool = True
    if_off_policy: bool = True  # set by the family base; Arguments checks if_on_policy against it
    supports_workers: bool = True  # its rollouts are `Transitions`, which train_and_evaluate_mp's shared slots hold
    arg_defaults: dict[str, Any] = {}
    max_grad_norm: float | None = None  # clip each optimizer's gradient to this norm (the DQN and on-policy families take it as a setting)

    def __new__(cls, *args: Any, **kwargs: Any) -> AgentBase:
        agent = super().__new__(cls)
        # The constructor settings the caller chose, by name: tuned settings (elegantrl.tuned) never
        # override them, and config.json keeps them so that load_agent rebuilds the same networks.
        # None where they cannot be named (a subclass's *args): then nothing is tuned or kept.
        agent.given_settings = dict(kwargs)
        refuse_unknown_keywords(cls, kwargs, "training settings such as learning_rate and batch_size are fields of Arguments")
        signature = inspect.signature(cls.__init__)
        try:
            bound = list(signature.bind(agent, *args, **kwargs).arguments.items())[1:]  # without self
        except TypeError:  # wrong arguments: __init__ raises its own error next
            return agent
        agent.given_settings = {}
        for name, value in bound:
            kind = signature.parameters[name].kind
            if kind is inspect.Parameter.VAR_KEYWORD:
                agent.given_settings.update(value)
            elif kind is inspect.Parameter.VAR_POSITIONAL:
                if value:
                    agent.given_settings = None
                    break
            else:
                agent.given_settings[name] = value
        return agent

    def apply_tuned(self, tuned: dict[str, Any]) -> dict[str, Any]:
        """Takes the tuned constructor settings that the caller did not pass; returns those taken.

        A setting is what the constructor makes of it (``explore_rate`` becomes ``explore_rate_range``,
        ``num_quantiles`` a network class), so the agent is built again with and without each one and
        takes the attributes that differ, unless the caller changed one of them after construction
        (``agent.lambda_entropy = 0.05``). A constructor that does not take a setting gets none.
        """
        given = self.given_settings
        if given is None:
            return {}
        try:
            plain = vars(type(self)(**given))
        except TypeError:
            return {}
        applied = {}
        for name, value in tuned.items():
            if name in given:
                continue
            try:
                built = vars(type(self)(**given, **{name: value}))
            except TypeError:  # a subclass whose constructor does not take this setting
                continue
            # settings are plain values or partials of network classes: repr compares both by value
            changed = {k: v for k, v in built.items() if k != "given_settings" and repr(v) != repr(plain.get(k))}
            if all(repr(vars(self).get(k)) == repr(plain.get(k)) for k in changed):
                vars(self).update(changed)
                applied[name] = value
        return applied

    def init(self, net_dim: int, state_dim: int, action_dim: int, learning_rate: float = 1e-3, gamma: float = 0.99,
             reward_scale: float = 1.0, batch_size: int = 128, repeat_times: float = 1.0, soft_update_tau: float = 5e-3,
             device: str | torch.device = "cpu") -> None:
        """Builds networks and optimizers and stores the training settings (see `Arguments`)."""
        self.state_dim, self.action_dim = state_dim, action_dim
        self.gamma, self.reward_scale = gamma, reward_scale
        self.batch_size, self.repeat_times, self.soft_update_tau = batch_size, repeat_times, soft_update_tau
        self.device = torch.device(device)
        self.total_steps = 0  # env steps explored so far
        self._update_credit = 0.0  # fractional gradient steps carried to the next update_net
        self.last_state: np.ndarray | None = None  # where the next rollout continues; None: reset first
        self.learner_group: Any = None  # an elegantrl.distributed.LearnerGroup where several learners train together
        self._base_learning_rates: list[list[float]] | None = None  # for scale_learning_rates
        # running state statistics for update_state_norm; tensors, so that checkpoints keep them
        self.state_count = torch.zeros((), device=self.device)
        self.state_mean = torch.zeros(state_dim, device=self.device)
        self.state_var = torch.ones(state_dim, device=self.device)

        self.critic = self.ClassCri(net_dim, state_dim, action_dim).to(self.device)
        self.critic_optimizer = make_adam(self.critic.parameters(), learning_rate)
        self.has_separate_actor = self.ClassAct is not None
        if self.has_separate_actor:
            self.actor = self.ClassAct(net_dim, state_dim, action_dim).to(self.device)
            self.actor_optimizer = make_adam(self.actor.parameters(), learning_rate)
        else:
            self.actor = self.critic
        self.criterion = nn.SmoothL1Loss()

    # ---- the family's part --------------------------------------------------------------------

    def make_buffer(self, max_memo: int) -> ReplayBuffer | RolloutBuffer:
        """The storage this agent learns from, on its device (`max_memo`: capacity, in transitions)."""
        raise NotImplementedError

    def update_net(self, buffer: Any, new_steps: int) -> dict[str, float]:
        """Learns from `buffer` after `new_steps` new transitions were stored; returns mean logging figures."""
        raise NotImplementedError

    # ---- acting -------------------------------------------------------------------------------

    def select_action(self, state: torch.Tensor) -> torch.Tensor:
        """Exploration actions for states (batch, state_dim): (batch,) indices or (batch, action_dim)."""
        raise NotImplementedError

    def require_init(self, what: str) -> None:
        """Raises RuntimeError, saying how to go on, where `what` (a method) is called before `init` built the networks."""
        if not hasattr(self, "device"):
            name = type(self).__name__
            raise RuntimeError(f"{name}.{what} needs the agent's networks, which {name}.init(net_dim, state_dim, action_dim) "
                               f"builds; call it first, or take a trained run's agent, built and loaded, from "
                               f"elegantrl.run.load_agent(cwd)")

    @torch.no_grad()
    def act(self, state: np.ndarray | torch.Tensor) -> np.ndarray:
        """Deterministic action(s) of the current policy for one state ``(state_dim,)`` or a batch ``(n, state_dim)``."""
        self.require_init("act")
        state = torch.as_tensor(state, dtype=torch.float32, device=self.device)
        if state.dim() not in (1, 2) or state.shape[-1] != self.state_dim:
            # an env's own (2, 3) observation, where training saw it flattened by PreprocessEnv
            hint = (": flatten the env's observation first (obs.reshape(-1)), as PreprocessEnv does in training"
                    if state.numel() == self.state_dim else
                    f": a Discrete observation (an index) goes in one-hot, np.eye({self.state_dim})[obs - observation_space.start], "
                    f"as PreprocessEnv gives it in training" if state.dim() == 0 and self.state_dim > 1 else "")
            raise ValueError(f"{type(self).__name__}.act takes one state of shape ({self.state_dim},) or a batch of "
                             f"shape (n, {self.state_dim}), got shape {tuple(state.shape)}{hint}")
        single = state.dim() == 1
        output = self.actor(state.unsqueeze(0) if single else state)
        action = output.argmax(dim=1) if self.if_discrete else output
        action = action.cpu().numpy()
        return action[0] if single else action

    def reset_exploration(self, env: Any, seed: int | None = None) -> None:
        """Resets `env` (one env or a vector env, its action space included, for the warm-up's random
        actions) with `seed`; the next `explore_env` starts there."""
        self.last_state, _ = env.reset(seed=seed)
        if hasattr(env, "num_envs") and seed is not None:  # PreprocessEnv seeds its own action space; a vector env does not
            env.action_space.seed(seed)

    def explore_env(self, env: Any, horizon: int, if_random: bool = False) -> Transitions:
        """Steps `env` `horizon` times from where the last rollout stopped (see `reset_exploration`).

        `env` is one env (a `PreprocessEnv`) or a Gymnasium vector env of them made with
        ``autoreset_mode=SAME_STEP`` (see ``elegantrl.env.build_vector_env``), whose sub-envs all
        step `horizon` times. Returns `Transitions` of shape ``(horizon, num_envs, ...)`` (see
        replay.py). With `if_random` the actions are uniform over the action space (the warm-up
        before learning starts).
        """
        num_envs = getattr(env, "num_envs", 1)
        step = self._step_vector_env if hasattr(env, "num_envs") else self._step_single_env
        states = np.empty((horizon, num_envs, self.state_dim), dtype=np.float32)
        next_states = np.empty_like(states)
        action_shape = (horizon, num_envs, 1 if self.if_discrete else self.action_dim)
        actions = np.empty(action_shape, dtype=np.int64 if self.if_discrete else np.float32)
        rewards = np.empty((horizon, num_envs), dtype=np.float32)
        terminals = np.empty((horizon, num_envs), dtype=bool)
        truncates = np.empty((horizon, num_envs), dtype=bool)

        state = env.reset()[0] if self.last_state is None else self.last_state
        state = np.asarray(state, dtype=np.float32).reshape(num_envs, self.state_dim)
        t = 0
        try:
            with torch.no_grad():
                for t in range(horizon):
                    if if_random:
                        action = np.asarray(env.action_space.sample()).reshape(num_envs, -1)
                        if self.if_discrete:  # (num_envs,) indices, as select_action gives them
                            action = action[:, 0]
                    else:
                        # on a GPU the state is checked before the policy sees it: sampling from NaN probabilities is a
                        # device-side assert there, after which nothing on that GPU can be read, the cause included
                        if self.device.type == "cuda" and not np.isfinite(state).all():
                            raise FloatingPointError(self._non_finite_problem(state, self.total_steps + t * num_envs + 1))
                        try:
                            action = self.select_action(torch.as_tensor(state, device=self.device)).cpu().numpy()
                        except RuntimeError as error:  # e.g. sampling from NaN probabilities: say where the NaN came from
                            if (problem := self._non_finite_problem(state, self.total_steps + t * num_envs + 1, error)) is None:
                                raise
                            raise FloatingPointError(problem) from error
                    states[t], actions[t] = state, action.reshape(action_shape[1:])
                    next_states[t], state, rewards[t], terminals[t], truncates[t] = step(env, self.env_action(action))
        except KeyboardInterrupt:  # the steps were taken: the stop message and the budget count them
            self.total_steps += t * num_envs
            raise
        self.last_state = state
        self.total_steps += horizon * num_envs
        tensors = (states, actions, rewards, terminals, truncates, next_states)
        return Transitions(*(torch.from_numpy(array).to(self.device) for array in tensors))

    @staticmethod
    def _step_single_env(env: Any, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, bool, bool]:
        """Steps one env; returns (next state, state to continue from, reward, terminated, truncated)."""
        next_state, reward, terminated, truncated, _ = env.step(action[0])
        state = env.reset()[0] if terminated or truncated else next_state
        return next_state, state[np.newaxis], reward, terminated, truncated

    @staticmethod
    def _step_vector_env(env: Any, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Steps a SAME_STEP-autoreset vector env; a finished sub-env's next state is its final observation."""
        state, reward, terminated, truncated, info = env.step(action)
        next_state = state
        if "_final_obs" in info and info["_final_obs"].any():
            next_state = state.copy()
            for i in np.flatnonzero(info["_final_obs"]):
                next_state[i] = info["final_obs"][i]
        return next_state, state, reward, terminated, truncated

    def env_action(self, action: np.ndarray) -> np.ndarray:
        """The action the env receives for a stored action (the same one, except for AgentPPO)."""
        return action

    @torch.no_grad()
    def update_state_norm(self, states: torch.Tensor) -> None:
        """Merges a batch of states into the running mean and variance and sets every `StateNorm`.

        The statistics live in the networks (buffers), so a saved actor normalises its input the
        same way after loading. Call it between rollouts, never during one: an on-policy agent's
        rollout and its update must see the same policy.
        """
        states = states.reshape(-1, self.state_dim).to(self.device)
        if self.learner_group is not None:  # every rank merges every rank's states: the statistics stay identical
            states = self.learner_group.gather(states)
        count = float(states.shape[0])
        total = self.state_count + count
        delta = states.mean(dim=0) - self.state_mean
        # Chan et al.'s parallel merge of two sets' moments
        self.state_var.copy_((self.state_var * self.state_count + states.var(dim=0, unbiased=False) * count
                              + delta.square() * self.state_count * count / total) / total)
        self.state_mean.add_(delta * count / total)
        self.state_count.copy_(total)
        # a feature constant so far keeps std 1 (unscaled): a tiny std would multiply its first move by thousands
        std = torch.where(self.state_var > 1e-8, self.state_var.sqrt(), torch.ones_like(self.state_var))
        for part in self._saved_parts().values():
            if isinstance(part, nn.Module):
                for module in part.modules():
                    if isinstance(module, StateNorm):
                        module.set(self.state_mean, std)

    def earn_updates(self, new_steps: int) -> int:
        """The gradient steps `new_steps` new transitions buy, ``n * repeat_times / batch_size`` for n of them, so
        that each is used ``repeat_times`` times on average; the fraction carries over to the next call."""
        self._update_credit += new_steps * self.repeat_times / self.batch_size
        update_times = int(self._update_credit)
        self._update_credit -= update_times
        return update_times

    def optimizer_update(self, optimizer: torch.optim.Optimizer | Sequence[torch.optim.Optimizer], objective: torch.Tensor) -> None:
        """One step of `optimizer` on `objective`; with several learners, on the gradient averaged over them;
        with `max_grad_norm`, on that gradient clipped to the norm.

        `optimizer` may be a sequence of optimizers over disjoint networks whose losses `objective` sums
        (PPO's actor and critic): one backward pass then serves all of them, each clipped on its own.
        """
        optimizers = [optimizer] if isinstance(optimizer, torch.optim.Optimizer) else list(optimizer)
        params = [[p for group in opt.param_groups for p in group["params"]] for opt in optimizers]
        for opt in optimizers:
            opt.zero_grad(set_to_none=True)
        objective.backward()
        if self.learner_group is not None:  # the same step on every rank keeps the networks and optimizers identical
            self.learner_group.average_gradients(p for group in params for p in group)
        for opt, group in zip(optimizers, params):
            if self.max_grad_norm is not None:  # after the averaging, so that every learner clips the same gradient
                clip_grad_norm(group, self.max_grad_norm)
            opt.step()

    def optimizers(self) -> list[torch.optim.Optimizer]:
        """Every optimizer the agent has (its networks', and e.g. SAC's temperature's), in a fixed order."""
        return [part for part in self._saved_parts().values() if isinstance(part, torch.optim.Optimizer)]

    def scale_learning_rates(self, factor: float) -> None:
        """Sets every optimizer's learning rate to `factor` times the one it had at the first call
        (``Arguments.lr_decay_steps`` calls it before each update with the remaining fraction)."""
        if not (math.isfinite(factor) and factor >= 0.0):
            raise ValueError(f"a learning-rate factor must be a finite number of at least 0, got {factor!r}")
        optimizers = self.optimizers()
        if self._base_learning_rates is None:
            self._base_learning_rates = [[group["lr"] for group in optimizer.param_groups] for optimizer in optimizers]
        if len(optimizers) != len(self._base_learning_rates):
            raise RuntimeError(f"{type(self).__name__} has {len(optimizers)} optimizers, {len(self._base_learning_rates)} at the "
                               f"first scale_learning_rates call: build every optimizer in init()")
        for optimizer, rates in zip(optimizers, self._base_learning_rates):
            for group, rate in zip(optimizer.param_groups, rates):
                group["lr"] = rate * factor

    # ---- saving -------------------------------------------------------------------------------

    def non_finite_parts(self) -> list[str]:
        """The names of the networks and learned tensors that hold a NaN or inf: a diverged agent's."""
        return [name for name, part in self._saved_parts().items()
                if (isinstance(part, nn.Module) and not all(torch.isfinite(p).all() for p in part.parameters()))
                or (isinstance(part, torch.Tensor) and not torch.isfinite(part).all())]

    def _non_finite_problem(self, state: np.ndarray, env_step: int, error: Exception | None = None) -> str | None:
        """What is non-finite, the env's state or the agent's weights; None if neither.

        `error` is what the policy raised, if it did: after a CUDA device-side assert the weights
        cannot be read, and a finite state then leaves the policy's own output as the cause.
        """
        if not np.isfinite(state).all():
            return (f"the env returned a non-finite state (NaN or inf) by env step {env_step:,d}: {state}. "
                    f"Check the env's step() and reset(), or clip its outputs")
        advice = "Try a lower learning_rate or reward_scale"
        if error is not None and "device-side assert" in str(error):
            return (f"the policy failed on {self.device} by env step {env_step:,d} with a device-side assert while the state was "
                    f"finite: most likely its probabilities held NaN or inf, i.e. training diverged. {advice}")
        if diverged := self.non_finite_parts():
            return f"training diverged by env step {env_step:,d}: {', '.join(diverged)} hold NaN or inf. {advice}"
        return None

    def _saved_parts(self) -> dict[str, Any]:
        """Networks, optimizers and learned tensors (e.g. SAC's log_alpha): what a checkpoint holds."""
        kinds = (nn.Module, torch.optim.Optimizer, torch.Tensor)
        return {name: value for name, value in vars(self).items() if isinstance(value, kinds)}

    saved_counts: tuple[str, ...] = ()  # whole-number counters besides total_steps that a checkpoint keeps

    def state_dict(self) -> dict[str, Any]:
        """Every network, optimizer and learned tensor, and the step counts: what a checkpoint holds."""
        state = {name: part if isinstance(part, torch.Tensor) else part.state_dict() for name, part in self._saved_parts().items()}
        return {**state, "total_steps": self.total_steps, **{name: getattr(self, name) for name in self.saved_counts}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Loads what `state_dict` gave, in place."""
        for name, part in self._saved_parts().items():
            if isinstance(part, torch.Tensor):
                with torch.no_grad():  # in place, so that optimizers keep holding the same tensor
                    part.copy_(state[name])
            elif isinstance(part, torch.optim.Optimizer):
                # a checkpoint brings its machine's choice of kernel (fused Adam on CUDA or torch >= 2.4), which
                # this machine may not have: keep the kernel `make_adam` chose here
                if not optimizer_state_fits(part, state[name]):
                    warnings.warn(f"the checkpoint's {name} does not fit the parameters of this version's networks (it was saved by "
                                  f"an elegantrl that laid them out differently): the weights are loaded, {name} starts afresh",
                                  stacklevel=2)
                    continue
                kernels = [{key: group.get(key) for key in ("fused", "foreach")} for group in part.param_groups]
                part.load_state_dict(state[name])
                for group, kernel in zip(part.param_groups, kernels):
                    group.update(kernel)
            else:
                part.load_state_dict(state[name])
        self.total_steps = int(state["total_steps"])
        for name in self.saved_counts:  # a checkpoint from before a counter was kept starts it at 0
            setattr(self, name, int(state.get(name, 0)))

    def save_or_load_agent(self, cwd: str, if_save: bool) -> None:
        """Saves the agent's `state_dict` to ``cwd/agent.pth``, or loads it.

        Saving writes a temporary file and renames it over ``agent.pth``, so a process killed while
        saving leaves the previous checkpoint whole. An agent whose weights hold NaN or inf (a diverged
        run) is not saved, so that ``agent.pth`` keeps the last finite ones.
        """
        self.require_init("save_or_load_agent")
        path = os.path.join(cwd, "agent.pth")
        if if_save:
            if diverged := self.non_finite_parts():  # keep the last good checkpoint, which a resume can use
                warnings.warn(f"{type(self).__name__} was not saved at env step {self.total_steps:,d}: {', '.join(diverged)} hold "
                              f"NaN or inf, so {path} keeps the last finite weights", stacklevel=2)
                return
            os.makedirs(cwd, exist_ok=True)
            atomic_torch_save(self.state_dict(), path)
            return
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no saved agent at {path}; train first or check the run folder")
        self.load_state_dict(load_torch_file(path, self.device))


def optimizer_state_fits(optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> bool:
    """Whether a saved optimizer `state` has `optimizer`'s parameter groups, each of as many parameters, and
    per-parameter figures (Adam's moments) of each parameter's shape; the step count is the one figure of any shape."""
    groups, saved_groups = optimizer.param_groups, state["param_groups"]
    if [len(group["params"]) for group in groups] != [len(group["params"]) for group in saved_groups]:
        return False
    pairs = zip((index for group in saved_groups for index in group["params"]), (param for group in groups for param in group["params"]))
    return all(value.shape == param.shape for index, param in pairs
               for key, value in state["state"].get(index, {}).items() if key != "step" and isinstance(value, torch.Tensor))


def atomic_write(path: str, write: Callable[[str], Any]) -> None:
    """``write(temporary)``, then `os.replace` over `path`: a kill at any instant leaves the old file or the new one."""
    temporary = f"{path}.tmp{os.getpid()}"
    try:
        write(temporary)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def load_torch_file(path: str, device: Any) -> Any:
    """`torch.load` of a file elegantrl wrote, tensors only (no code in a file runs), with an error of elegantrl's own
    that names a damaged file (torch's would advise weights_only=False, which runs whatever the file holds)."""
    fix = "Restore it from a copy, or start a new run in another cwd"
    if not zipfile.is_zipfile(path):  # what torch.save writes: a file cut short, zeroed or overwritten is none
        raise ValueError(f"{path} cannot be loaded: it is not a checkpoint torch wrote (cut short, zeroed by a crash, or "
                         f"another kind of file). {fix}")
    try:
        return torch.load(path, map_location=device, weights_only=True)
    except torch.cuda.OutOfMemoryError:  # the device's trouble, not the file's (torch.OutOfMemoryError only from torch 2.5)
        raise
    except pickle.UnpicklingError as error:
        raise ValueError(f"{path} cannot be loaded: it holds objects other than tensors and plain containers, which "
                         f"elegantrl does not load, so that no code in a file can run. {fix}") from error
    except (EOFError, RuntimeError, ValueError) as error:
        raise ValueError(f"{path} cannot be loaded ({type(error).__name__} while reading it): it is damaged. {fix}") from error


def atomic_torch_save(obj: Any, path: str) -> None:
    """`torch.save` through `atomic_write`."""
    atomic_write(path, lambda temporary: torch.save(obj, temporary))


class AgentOffPolicy(AgentBase):
    """The off-policy family: a replay buffer of past transitions, TD targets, target networks.

    `update_net` owns the loop: sample, critic step, every `target_update_gap` critic steps a soft
    update of the target networks, and every `actor_update_gap` critic steps an actor step. A
    subclass defines the value of the next state (`get_next_q`), its exploration (`select_action`)
    and, if it has an actor, the actor's objective (`get_obj_actor`).
    """

    if_off_policy = True
    actor_update_gap: int = 1  # critic steps per actor step (TD3's policy delay)
    target_update_gap: int = 1  # critic steps per target update (with soft_update_tau=1, DQN's periodic copy)
    saved_counts = ("update_count",)  # so that a resumed run keeps the phase of both gaps
    joint_actor_objective: bool = False  # the actor is part of the critic's network and learns in its step (InterSAC)

    def init(self, *args: Any, **kwargs: Any) -> None:
        super().init(*args, **kwargs)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.actor_target: nn.Module | None = None  # for agents whose TD target uses a target actor
        self.update_count = 0  # critic gradient steps so far

    def make_buffer(self, max_memo: int) -> ReplayBuffer:
        return ReplayBuffer(max_memo, self.state_dim, self.action_dim, self.if_discrete, self.device)

    def update_net(self, buffer: ReplayBuffer, new_steps: int) -> dict[str, float]:
        """Does the gradient steps that `new_steps` new transitions pay for; returns the mean figures.

        Each transition is used ``repeat_times`` times on average (`earn_updates`).
        """
        return run_and_average(self.update_step(buffer) for _ in range(self.earn_updates(new_steps)))

    def update_step(self, buffer: ReplayBuffer) -> dict[str, torch.Tensor]:
        """One gradient step on the critic and, every `actor_update_gap` steps, one on the actor.

        An actor that is part of the critic's network (`joint_actor_objective`) learns in the critic's
        step instead, one optimizer on the sum of both objectives.
        """
        batch = buffer.sample_batch(self.batch_size)
        obj_critic, q_value = self.get_obj_critic(batch)
        logs = {"obj_critic": obj_critic, "q_value": q_value.mean()}
        objective = obj_critic
        if self.joint_actor_objective:
            logs["obj_actor"] = self.get_obj_actor(batch)
            objective = obj_critic + logs["obj_actor"]
        self.optimizer_update(self.critic_optimizer, objective)
        self.update_count += 1
        if_target_update = self.update_count % self.target_update_gap == 0
        if if_target_update:
            self.soft_update(self.critic_target, self.critic, self.soft_update_tau)
        if self.has_separate_actor and self.update_count % self.actor_update_gap == 0:
            logs["obj_actor"] = self.get_obj_actor(batch)
            self.optimizer_update(self.actor_optimizer, logs["obj_actor"])
        if if_target_update and self.actor_target is not None:
            self.soft_update(self.actor_target, self.actor, self.soft_update_tau)
        return logs

    def get_obj_critic(self, batch: Transitions) -> tuple[torch.Tensor, torch.Tensor]:
        """The critic's loss on `batch` (summed over its Q heads) and the first head's Q estimates."""
        with torch.no_grad():
            q_label = self.q_label(batch, self.get_next_q(batch.next_state))
        q_values = self.get_q_values(batch.state, batch.action)
        return sum(self.criterion(q, q_label) for q in q_values), q_values[0]

    def get_next_q(self, next_state: torch.Tensor) -> torch.Tensor:
        """The value of the next state that the TD target bootstraps from, (batch,); per agent."""
        raise NotImplementedError

    def get_q_values(self, state: torch.Tensor, action: torch.Tensor) -> list[torch.Tensor]:
        """Q(state, action) of every critic head, each (batch,)."""
        return self.critic.get_q_heads(state, action)

    def get_obj_actor(self, batch: Transitions) -> torch.Tensor:
        """The actor's loss on `batch`; per agent (agents whose critic acts have none)."""
        raise NotImplementedError

    def q_for_actor(self, state: torch.Tensor, action: torch.Tensor) -> list[torch.Tensor]:
        """Q heads for the actor's objective: gradients reach the action, not the critic's weights."""
        with frozen(self.critic):
            return self.critic.get_q_heads(state, action)

    def q_label(self, batch: Transitions, next_q: torch.Tensor) -> torch.Tensor:
        """The TD target r + γ·Q(s'): zero future value only after a true terminal state.

        A transition cut by a time limit (truncated) still bootstraps from Q(s'), because the
        state itself is not terminal: only the episode was stopped.
        """
        undone = (~batch.terminated).float()
        return batch.reward * self.reward_scale + undone * self.gamma * next_q

    @staticmethod
    @torch.no_grad()
    def soft_update(target_net: nn.Module, current_net: nn.Module, tau: float) -> None:
        """Polyak averaging: target ← (1 - tau)·target + tau·current, all tensors in one call (as torch's optimizers do)."""
        torch._foreach_lerp_(list(target_net.parameters()), list(current_net.parameters()), tau)


class AgentOnPolicy(AgentBase):
    """The on-policy family: learn from the latest rollout only, by GAE and minibatch epochs.

    `Arguments.target_step` is the rollout length, `batch_size` the minibatch, and `repeat_times`
    the number of epochs over each rollout. A subclass defines the policy objective
    (`get_obj_actor`); the default networks are a Gaussian policy (`ActorPPO`) and a V critic.

    Args:
        lambda_entropy: weight of the entropy bonus.
        lambda_gae_adv: GAE's λ, trading bias (0) for variance (1) in the advantages.
        max_grad_norm: clip the actor's gradient and the critic's, each on its own, to this norm at
            every step (SB3's PPO clips its one optimizer's, policy and value together, at 0.5); None
            does not clip.
        target_kl: end a rollout's epochs early, before the minibatch step that would be taken, once
            a minibatch's approximate KL divergence from the rollout's policy exceeds 1.5 × target_kl
            (SB3's rule, so that its values carry over, e.g. 0.01-0.05); None runs every epoch.
    """

    ClassCri = CriticAdv
    ClassAct = ActorPPO
    if_discrete = False
    if_off_policy = False
    arg_defaults = dict(
        net_dim=64, batch_size=256, repeat_times=8.0, target_step=2048, learning_rate=3e-4, warmup_steps=0, eval_gap=4096,
    )

    def __init__(self, lambda_entropy: float = 0.0, lambda_gae_adv: float = 0.95, max_grad_norm: float | None = None,
                 target_kl: float | None = None):
        check_setting(self, "lambda_entropy", lambda_entropy, _is_real(lambda_entropy) and lambda_entropy >= 0.0, "zero or positive")
        check_setting(self, "lambda_gae_adv", lambda_gae_adv, _is_real(lambda_gae_adv) and 0.0 <= lambda_gae_adv <= 1.0, "in [0, 1]")
        _check_max_grad_norm(self, max_grad_norm)
        check_setting(self, "target_kl", target_kl, target_kl is None or (_is_real(target_kl) and target_kl > 0.0),
                      "positive, e.g. 0.02, or None to run every epoch")
        self.lambda_entropy, self.lambda_gae_adv, self.max_grad_norm = lambda_entropy, lambda_gae_adv, max_grad_norm
        self.target_kl = target_kl

    def make_buffer(self, max_memo: int) -> RolloutBuffer:
        return RolloutBuffer(self.device)  # holds one rollout: max_memo does not apply

    def select_action(self, state: torch.Tensor) -> torch.Tensor:
        return self.actor.sample_action(state)

    def env_action(self, action: np.ndarray) -> np.ndarray:
        # a Gaussian policy samples unbounded actions; the env's box is [-1, 1]
        return action if self.if_discrete else np.tanh(action)

    def update_net(self, buffer: RolloutBuffer, new_steps: int) -> dict[str, float]:
        """`repeat_times` epochs of minibatch steps over the rollout in `buffer` (all of its `new_steps`)."""
        rollout = buffer.transitions
        horizon, num_envs = rollout.reward.shape
        with torch.no_grad():
            value = self.get_value(rollout.state.flatten(0, 1)).view(horizon, num_envs)
            next_value = self.get_value(rollout.next_state.flatten(0, 1)).view(horizon, num_envs)
            advantage, value_target = compute_gae(rollout.reward * self.reward_scale, rollout.terminated, rollout.truncated,
                                                  value, next_value, self.gamma, self.lambda_gae_adv)
            state, action = rollout.state.flatten(0, 1), rollout.action.flatten(0, 1)
            # the rollout's own policy is the current one: nothing was updated while exploring
            old_log_prob = self.actor.get_logprob_entropy(state, action)[0]
        advantage, value_target = advantage.flatten(), value_target.flatten()
        advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)

        def minibatch_steps() -> Iterator[dict[str, torch.Tensor]]:
            for _ in range(max(1, round(self.repeat_times))):
                for index in torch.randperm(advantage.numel(), device=self.device).split(self.batch_size):
                    batch_state = state[index]
                    obj_critic = self.criterion(self.get_value(batch_state), value_target[index])
                    log_prob, entropy = self.actor.get_logprob_entropy(batch_state, action[index])
                    entropy = entropy.mean()
                    with torch.no_grad():  # Schulman's low-variance estimator of KL(old || new): E[(r - 1) - log r]
                        log_ratio = log_prob - old_log_prob[index]
                        approx_kl = (log_ratio.exp() - 1.0 - log_ratio).mean()
                    if self.target_kl is not None:
                        if self.learner_group is not None:  # one decision for all ranks: a rank that stopped alone would leave
                            approx_kl = self.learner_group.mean(approx_kl)  # the others waiting in its gradient all-reduce
                        if approx_kl.item() > 1.5 * self.target_kl:
                            return
                    obj_actor = self.get_obj_actor(log_prob, old_log_prob[index], advantage[index]) - self.lambda_entropy * entropy
                    self.optimize(obj_critic, obj_actor)
                    yield {"obj_critic": obj_critic, "obj_actor": obj_actor, "entropy": entropy, "approx_kl": approx_kl}

        return run_and_average(minibatch_steps())

    def get_value(self, state: torch.Tensor) -> torch.Tensor:
        """V(state), (batch,)."""
        return self.critic(state)

    def optimize(self, obj_critic: torch.Tensor, obj_actor: torch.Tensor) -> None:
        """One optimizer step each for the critic and the actor, from one backward pass: the two networks share
        no parameters, so the sum's gradient is each loss's own (two passes cost a PPO minibatch about 8% more).
        A subclass whose actor objective reads the critic with gradient (not the advantage, computed without it)
        would move the critic by it too: override this, as AgentInterPPO does for its shared network."""
        self.optimizer_update((self.critic_optimizer, self.actor_optimizer), obj_critic + obj_actor)

    def get_obj_actor(self, log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantage: torch.Tensor) -> torch.Tensor:
        """The policy objective to minimise, from the minibatch's log-probabilities now and at exploration."""
        raise NotImplementedError


class AgentDQN(AgentOffPolicy):
    """Deep Q-Network (Mnih et al., 2015) with epsilon-greedy exploration.

    Args:
        explore_rate: (start, end) probability of a random action, decayed linearly.
        explore_decay_steps: env steps over which the rate decays from start to end.
        target_update_gap: gradient steps between two updates of the target network. The default,
            1, is a Polyak average every step (``Arguments.soft_update_tau``); a gap of N with
            ``soft_update_tau=1.0`` is the original DQN's copy every N steps (SB3's
            ``target_update_interval``, which counts env steps).
        max_grad_norm: clip the Q network's gradient to this norm at every step (SB3's DQN clips at
            10); None, the default, does not clip.
    """

    ClassCri = QNet
    arg_defaults = dict(
        net_dim=64, batch_size=128, repeat_times=32.0, target_step=64, max_memo=2**17,
        learning_rate=2e-3, soft_update_tau=2**-5, warmup_steps=1000, eval_gap=2000,
    )

    def __init__(self, explore_rate: tuple[float, float] = (1.0, 0.02), explore_decay_steps: int = 5_000,
                 target_update_gap: int = 1, max_grad_norm: float | None = None):
        pair = isinstance(explore_rate, (tuple, list)) and len(explore_rate) == 2 and all(map(_is_real, explore_rate))
        check_setting(self, "explore_rate", explore_rate, pair and 0.0 <= explore_rate[1] <= explore_rate[0] <= 1.0,
                      "(start, end) with 0 <= end <= start <= 1, e.g. (1.0, 0.02); a constant rate r is (r, r)")
        check_setting(self, "explore_decay_steps", explore_decay_steps, _is_real(explore_decay_steps) and explore_decay_steps >= 0,
                      "zero or positive")
        check_setting(self, "target_update_gap", target_update_gap, _is_count(target_update_gap),
                      "a whole number of at least 1, e.g. 1 (a soft update every step) or 500 with soft_update_tau=1.0")
        self.explore_rate_range = explore_rate
        self.explore_decay_steps = explore_decay_steps
        _check_max_grad_norm(self, max_grad_norm)
        self.target_update_gap = target_update_gap
        self.max_grad_norm = max_grad_norm

    @property
    def explore_rate(self) -> float:
        """The current probability of a random action."""
        start, end = self.explore_rate_range
        return max(end, start - (start - end) * self.total_steps / max(1, self.explore_decay_steps))

    def select_action(self, state: torch.Tensor) -> torch.Tensor:
        action = self.critic(state).argmax(dim=1)
        explore = torch.rand(action.shape, device=self.device) < self.explore_rate
        return torch.where(explore, torch.randint_like(action, self.action_dim), action)

    def get_next_q(self, next_state: torch.Tensor) -> torch.Tensor:
        # With several heads (QNetTwin) the target takes the smaller estimate (clipped double Q).
        return functools.reduce(torch.min, self.critic_target.get_q_heads(next_state)).max(dim=1).values

    def get_q_values(self, state: torch.Tensor, action: torch.Tensor) -> list[torch.Tensor]:
        return [q.gather(1, action).squeeze(1) for q in self.critic.get_q_heads(state)]

    def update_net(self, buffer: ReplayBuffer, new_steps: int) -> dict[str, float]:
        return {**super().update_net(buffer, new_steps), "explore_rate": self.explore_rate}


class AgentDuelingDQN(AgentDQN):
    """DQN with a dueling Q network (Wang et al., 2016)."""

    ClassCri = QNetDuel


class AgentDoubleDQN(AgentDQN):
    """DQN with two Q heads whose smaller estimate forms the target (clipped double Q-learning)."""

    ClassCri = QNetTwin


class AgentD3QN(AgentDoubleDQN):
    """Dueling double DQN: two dueling Q heads on one encoder."""

    ClassCri = QNetTwinDuel


class AgentQRDQN(AgentDQN):
    """QR-DQN (Dabney et al., 2018): DQN that learns N quantiles of the return per action.

    Args:
        num_quantiles: N, the quantiles per action, at fractions τ̂ᵢ = (2i + 1) / 2N.
        explore_rate, explore_decay_steps, target_update_gap, max_grad_norm: as for `AgentDQN`.
    """

    ClassCri = QNetQuantile

    def __init__(self, num_quantiles: int = 16, explore_rate: tuple[float, float] = (1.0, 0.02), explore_decay_steps: int = 5_000,
                 target_update_gap: int = 1, max_grad_norm: float | None = None):
        super().__init__(explore_rate, explore_decay_steps, target_update_gap, max_grad_norm)
        check_setting(self, "num_quantiles", num_quantiles, _is_count(num_quantiles), "a whole number of at least 1, e.g. 16")
        self.ClassCri = functools.partial(QNetQuantile, num_quantiles=num_quantiles)  # AgentBase.init passes only the sizes

    def get_next_q(self, next_state: torch.Tensor) -> torch.Tensor:
        """The target's quantiles of the greedy next action, (batch, N).

        The action is the argmax of the mean, and its quantiles are kept whole: a max per quantile
        would mix actions into a distribution that no policy has.
        """
        quantiles = self.critic_target.get_quantiles(next_state)
        return quantiles[torch.arange(len(quantiles), device=self.device), quantiles.mean(dim=2).argmax(dim=1)]

    def get_obj_critic(self, batch: Transitions) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():  # quantiles first, so that q_label's (batch,) reward and terminal mask broadcast over them
            target = self.q_label(batch, self.get_next_q(batch.next_state).T).T
        quantiles = self.critic.get_quantiles(batch.state)[torch.arange(len(batch.action), device=self.device), batch.action[:, 0]]
        return quantile_huber_loss(quantiles, target), quantiles.mean(dim=1)


def quantile_huber_loss(quantiles: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """QR-DQN's quantile Huber loss (eq. 10, κ = 1) of (batch, N) quantiles θᵢ against target samples Tθⱼ.

    Σᵢ meanⱼ |τ̂ᵢ - 1{uᵢⱼ < 0}|·Huber(uᵢⱼ) with uᵢⱼ = Tθⱼ - θᵢ, averaged over the batch: the asymmetric
    weight settles θᵢ where a fraction τ̂ᵢ of the target lies below it.
    """
    tau = (torch.arange(quantiles.shape[1], device=quantiles.device) + 0.5) / quantiles.shape[1]
    u = target.unsqueeze(1) - quantiles.unsqueeze(2)  # (batch, i, j)
    huber = torch.where(u.abs() <= 1.0, 0.5 * u.square(), u.abs() - 0.5)
    return ((tau.unsqueeze(1) - (u < 0).float()).abs() * huber).mean(dim=2).sum(dim=1).mean()


class AgentDDPG(AgentOffPolicy):
    """DDPG (Lillicrap et al., 2016): a deterministic actor trained through the critic.

    Args:
        explore_noise: standard deviation of the exploration noise, in the [-1, 1] action units.
        if_ou_noise: Ornstein-Uhlenbeck (time-correlated) noise instead of Gaussian noise.
    """

    ClassCri = Critic
    ClassAct = Actor
    if_discrete = False
    arg_defaults = dict(
        net_dim=128, batch_size=256, repeat_times=128.0, target_step=64, max_memo=2**20,
        learning_rate=1e-3, soft_update_tau=5e-3, warmup_steps=1000, eval_gap=1000,
    )

    def __init__(self, explore_noise: float = 0.1, if_ou_noise: bool = False):
        check_setting(self, "explore_noise", explore_noise, _is_real(explore_noise) and explore_noise >= 0.0,
                      "zero or positive (a standard deviation)")
        self.explore_noise, self.if_ou_noise = explore_noise, if_ou_noise

    def init(self, *args: Any, **kwargs: Any) -> None:
        super().init(*args, **kwargs)
        self.actor_target = copy.deepcopy(self.actor).requires_grad_(False)
        self.ou_state = torch.zeros(0, self.action_dim, device=self.device)  # one row per env, made at the first action

    def select_action(self, state: torch.Tensor) -> torch.Tensor:
        action = self.actor(state)
        if self.if_ou_noise:  # dx = -θx dt + σ dW with θ = 0.15: noise that drifts back to zero, its own for each env
            if self.ou_state.shape != action.shape:
                self.ou_state = torch.zeros_like(action)
            self.ou_state += -0.15 * self.ou_state + self.explore_noise * torch.randn_like(self.ou_state)
            noise = self.ou_state
        else:
            noise = self.explore_noise * torch.randn_like(action)
        return (action + noise).clamp(-1.0, 1.0)

    def _saved_parts(self) -> dict[str, Any]:
        parts = super()._saved_parts()
        parts.pop("ou_state")  # exploration noise, one row per env of this run: not learned, and its shape may change
        return parts

    def target_action(self, next_state: torch.Tensor) -> torch.Tensor:
        """The action whose value the TD target bootstraps from."""
        return self.actor_target(next_state)

    def get_next_q(self, next_state: torch.Tensor) -> torch.Tensor:
        next_q_heads = self.critic_target.get_q_heads(next_state, self.target_action(next_state))
        return functools.reduce(torch.min, next_q_heads)

    def get_obj_actor(self, batch: Transitions) -> torch.Tensor:
        with frozen(self.critic):  # the first Q network alone (TD3's paper), so the twin's layers cost nothing here
            return -self.critic(batch.state, self.actor(batch.state)).mean()


class AgentTD3(AgentDDPG):
    """TD3 (Fujimoto et al., 2018): twin critics, target policy smoothing, delayed actor updates.

    Args:
        explore_noise: standard deviation of the Gaussian exploration noise.
        policy_noise, noise_clip: the smoothing noise added to the target action, and its clip.
        actor_update_gap: critic steps per actor step (the policy delay); the target networks move
            once per actor step too, after it, as in the paper's algorithm.
    """

    ClassCri = CriticTwin

    def __init__(self, explore_noise: float = 0.1, policy_noise: float = 0.2, noise_clip: float = 0.5, actor_update_gap: int = 2):
        super().__init__(explore_noise)
        check_setting(self, "policy_noise", policy_noise, _is_real(policy_noise) and policy_noise >= 0.0, "zero or positive")
        check_setting(self, "noise_clip", noise_clip, _is_real(noise_clip) and noise_clip >= 0.0, "zero or positive")
        check_setting(self, "actor_update_gap", actor_update_gap, _is_count(actor_update_gap), "a whole number of at least 1")
        self.policy_noise, self.noise_clip, self.actor_update_gap = policy_noise, noise_clip, actor_update_gap

    @property
    def target_update_gap(self) -> int:
        """The targets move with the delayed actor step (the paper's Algorithm 1)."""
        return self.actor_update_gap

    def target_action(self, next_state: torch.Tensor) -> torch.Tensor:
        action = self.actor_target(next_state)
        noise = (torch.randn_like(action) * self.policy_noise).clamp(-self.noise_clip, self.noise_clip)
        return (action + noise).clamp(-1.0, 1.0)


class AgentSAC(AgentOffPolicy):
    """Soft Actor-Critic (Haarnoja et al., 2018) with a learned entropy temperature alpha.

    Args:
        target_entropy: the policy entropy alpha steers toward; by default -action_dim.
    """

    ClassCri = CriticTwin
    ClassAct = ActorSAC
    if_discrete = False
    arg_defaults = AgentDDPG.arg_defaults

    def __init__(self, target_entropy: float | None = None):
        check_setting(self, "target_entropy", target_entropy, target_entropy is None or _is_real(target_entropy),
                      "a finite number, or None for -action_dim")
        self.target_entropy = target_entropy

    def init(self, *args: Any, **kwargs: Any) -> None:
        super().init(*args, **kwargs)
        # the setting stays as given: the same agent built again for another env takes that env's -action_dim
        self.entropy_target = -float(self.action_dim) if self.target_entropy is None else float(self.target_entropy)
        self.log_alpha = torch.zeros((), device=self.device, requires_grad=True)
        self.alpha_optimizer = make_adam([self.log_alpha], self.critic_optimizer.defaults["lr"])

    @property
    def alpha(self) -> torch.Tensor:
        """The entropy temperature, as a tensor outside the autograd graph."""
        return self.log_alpha.detach().exp()

    def select_action(self, state: torch.Tensor) -> torch.Tensor:
        return self.actor.get_action_logprob(state)[0]

    def get_next_q(self, next_state: torch.Tensor) -> torch.Tensor:
        next_action, next_log_prob = self.actor.get_action_logprob(next_state)
        next_q = functools.reduce(torch.min, self.critic_target.get_q_heads(next_state, next_action))
        return next_q - self.alpha * next_log_prob  # the soft value: entropy is part of the return

    def get_obj_actor(self, batch: Transitions) -> torch.Tensor:
        alpha = self.alpha  # the temperature of this step's critic target: the paper updates all three at once, as SB3 does
        action, log_prob = self.actor.get_action_logprob(batch.state)
        obj_alpha = -(self.log_alpha * (log_prob.detach() + self.entropy_target)).mean()
        self.optimizer_update(self.alpha_optimizer, obj_alpha)
        q_value = functools.reduce(torch.min, self.q_for_actor(batch.state, action))
        return (alpha * log_prob - q_value).mean()

    def update_net(self, buffer: ReplayBuffer, new_steps: int) -> dict[str, float]:
        return {**super().update_net(buffer, new_steps), "alpha": float(self.alpha)}


class AgentModSAC(AgentSAC):
    """The original ElegantRL's modified SAC: the actor learns as far as the critic can be trusted.

    The actor's objective is weighted by a reliability in (0, 1], exp(-e²), where e is a running
    mean of the critic's loss relative to the size of its Q values: an actor that climbs an
    ill-fitted critic only climbs its errors. The actor also takes one step per
    `actor_update_gap` critic steps, so the critic learns on the faster time scale.
    """

    def __init__(self, target_entropy: float | None = None, actor_update_gap: int = 2):
        super().__init__(target_entropy)
        check_setting(self, "actor_update_gap", actor_update_gap, _is_count(actor_update_gap), "a whole number of at least 1")
        self.actor_update_gap = actor_update_gap

    def init(self, *args: Any, **kwargs: Any) -> None:
        super().init(*args, **kwargs)
        self.critic_error = torch.ones((), device=self.device)  # untrusted until the critic fits

    def get_obj_critic(self, batch: Transitions) -> tuple[torch.Tensor, torch.Tensor]:
        obj_critic, q_value = super().get_obj_critic(batch)
        relative_error = obj_critic.detach() / (q_value.detach().abs().mean() + 1.0)
        if self.learner_group is not None:  # the ranks' mean: a learned tensor, identical on every rank like the networks
            relative_error = self.learner_group.mean(relative_error)
        self.critic_error.lerp_(relative_error, 0.01)
        return obj_critic, q_value

    def get_obj_actor(self, batch: Transitions) -> torch.Tensor:
        return super().get_obj_actor(batch) * torch.exp(-self.critic_error.square())


class AgentInterSAC(AgentSAC):
    """SAC whose actor and twin critics share one state encoder and learn with one optimizer."""

    ClassCri = InterSPG
    ClassAct = None  # the shared network acts too
    joint_actor_objective = True

    def q_for_actor(self, state: torch.Tensor, action: torch.Tensor) -> list[torch.Tensor]:
        return self.critic.get_q_heads(state, action, if_actor_objective=True)


class AgentPPO(AgentOnPolicy):
    """PPO (Schulman et al., 2017): the clipped surrogate objective over GAE advantages.

    Args:
        ratio_clip: the clip range ε of the probability ratio.
        lambda_entropy, lambda_gae_adv, max_grad_norm, target_kl: see `AgentOnPolicy`.
    """

    def __init__(self, ratio_clip: float = 0.2, lambda_entropy: float = 0.0, lambda_gae_adv: float = 0.95,
                 max_grad_norm: float | None = None, target_kl: float | None = None):
        super().__init__(lambda_entropy, lambda_gae_adv, max_grad_norm, target_kl)
        check_setting(self, "ratio_clip", ratio_clip, _is_real(ratio_clip) and ratio_clip > 0.0, "positive, e.g. 0.2")
        self.ratio_clip = ratio_clip

    def get_obj_actor(self, log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantage: torch.Tensor) -> torch.Tensor:
        """The clipped surrogate objective, to minimise."""
        ratio = (log_prob - old_log_prob).exp()
        clipped = ratio.clamp(1.0 - self.ratio_clip, 1.0 + self.ratio_clip)
        return -torch.min(ratio * advantage, clipped * advantage).mean()


class AgentDiscretePPO(AgentPPO):
    """PPO with a categorical policy, for discrete actions."""

    ClassAct = ActorDiscretePPO
    if_discrete = True


class AgentInterPPO(AgentPPO):
    """PPO whose actor and critic share one state encoder and learn with one optimizer."""

    ClassCri = InterGPO
    ClassAct = None  # the shared network acts too

    def get_value(self, state: torch.Tensor) -> torch.Tensor:
        return self.critic.get_value(state)

    def optimize(self, obj_critic: torch.Tensor, obj_actor: torch.Tensor) -> None:
        self.optimizer_update(self.critic_optimizer, obj_critic + obj_actor)


class AgentA2C(AgentOnPolicy):
    """Advantage actor-critic (Mnih et al., 2016): the plain policy gradient, one pass per rollout."""

    arg_defaults = {**AgentOnPolicy.arg_defaults, "repeat_times": 1.0, "batch_size": 2048, "learning_rate": 1e-3}

    def get_obj_actor(self, log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantage: torch.Tensor) -> torch.Tensor:
        return -(log_prob * advantage).mean()


class AgentDiscreteA2C(AgentA2C):
    """A2C with a categorical policy, for discrete actions."""

    ClassAct = ActorDiscretePPO
    if_discrete = True


PUCT_C1, PUCT_C2 = 1.25, 19652.0  # MuZero's pUCT constants: c1 weighs the prior, c2 slowly raises it as visits grow


class SearchTree(NamedTuple):
    """B search trees as fixed-shape tensors: N = num_simulations + 1 nodes each, A actions.

    Node 0 is the root, and simulation i expands node i of every tree, so that one batched model call serves
    all trees. Edge (b, n, a) is action a at node n of tree b.
    """

    child: torch.Tensor  # (B, N, A) int64: the node the edge leads to; 0 while unexpanded (the root is no one's child)
    visit: torch.Tensor  # (B, N, A): the simulations through the edge
    value_sum: torch.Tensor  # (B, N, A): their returns r + γ·G from the edge on; value_sum / visit is Q
    reward: torch.Tensor  # (B, N, A): the model's reward of the edge, set when it is expanded
    prior: torch.Tensor  # (B, N, A): the prediction's policy at the node (mixed with noise at the root)
    value: torch.Tensor  # (B, N): the prediction's value of the node

    def root_policy(self) -> torch.Tensor:
        """The roots' visit distributions (B, A): the search's policy and the policy target."""
        return self.visit[:, 0] / self.visit[:, 0].sum(dim=1, keepdim=True)

    def root_value(self) -> torch.Tensor:
        """The roots' values (B,): the mean of the root's predicted value and every simulation's return."""
        return (self.value[:, 0] + self.value_sum[:, 0].sum(dim=1)) / (1 + self.visit[:, 0].sum(dim=1))


@torch.no_grad()
def tree_search(model: nn.Module, state: torch.Tensor, num_simulations: int, gamma: float,
                noise: torch.Tensor | None = None, noise_fraction: float = 0.25) -> SearchTree:
    """MuZero's Monte-Carlo tree search from states (B, state_dim) over `model` (``initial``, ``recurrent``: see
    `MuZeroNet`), all B trees at once.

    Each simulation descends by pUCT to an unexpanded edge, expands it with one batched model call, and backs
    the leaf's value up the path, G ← r + γ·G. Q is min-max normalised over each tree's values so far, so that
    c1 weighs the prior the same at any reward scale (`puct_scores`). A node's visit count includes
    its own expansion, so the first simulation follows the prior; ties go to the lowest action index (argmax's
    first maximum). `noise` (B, A), e.g. Dirichlet samples, is mixed into the roots' prior by `noise_fraction`.
    """
    latent, logits, value = model.initial(state)
    (batch, action_dim), nodes = logits.shape, num_simulations + 1
    rows = torch.arange(batch, device=state.device)
    edges = logits.new_zeros(batch, nodes, action_dim)
    tree = SearchTree(edges.long(), edges.clone(), edges.clone(), edges.clone(), edges.clone(), logits.new_zeros(batch, nodes))
    latents = latent.new_zeros(batch, nodes, latent.shape[1])
    latents[:, 0], tree.prior[:, 0], tree.value[:, 0] = latent, logits.softmax(dim=1), value
    if noise is not None:
        tree.prior[:, 0].lerp_(noise, noise_fraction)
    low, high = value.new_full((batch,), math.inf), value.new_full((batch,), -math.inf)
    for new_node in range(1, nodes):
        node, descending, path = torch.zeros_like(rows), torch.ones_like(rows, dtype=torch.bool), []
        while True:  # a tree that reached its leaf edge stays there, masked out of the path, while the others descend
            action = puct_scores(tree, rows, node, low, high).argmax(dim=1)
            path.append((node, action, descending))
            next_node = tree.child[rows, node, action]
            descending = descending & (next_node > 0)
            if not descending.any():
                break
            node = torch.where(descending, next_node, node)
        latents[:, new_node], reward, logits, value = model.recurrent(latents[rows, node], action)
        tree.prior[:, new_node], tree.value[:, new_node] = logits.softmax(dim=1), value
        tree.child[rows, node, action], tree.reward[rows, node, action] = new_node, reward
        for node, action, on in reversed(path):
            value = torch.where(on, tree.reward[rows, node, action] + gamma * value, value)
            tree.visit[rows, node, action] += on
            tree.value_sum[rows, node, action] += torch.where(on, value, 0.0)
            q = tree.value_sum[rows, node, action] / tree.visit[rows, node, action].clamp_min(1)
            low, high = torch.where(on, low.minimum(q), low), torch.where(on, high.maximum(q), high)
    return tree


def puct_scores(tree: SearchTree, rows: torch.Tensor, node: torch.Tensor, low: torch.Tensor, high: torch.Tensor) -> torch.Tensor:
    """pUCT of each action at `node` of each tree, (B, A): normalised Q + P·√N / (1 + n)·(c1 + log((N + c2 + 1) / c2)).

    An unvisited edge takes its node's value, not the paper's 0 (the bottom of the normalised range): with few
    simulations, 0 lets the first action visited keep every later visit (EfficientZero and mctx do the same).
    """
    visit, value_sum, prior = tree.visit[rows, node], tree.value_sum[rows, node], tree.prior[rows, node]
    parent = 1 + visit.sum(dim=1, keepdim=True)
    node_value = (tree.value[rows, node, None] + value_sum.sum(dim=1, keepdim=True)) / parent
    q = torch.where(visit > 0, value_sum / visit.clamp_min(1), node_value)
    q = ((q - low[:, None]) / (high - low).clamp_min(1e-8)[:, None]).clamp(0.0, 1.0)
    return q + prior * parent.sqrt() / (1 + visit) * (PUCT_C1 + torch.log((parent + PUCT_C2 + 1) / PUCT_C2))


class AgentMCTS(AgentBase):
    """The MCTS family: a tree search over a model chooses each action (`tree_search`), and whole episodes with
    the search's visit distributions and root values are stored (`EpisodeBuffer`) and learned from as unrolls.

    How the search's findings reach the buffer: `select_action` notes them for each step it searches;
    `explore_env` returns them with the steps as one `SearchTransitions` rollout; the trainers' ``buffer.extend``
    cuts each env's column into episodes (`EpisodeBuffer.extend`). A truncated episode carries the prediction's
    value of its final observation, which its value targets bootstrap from; a terminated one has none.

    The model is the network that acts (ClassCri, ``ClassAct = None``): ``initial`` and ``recurrent`` as in
    `MuZeroNet`. A subclass defines its objective on an `Unroll` (`get_obj`). Its rollouts do not fit
    train_and_evaluate_mp's shared slots (`supports_workers`): train it with train_and_evaluate and ``num_envs``.

    Args:
        num_simulations: simulations per search, each one batched model call over the searched envs.
        num_unroll, td_steps: K, the model's unroll steps in training, and n of the n-step value targets.
        temperature: exploration actions are drawn ∝ visits^(1/temperature); 0 takes the most visited.
        dirichlet_alpha, noise_fraction: the Dirichlet noise mixed into the root's prior while exploring.
        priority_alpha: prioritised replay as in the MuZero paper: unroll starts are drawn with probability
            ∝ |search value - n-step target|^priority_alpha, their losses weighted by importance (`EpisodeBuffer`);
            0 draws them uniformly.
    """

    ClassAct = None  # the model acts: its prediction network's policy
    if_off_policy = True  # it learns from stored episodes, not only from its latest policy's
    supports_workers = False
    arg_defaults = dict(
        net_dim=64, batch_size=128, repeat_times=32.0, target_step=64, max_memo=2**12,
        learning_rate=3e-3, warmup_steps=256, eval_gap=1000,
    )

    def __init__(self, num_simulations: int = 8, num_unroll: int = 5, td_steps: int = 50, temperature: float = 1.0,
                 dirichlet_alpha: float = 0.25, noise_fraction: float = 0.25, priority_alpha: float = 0.0):
        for name, value in (("num_simulations", num_simulations), ("num_unroll", num_unroll), ("td_steps", td_steps)):
            check_setting(self, name, value, _is_count(value), "a whole number of at least 1")
        check_setting(self, "temperature", temperature, _is_real(temperature) and temperature >= 0.0, "zero (the most visited action) or positive")
        check_setting(self, "dirichlet_alpha", dirichlet_alpha, _is_real(dirichlet_alpha) and dirichlet_alpha > 0.0, "positive, e.g. 0.25")
        check_setting(self, "noise_fraction", noise_fraction, _is_real(noise_fraction) and 0.0 <= noise_fraction <= 1.0, "in [0, 1]")
        check_setting(self, "priority_alpha", priority_alpha, _is_real(priority_alpha) and priority_alpha >= 0.0,
                      "zero (uniform replay) or positive, e.g. 1.0 as in the paper")
        self.num_simulations, self.num_unroll, self.td_steps = num_simulations, num_unroll, td_steps
        self.temperature, self.dirichlet_alpha, self.noise_fraction = temperature, dirichlet_alpha, noise_fraction
        self.priority_alpha = priority_alpha

    def init(self, *args: Any, **kwargs: Any) -> None:
        super().init(*args, **kwargs)
        self.search_log: list[tuple[torch.Tensor, torch.Tensor]] = []  # (policy, root value) of each step searched

    def make_buffer(self, max_memo: int) -> EpisodeBuffer:
        return EpisodeBuffer(max_memo, self.state_dim, self.action_dim, self.num_unroll, self.td_steps, self.gamma,
                             priority_alpha=self.priority_alpha, device=self.device)

    def search(self, state: torch.Tensor, if_noise: bool = True) -> SearchTree:
        """The search from states (B, state_dim), with fresh Dirichlet noise at the roots if `if_noise`."""
        alpha = torch.full((self.action_dim,), self.dirichlet_alpha, device=self.device)
        noise = torch.distributions.Dirichlet(alpha).sample((len(state),)) if if_noise and self.noise_fraction > 0 else None
        return tree_search(self.actor, state, self.num_simulations, self.gamma, noise, self.noise_fraction)

    def select_action(self, state: torch.Tensor) -> torch.Tensor:
        tree = self.search(state)
        policy = tree.root_policy()
        self.search_log.append((policy, tree.root_value()))
        if self.temperature == 0:
            return policy.argmax(dim=1)
        # visits^(1/T) through the log: for a small T the power itself underflows to 0 for every action; an action
        # never visited stays at log 0 = -inf, probability 0, at every T
        log_policy = policy.log()
        return torch.multinomial(((log_policy - log_policy.amax(dim=1, keepdim=True)) / self.temperature).softmax(dim=1), 1).squeeze(1)

    def explore_env(self, env: Any, horizon: int, if_random: bool = False) -> SearchTransitions:
        """`AgentBase.explore_env` with the search's findings: a `SearchTransitions` of shape ``(horizon, num_envs, ...)``.

        Random warm-up steps store a uniform policy and the prediction's value as their root value.
        """
        self.search_log = []
        rollout = super().explore_env(env, horizon, if_random)
        shape = rollout.reward.shape
        with torch.no_grad():
            if if_random:
                policy = torch.full((*shape, self.action_dim), 1.0 / self.action_dim, device=self.device)
                root_value = self.actor.initial(rollout.state.flatten(0, 1))[2].view(shape)
            else:
                policy, root_value = (torch.stack(found) for found in zip(*self.search_log))  # (horizon, num_envs, ...)
            final_value = torch.zeros(shape, device=self.device)  # only a time limit's cut has a future to bootstrap
            final_value[rollout.truncated] = self.actor.initial(rollout.next_state[rollout.truncated])[2]
        # the buffer holds env units, as for every agent; values return to the scaled units in get_obj
        return SearchTransitions(*rollout, policy, root_value / self.reward_scale, final_value / self.reward_scale)

    def update_net(self, buffer: EpisodeBuffer, new_steps: int) -> dict[str, float]:
        """Gradient steps on sampled unrolls, each transition used ``repeat_times`` times on average (`earn_updates`).

        No step (and ``{}``) until an episode has ended: the buffer keeps whole episodes, and an env's first ones may outlast
        the warm-up (Acrobot's random episodes run to their 500-step limit)."""
        update_times = self.earn_updates(new_steps)
        ready = len(buffer) > 0
        if self.learner_group is not None:  # every rank takes the same steps, or the gradient averaging waits forever
            ready = self.learner_group.mean(torch.tensor([float(ready)], device=self.device)).item() == 1.0
        if not ready:
            return {}
        return run_and_average(self.update_step(buffer) for _ in range(update_times))

    def update_step(self, buffer: EpisodeBuffer) -> dict[str, torch.Tensor]:
        """One gradient step of the model on a batch of unrolls."""
        objective, logs = self.get_obj(buffer.sample_batch(self.batch_size))
        self.optimizer_update(self.critic_optimizer, objective)
        return {"obj_model": objective, **logs}

    def get_obj(self, unroll: Unroll) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The objective on `unroll` to minimise, and its parts to log; per agent."""
        raise NotImplementedError


class AgentMuZero(AgentMCTS):
    """MuZero (Schrittwieser et al., 2020): the search runs on a learned model (`MuZeroNet`) that is trained by
    unrolling it K steps along stored episodes against the search's policies, the n-step values and the rewards.

    As in the paper, the gradient into each dynamics step is halved and the unrolled steps' losses are scaled
    by 1/K, so that the representation's gradient stays of one size however long the unroll. `act` takes the
    prediction network's most likely action, without a search: it is trained toward the search's visit
    distributions, and the Evaluator's hundreds of steps per episode then cost one forward pass each.
    """

    ClassCri = MuZeroNet

    def get_obj(self, unroll: Unroll) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        latent, logits, value = self.critic.initial(unroll.observation)
        logits_k, value_k, reward_k = [logits], [value], [torch.zeros_like(value)]
        for k in range(self.num_unroll):
            latent = latent * 0.5 + latent.detach() * 0.5  # halves the gradient, not the value
            latent, reward, logits, value = self.critic.recurrent(latent, unroll.action[:, k])
            logits_k.append(logits), value_k.append(value), reward_k.append(reward)
        step_weight = torch.tensor([1.0] + [1.0 / self.num_unroll] * self.num_unroll, device=self.device)

        def loss(part: torch.Tensor) -> torch.Tensor:  # (batch, K+1) -> scalar, weighted by step and sample
            return (part @ step_weight * unroll.weight).mean()

        huber = functools.partial(nn.functional.smooth_l1_loss, reduction="none")
        obj_value = loss(huber(torch.stack(value_k, 1), unroll.value * self.reward_scale) * unroll.mask)
        obj_reward = loss(huber(torch.stack(reward_k, 1), unroll.reward * self.reward_scale) * unroll.mask)
        # the policy target is zeros past the episode's end: no policy loss there
        obj_policy = loss(-(unroll.policy * torch.stack(logits_k, 1).log_softmax(dim=2)).sum(dim=2))
        return obj_value + obj_reward + obj_policy, {"obj_value": obj_value, "obj_reward": obj_reward, "obj_policy": obj_policy}
