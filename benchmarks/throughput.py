"""Throughput against its ceilings and SB3: elegantrl's SAC update against plain and fastest-plain PyTorch and SB3's
update, and exploration against the raw env, a plain loop with the same policy network, and SB3's rollout collection."""

from __future__ import annotations

import copy
import csv
import datetime
import functools
import math
import os
import statistics
import time
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from benchmarks.report import fmt, machine, median
from benchmarks.rows import OURS
from elegantrl.agent import make_adam

# ---- learner throughput: elegantrl's SAC update against plain PyTorch and SB3 -----------------


class PlainSAC:
    """The ceiling: SAC's gradient step written directly in torch, in one method, as in a single script.

    The same arithmetic as one `AgentSAC` step: an actor MLP whose last layer gives the mean and
    log-std of a tanh-squashed Gaussian, two independent Q MLPs with target copies, a learned
    log-alpha, Adam everywhere, SmoothL1 critic losses, Polyak averaging with `tau`; batches are
    drawn with ``torch.randint`` from preallocated tensors. No library around it.
    """

    def __init__(self, net_dim: int, data: dict[str, torch.Tensor], batch_size: int = 256, learning_rate: float = 1e-3,
                 gamma: float = 0.99, tau: float = 5e-3):
        """Builds the networks for the shapes of `data` (state, action, reward, undone, next_state tensors)."""
        state_dim, action_dim = data["state"].shape[1], data["action"].shape[1]
        self.device = data["state"].device  # the networks live where the data does

        def mlp(dim_in: int, dim_out: int) -> nn.Sequential:
            return nn.Sequential(nn.Linear(dim_in, net_dim), nn.ReLU(), nn.Linear(net_dim, net_dim), nn.ReLU(),
                                 nn.Linear(net_dim, dim_out)).to(self.device)

        self.data, self.size = data, len(data["reward"])
        self.batch_size, self.gamma, self.tau = batch_size, gamma, tau
        self.actor = mlp(state_dim, 2 * action_dim)
        self.q1, self.q2 = mlp(state_dim + action_dim, 1), mlp(state_dim + action_dim, 1)
        self.q1_target, self.q2_target = copy.deepcopy(self.q1).requires_grad_(False), copy.deepcopy(self.q2).requires_grad_(False)
        self.critic_params = [*self.q1.parameters(), *self.q2.parameters()]
        self.target_params = [*self.q1_target.parameters(), *self.q2_target.parameters()]
        self.log_alpha = torch.zeros((), device=self.device, requires_grad=True)
        self.target_entropy = -float(action_dim)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), learning_rate)
        self.critic_optimizer = torch.optim.Adam(self.critic_params, learning_rate)
        self.alpha_optimizer = torch.optim.Adam([self.log_alpha], learning_rate)

    def sample_action(self, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A tanh-squashed Gaussian action and its log-probability (with the tanh correction)."""
        mean, log_std = self.actor(state).chunk(2, dim=1)
        log_std = log_std.clamp(-16.0, 2.0)
        noise = torch.randn_like(mean)
        u = mean + log_std.exp() * noise
        log_prob = -0.5 * noise.pow(2) - log_std - 0.5 * math.log(2 * math.pi) - 2.0 * (math.log(2.0) - u - F.softplus(-2.0 * u))
        return u.tanh(), log_prob.sum(dim=1)

    def sample_batch(self) -> tuple[torch.Tensor, ...]:
        """A uniform batch of (state, action, reward, undone, next_state) from the preallocated tensors."""
        index = torch.randint(self.size, (self.batch_size,), device=self.device)
        return tuple(self.data[key][index] for key in ("state", "action", "reward", "undone", "next_state"))

    def update(self) -> None:
        """One gradient step on the twin critics, then on the temperature and the actor."""
        state, action, reward, undone, next_state = self.sample_batch()
        alpha = self.log_alpha.detach().exp()

        with torch.no_grad():
            next_action, next_log_prob = self.sample_action(next_state)
            next_state_action = torch.cat((next_state, next_action), dim=1)
            next_q = torch.min(self.q1_target(next_state_action), self.q2_target(next_state_action)).squeeze(1)
            q_label = reward + undone * self.gamma * (next_q - alpha * next_log_prob)
        state_action = torch.cat((state, action), dim=1)
        q1, q2 = self.q1(state_action).squeeze(1), self.q2(state_action).squeeze(1)
        critic_loss = F.smooth_l1_loss(q1, q_label) + F.smooth_l1_loss(q2, q_label)
        self.critic_optimizer.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_optimizer.step()
        with torch.no_grad():
            for target, current in zip(self.target_params, self.critic_params):
                target.lerp_(current, self.tau)

        new_action, log_prob = self.sample_action(state)
        alpha_loss = -(self.log_alpha * (log_prob.detach() + self.target_entropy)).mean()
        self.alpha_optimizer.zero_grad(set_to_none=True)
        alpha_loss.backward()
        self.alpha_optimizer.step()
        for param in self.critic_params:  # the actor needs dQ/da only, not gradients for the critics' weights
            param.requires_grad_(False)
        new_state_action = torch.cat((state, new_action), dim=1)
        q_value = torch.min(self.q1(new_state_action), self.q2(new_state_action)).squeeze(1)
        for param in self.critic_params:
            param.requires_grad_(True)
        actor_loss = (self.log_alpha.detach().exp() * log_prob - q_value).mean()
        self.actor_optimizer.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.actor_optimizer.step()


class FastSAC(PlainSAC):
    """The fastest plain SAC step found on one CPU thread: `PlainSAC`'s arithmetic, written for speed.

    What changes: the two critics are one network with stacked weights, so that each layer of both
    Q heads is one ``torch.baddbmm``; Adam is ``fused=True`` (measured faster than ``foreach=True``
    and the per-tensor loop on torch 2.13's CPU build); the Polyak update is one ``_foreach_lerp_``;
    the actor's step reads the critics through detached weights instead of toggling
    ``requires_grad`` on them. Its critic loss is the sum of the two heads' SmoothL1 means, as in
    `PlainSAC`; only the order of floating-point operations differs.
    """

    def __init__(self, net_dim: int, data: dict[str, torch.Tensor], batch_size: int = 256, learning_rate: float = 1e-3,
                 gamma: float = 0.99, tau: float = 5e-3):
        """Builds the networks for the shapes of `data`, as `PlainSAC` does, then stacks the two critics."""
        super().__init__(net_dim, data, batch_size, learning_rate, gamma, tau)
        heads = (self.q1, self.q2)
        layers = [[head[i] for head in heads] for i in range(0, len(self.q1), 2)]  # the Linear layers, skipping the ReLUs
        # (2, in, out) weights and (2, 1, out) biases, from each head's own default initialisation
        self.critic_params = [tensor.detach().contiguous().requires_grad_(True) for pair in layers for tensor in (
            torch.stack([linear.weight.t() for linear in pair]), torch.stack([linear.bias for linear in pair]).unsqueeze(1))]
        del self.q1, self.q2, self.q1_target, self.q2_target
        self.target_params = [param.detach().clone() for param in self.critic_params]
        # fused where this torch has it for the CPU (2.4 and later), as elegantrl's own agents do
        self.actor_optimizer = make_adam(self.actor.parameters(), learning_rate)
        self.critic_optimizer = make_adam(self.critic_params, learning_rate)
        self.alpha_optimizer = make_adam([self.log_alpha], learning_rate)

    @staticmethod
    def twin_q(state_action: torch.Tensor, params: list[torch.Tensor]) -> torch.Tensor:
        """Both Q heads for a batch (batch, state + action): (2, batch), one batched matmul per layer."""
        hidden = state_action.expand(2, *state_action.shape)
        for i in range(0, len(params), 2):
            hidden = torch.baddbmm(params[i + 1], hidden, params[i])
            if i + 2 < len(params):
                hidden = hidden.relu()
        return hidden.squeeze(2)

    def update(self) -> None:
        """One gradient step on the twin critics, then on the temperature and the actor."""
        state, action, reward, undone, next_state = self.sample_batch()
        alpha = self.log_alpha.detach().exp()

        with torch.no_grad():
            next_action, next_log_prob = self.sample_action(next_state)
            next_q = self.twin_q(torch.cat((next_state, next_action), dim=1), self.target_params).amin(dim=0)
            q_label = reward + undone * self.gamma * (next_q - alpha * next_log_prob)
        q_values = self.twin_q(torch.cat((state, action), dim=1), self.critic_params)
        # the sum over both heads of each head's mean loss, in one call
        critic_loss = F.smooth_l1_loss(q_values, q_label.expand_as(q_values), reduction="sum") / self.batch_size
        self.critic_optimizer.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_optimizer.step()
        with torch.no_grad():
            torch._foreach_lerp_(self.target_params, self.critic_params, self.tau)

        new_action, log_prob = self.sample_action(state)
        alpha_loss = -(self.log_alpha * (log_prob.detach() + self.target_entropy)).mean()
        self.alpha_optimizer.zero_grad(set_to_none=True)
        alpha_loss.backward()
        self.alpha_optimizer.step()
        # the actor needs dQ/da only: detached weights give no gradients to the critics
        frozen_params = [param.detach() for param in self.critic_params]
        q_value = self.twin_q(torch.cat((state, new_action), dim=1), frozen_params).amin(dim=0)
        actor_loss = (self.log_alpha.detach().exp() * log_prob - q_value).mean()
        self.actor_optimizer.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.actor_optimizer.step()


def sb3_sac_updater(net_dim: int, data: dict[str, torch.Tensor], batch_size: int = 256, learning_rate: float = 1e-3,
                    gamma: float = 0.99, tau: float = 5e-3, seed: int = 0, device: str = "cpu") -> Callable[[int], int]:
    """SB3's own SAC update: `stable_baselines3.SAC` on Pendulum-v1 with ``net_arch=[net_dim, net_dim]``, its replay
    buffer holding the transitions of `data`. Returns a function that runs ``model.train(gradient_steps=n)`` and
    returns n.

    The buffer is filled with `ReplayBuffer.add`, one transition at a time, rather than by `learn`, so that both
    libraries learn from the same transitions and no SB3 gradient step runs before the timings; its actions are
    already in [-1, 1], the scaled form SB3 stores.
    """
    from stable_baselines3 import SAC
    from stable_baselines3.common.logger import Logger

    model = SAC("MlpPolicy", gym.make("Pendulum-v1"), learning_rate=learning_rate, buffer_size=len(data["reward"]),
                learning_starts=0, batch_size=batch_size, tau=tau, gamma=gamma, policy_kwargs=dict(net_arch=[net_dim, net_dim]),
                seed=seed, device=device)
    model.set_logger(Logger(folder=None, output_formats=[]))  # train() records its losses; `learn` would set one up
    arrays = {key: value.cpu().numpy() for key, value in data.items()}
    for i in range(len(arrays["reward"])):
        model.replay_buffer.add(arrays["state"][i:i + 1], arrays["next_state"][i:i + 1], arrays["action"][i:i + 1],
                                arrays["reward"][i:i + 1], 1.0 - arrays["undone"][i:i + 1], [{}])

    def update(num_steps: int) -> int:
        model.train(gradient_steps=num_steps, batch_size=batch_size)
        return num_steps
    return update


def ratio_cells(ours: list[float], ceiling: list[float]) -> str:
    """Table cells for interleaved timings: both medians, the ratio of the medians, and the per-pair
    ratios' median and quartiles (pairs are neighbouring timings, which see the same machine drift)."""
    pairs = [a / b for a, b in zip(ours, ceiling)]
    quartiles = statistics.quantiles(pairs, n=4) if len(pairs) > 1 else [pairs[0], pairs[0], pairs[0]]
    return (f"{fmt(median(ours))} | {fmt(median(ceiling))} | {median(ours) / median(ceiling):.3f} "
            f"| {median(pairs):.3f} ({quartiles[0]:.3f}–{quartiles[2]:.3f})")


def per_second(work: Callable[[], int]) -> float:
    """Times one call of `work`, which returns how much it did (gradient steps, env steps): the rate. On a GPU
    the timing waits for the queued kernels at both ends, so that each call is charged its own work."""
    synchronize = torch.cuda.synchronize if torch.cuda.is_initialized() else (lambda: None)
    synchronize()
    start = time.perf_counter()
    done = work()
    synchronize()
    return done / (time.perf_counter() - start)


def write_throughput_report(name: str, title: str, records: list[dict[str, Any]], setup: str, table: str,
                            out: str, command: str, note: str = "") -> None:
    """Writes ``<name>.csv`` (one line per timing) and ``<name>.md`` (command, `note` if any, date, machine, then
    `setup`, a markdown list ending in a blank line, then the table); prints the table."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{name}.csv"), "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=["row", *records[0]])
        writer.writeheader()
        writer.writerows({"row": name, **r} for r in records)
    with open(os.path.join(out, f"{name}.md"), "w") as file:
        file.write(f"# {name}: {title}\n\n- Command: `{command}`\n" + (f"- Note: {note}\n" if note else "") +
                   f"- Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}\n"
                   f"- Machine: {machine()}\n" + setup + table)
    print(f"\n## {name}\n\n" + table)


SAC_REFERENCES = ("plain-pytorch", "fastest-plain-pytorch", "sb3")  # the sac-throughput report's names, in its order


def run_sac_throughput(out: str, command: str, repeats: int, net_dims: tuple[int, ...] = (128, 256),
                       steps: int = 50, batch_size: int = 256, note: str = "", device: str = "cpu") -> bool:
    """Measures SAC gradient steps per second, elegantrl's `AgentSAC.update_net` against three references:
    `PlainSAC`, `FastSAC` and SB3's own `SAC.train`.

    All learn from the same 10,000 random Pendulum transitions with the same network widths, batch,
    learning rate, gamma and tau, on one torch thread. Per net_dim, after a warm-up of each, the four
    are timed in turn (elegantrl, plain, fastest plain, SB3, elegantrl, ...) `repeats` times, `steps`
    gradient steps per timing; the report gives the median updates/s of each and elegantrl's ratio to
    each reference (1 = as fast). Many short timings rather than a few long ones: on a shared machine
    the speed drifts by tens of percent within seconds, and neighbouring timings see the same drift.
    Writes ``out/sac-throughput.md`` and ``.csv``; returns True. With a CUDA `device` (gpu_check.py) all four
    learn on that GPU and the report is ``sac-throughput-cuda``.
    """
    from elegantrl.agent import AgentSAC
    from elegantrl.env import PreprocessEnv
    from elegantrl.replay import ReplayBuffer

    torch.set_num_threads(1)
    if torch.device(device).type == "cuda":  # the current device: what `per_second`'s synchronize waits for
        torch.cuda.set_device(device)
    env = PreprocessEnv("Pendulum-v1")
    records: list[dict[str, Any]] = []
    for net_dim in net_dims:
        torch.manual_seed(0)
        agent = AgentSAC()
        # repeat_times 1: a rollout of steps × batch_size transitions buys exactly `steps` gradient steps
        agent.init(net_dim, env.state_dim, env.action_dim, learning_rate=1e-3, batch_size=batch_size, repeat_times=1.0,
                   soft_update_tau=5e-3, device=device)
        agent.reset_exploration(env, seed=0)
        buffer = ReplayBuffer(10_000, env.state_dim, env.action_dim, if_discrete=False, device=device)
        buffer.extend(agent.explore_env(env, 10_000, if_random=True))
        n = len(buffer)
        data = dict(state=buffer.state[:n].clone(), action=buffer.action[:n].clone(), reward=buffer.reward[:n].clone(),
                    undone=(~buffer.terminated[:n]).float(), next_state=buffer.next_state[:n].clone())

        def elegantrl_update(num_steps: int, agent: AgentSAC = agent, buffer: ReplayBuffer = buffer) -> int:
            before = agent.update_count
            agent.update_net(buffer, new_steps=num_steps * batch_size)  # repeat_times=1: one step per batch_size new transitions
            return agent.update_count - before

        def loop(num_steps: int, learner: PlainSAC) -> int:
            for _ in range(num_steps):
                learner.update()
            return num_steps

        updaters = {OURS: elegantrl_update,
                    "plain-pytorch": functools.partial(loop, learner=PlainSAC(net_dim, data, batch_size=batch_size)),
                    "fastest-plain-pytorch": functools.partial(loop, learner=FastSAC(net_dim, data, batch_size=batch_size)),
                    "sb3": sb3_sac_updater(net_dim, data, batch_size=batch_size, device=device)}
        torch.set_num_threads(1)  # as the protocol says, whatever building the SB3 model did
        for update in updaters.values():  # warm-up of each: allocator, Adam state, first-call costs
            update(20)
        for repeat in range(repeats):
            for library, update in updaters.items():
                records.append(dict(net_dim=net_dim, repeat=repeat, library=library,
                                    updates_per_s=per_second(functools.partial(update, steps))))
                print(f"[sac-throughput {device} net_dim {net_dim} repeat {repeat}] {library}: "
                      f"{records[-1]['updates_per_s']:.1f} updates/s", flush=True)

    lines = ["| net_dim | reference | elegantrl updates/s | reference updates/s | ratio of medians elegantrl / reference "
             "| per-pair ratios: median (quartiles) |", "|---|---|---|---|---|---|"]
    for net_dim in net_dims:
        rates = {library: [r["updates_per_s"] for r in records if r["net_dim"] == net_dim and r["library"] == library]
                 for library in (OURS, *SAC_REFERENCES)}
        for reference in SAC_REFERENCES:
            lines.append(f"| {net_dim} | {reference} | {ratio_cells(rates[OURS], rates[reference])} |")
    table = "\n".join(lines) + "\n"
    where = "CPU" if torch.device(device).type == "cpu" else (
        f"{torch.cuda.get_device_name(device)} ({device}) for all four, each timing waiting for the GPU at both ends; "
        "fastest-plain-pytorch is the loop found fastest on one CPU thread, a reference on the GPU, not a proven ceiling")
    setup = (
        f"- Setup: Pendulum-v1 sizes (state_dim {env.state_dim}, action_dim {env.action_dim}), 10,000 random transitions, "
        f"batch {batch_size}, Adam lr 1e-3, gamma 0.99, tau 0.005, one torch thread, {where}. All: actor MLP [state, net_dim, net_dim, "
        "2 × action] (tanh-squashed Gaussian), two critic MLPs [state + action, net_dim, net_dim, 1] with targets, learned "
        "log-alpha, one critic, temperature and actor step per update.\n"
        f"- elegantrl: `AgentSAC.update_net(buffer, new_steps)` on an `elegantrl.replay.ReplayBuffer`, {steps} gradient steps per call.\n"
        f"- plain-pytorch: `PlainSAC.update()` in benchmarks/throughput.py, {steps} calls in a loop, batches from preallocated "
        "tensors; SmoothL1 critic losses, the same arithmetic as elegantrl's.\n"
        "- fastest-plain-pytorch: `FastSAC.update()`, PlainSAC's arithmetic with the twin critics as stacked weights (one "
        "`torch.baddbmm` per layer for both heads), fused Adam, one `torch._foreach_lerp_` for the Polyak update, and the "
        "actor's step reading the critics through detached weights.\n"
        "- sb3: `stable_baselines3.SAC.train(gradient_steps, batch_size)` with `net_arch=[net_dim, net_dim]`, `ent_coef='auto'`, "
        "its replay buffer filled with the same transitions by `ReplayBuffer.add`; SB3's own update as it is (MSE critic "
        "losses, one actor sample per step for both the temperature and the actor, numpy batches converted each step, "
        "a `.item()` per loss for its logger).\n"
        f"- Timing: per net_dim a 20-step warm-up of each, then {repeats} repeats interleaved (elegantrl, plain, fastest plain, "
        "SB3, elegantrl, ...); medians over repeats; the ratio is of the medians; the per-pair ratios compare each elegantrl "
        "timing with the reference's timing of the same repeat (median and interquartile range).\n\n"
    )
    name = "sac-throughput" if torch.device(device).type == "cpu" else "sac-throughput-cuda"
    write_throughput_report(name, "SAC learner updates per second, elegantrl against plain PyTorch, "
                            "the fastest plain loop and SB3", records, setup, table, out, command, note)
    return True


# ---- exploration throughput: elegantrl's explore_env against the raw env, a plain policy loop and SB3 ----


def raw_env_stepper(env_id: str, num_envs: int, seed: int = 0) -> Callable[[int], int]:
    """The ceiling: the plain gymnasium env (or a sync vector env of `num_envs`) with random actions.

    Returns a function that steps it `horizon` times (per env) and returns the env steps taken. One
    env is reset when its episode ends; the vector env resets its sub-envs in the same step, the
    autoreset mode elegantrl's `build_vector_env` uses, so both do the same resets.
    """
    if num_envs == 1:
        env = gym.make(env_id)
        env.reset(seed=seed)
        env.action_space.seed(seed)

        def step(horizon: int) -> int:
            for _ in range(horizon):
                _, _, terminated, truncated, _ = env.step(env.action_space.sample())
                if terminated or truncated:
                    env.reset()
            return horizon
    else:
        env = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync",
                           vector_kwargs=dict(autoreset_mode=gym.vector.AutoresetMode.SAME_STEP))
        env.reset(seed=seed)
        env.action_space.seed(seed)

        def step(horizon: int) -> int:
            for _ in range(horizon):
                env.step(env.action_space.sample())
            return horizon * num_envs
    return step


def policy_env_stepper(env_id: str, num_envs: int, net_dim: int = 64, seed: int = 0) -> Callable[[int], int]:
    """The ceiling with the policy's cost: the plain gymnasium env stepped by an untrained policy network in a loop.

    The network is the elegantrl PPO family's actor, written out: an MLP [state, net_dim, net_dim, action]
    with Tanh, sampling by ``torch.multinomial`` on its softmax (Discrete) or as mean + std · noise,
    squashed by tanh and scaled to the action box (Box); one forward pass per step for all envs. The
    states, actions, rewards and terminated and truncated flags go into preallocated
    ``(horizon, num_envs, ...)`` arrays, since a collection keeps what it collects. The env is
    `raw_env_stepper`'s: one env reset when its episode ends, or a same-step-autoreset sync vector env.
    Returns a function that steps it `horizon` times (per env) and returns the env steps taken.
    """
    single = num_envs == 1
    env = gym.make(env_id) if single else gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync",
                                                         vector_kwargs=dict(autoreset_mode=gym.vector.AutoresetMode.SAME_STEP))
    action_space = env.action_space if single else env.single_action_space
    observation_space = env.observation_space if single else env.single_observation_space
    discrete = isinstance(action_space, gym.spaces.Discrete)
    state_dim = observation_space.shape[0]
    action_dim = int(action_space.n) if discrete else action_space.shape[0]
    torch.manual_seed(seed)
    policy = nn.Sequential(nn.Linear(state_dim, net_dim), nn.Tanh(), nn.Linear(net_dim, net_dim), nn.Tanh(), nn.Linear(net_dim, action_dim))
    std = torch.full((action_dim,), -0.5).exp()  # ActorPPO's initial log std
    scale = None if discrete else action_space.high.astype(np.float32)  # the box is symmetric on both envs measured
    state = np.asarray(env.reset(seed=seed)[0], dtype=np.float32).reshape(num_envs, state_dim)

    def step(horizon: int) -> int:
        nonlocal state
        states = np.empty((horizon, num_envs, state_dim), dtype=np.float32)
        actions = np.empty((horizon, num_envs) if discrete else (horizon, num_envs, action_dim), dtype=np.int64 if discrete else np.float32)
        rewards = np.empty((horizon, num_envs), dtype=np.float32)
        terminals = np.empty((horizon, num_envs), dtype=bool)
        truncates = np.empty((horizon, num_envs), dtype=bool)
        with torch.no_grad():
            for t in range(horizon):
                output = policy(torch.from_numpy(state))
                if discrete:
                    action = torch.multinomial(output.softmax(dim=1), 1).squeeze(1).numpy()
                    env_action = action[0] if single else action
                else:
                    action = (output + std * torch.randn_like(output)).numpy()
                    env_action = np.tanh(action[0] if single else action) * scale
                states[t], actions[t] = state, action
                next_state, rewards[t], terminals[t], truncates[t], _ = env.step(env_action)
                if single and (terminals[t, 0] or truncates[t, 0]):
                    next_state = env.reset()[0]
                state = np.asarray(next_state, dtype=np.float32).reshape(num_envs, state_dim)
        return horizon * num_envs
    return step


def sb3_collector(env_id: str, agent_name: str, num_envs: int, horizon: int, seed: int = 0) -> Callable[[int], int]:
    """SB3's rollout collection: `PPO.collect_rollouts` into its `RolloutBuffer`, on ``make_vec_env(env_id, num_envs)``.

    PPO is the SB3 algorithm of elegantrl's `agent_name` (AgentPPO, AgentDiscretePPO), with the same widths
    (``net_arch=dict(pi=[64, 64], vf=[64, 64])``, Tanh). Returns a function that collects up to `horizon` steps per
    env and returns the env steps taken. Its number includes what SB3 does per step: the policy and value forward
    passes, the log-probability, the Monitor wrapper, the value of a truncated episode's final observation, and at
    the end of each call the returns and advantages.
    """
    if not agent_name.endswith("PPO"):
        raise ValueError(f"sb3_collector times SB3's PPO collection, but the case's agent is {agent_name}; "
                         "use AgentPPO or AgentDiscretePPO, or add the SB3 algorithm for it")
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import Logger

    model = PPO("MlpPolicy", make_vec_env(env_id, n_envs=num_envs, seed=seed), n_steps=horizon,
                policy_kwargs=dict(net_arch=dict(pi=[64, 64], vf=[64, 64])), seed=seed, device="cpu")
    model.set_logger(Logger(folder=None, output_formats=[]))
    # `learn` would train after every rollout, and PPO has no learning_starts to stop that: this is what `learn`
    # does before its loop (resets the env, sets up the callbacks), then its collection call alone
    _, callback = model._setup_learn(total_timesteps=horizon * num_envs)
    callback.on_training_start(locals(), globals())

    def collect(steps_per_env: int) -> int:
        model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=steps_per_env)
        return steps_per_env * num_envs
    return collect


def elegantrl_explorer(env_id: str, agent_name: str, num_envs: int, seed: int = 0) -> Callable[[int], int]:
    """elegantrl's collection: `agent.explore_env` with the agent's own (untrained) policy.

    The agent is built with ``init(64, ...)`` (the PPO family's net_dim) on one `PreprocessEnv`, or on
    ``build_vector_env(PreprocessEnv(env_id), num_envs)``. Returns a function that collects `horizon`
    steps per env and returns the env steps taken.
    """
    from elegantrl import agent as agent_module
    from elegantrl.env import PreprocessEnv, build_vector_env

    single = PreprocessEnv(env_id)
    env = single if num_envs == 1 else build_vector_env(single, num_envs)
    torch.manual_seed(seed)
    agent = getattr(agent_module, agent_name)()
    agent.init(64, single.state_dim, single.action_dim, device="cpu")
    agent.reset_exploration(env, seed=seed)

    def step(horizon: int) -> int:
        before = agent.total_steps
        agent.explore_env(env, horizon)
        return agent.total_steps - before
    return step


ENV_REFERENCES = ("raw-gymnasium", "plain-policy-loop", "sb3")  # the env-throughput report's names, in its order


def run_env_throughput(out: str, command: str, repeats: int, steps: int = 4096,
                       cases: tuple[tuple[str, str], ...] = (("CartPole-v1", "AgentDiscretePPO"), ("Pendulum-v1", "AgentPPO")),
                       env_counts: tuple[int, ...] = (1, 8), note: str = "") -> bool:
    """Measures env steps per second collected by elegantrl's `explore_env` against three references: the raw
    env with random actions, a plain loop with the same policy network, and SB3's PPO rollout collection.

    Per (env, agent) and number of envs: a warm-up of each, then `repeats` timings interleaved
    (elegantrl, raw, plain policy loop, SB3, elegantrl, ...), `steps` env steps per timing
    (``steps // num_envs`` per env). elegantrl's number includes its policy's forward pass and sampling,
    `PreprocessEnv` and the rollout arrays. The raw env alone is the ceiling of the env; the plain
    policy loop adds the forward pass and the arrays no collection can skip; SB3 is the other library.
    Writes ``out/env-throughput.md`` and ``.csv``; returns True.
    """
    torch.set_num_threads(1)
    records: list[dict[str, Any]] = []
    for env_id, agent_name in cases:
        for num_envs in env_counts:
            horizon = steps // num_envs
            collectors = {OURS: elegantrl_explorer(env_id, agent_name, num_envs), "raw-gymnasium": raw_env_stepper(env_id, num_envs),
                          "plain-policy-loop": policy_env_stepper(env_id, num_envs),
                          "sb3": sb3_collector(env_id, agent_name, num_envs, horizon)}
            torch.set_num_threads(1)  # as the protocol says, whatever building the SB3 model did
            for collect in collectors.values():  # warm-up: first-call costs, allocator
                collect(horizon // 4)
            for repeat in range(repeats):
                for library, collect in collectors.items():
                    rate = per_second(functools.partial(collect, horizon))
                    records.append(dict(env_id=env_id, agent=agent_name, num_envs=num_envs, repeat=repeat, library=library, steps_per_s=rate))
                    print(f"[env-throughput {env_id} {num_envs} env(s) repeat {repeat}] {library}: {rate:,.0f} env steps/s", flush=True)

    lines = ["| env | elegantrl agent | envs | reference | elegantrl env steps/s | reference env steps/s "
             "| ratio of medians elegantrl / reference | per-pair ratios: median (quartiles) |", "|---|---|---|---|---|---|---|---|"]
    for env_id, agent_name in cases:
        for num_envs in env_counts:
            rates = {library: [r["steps_per_s"] for r in records
                               if r["env_id"] == env_id and r["num_envs"] == num_envs and r["library"] == library]
                     for library in (OURS, *ENV_REFERENCES)}
            for reference in ENV_REFERENCES:
                lines.append(f"| {env_id} | {agent_name.removeprefix('Agent')} | {num_envs} | {reference} "
                             f"| {ratio_cells(rates[OURS], rates[reference])} |")
    table = "\n".join(lines) + "\n"
    setup = (
        "- elegantrl: `agent.explore_env(env, horizon)` with the agent's own stochastic policy after `agent.init(64, ...)` "
        "(untrained), on `PreprocessEnv(id)` for 1 env and `build_vector_env(PreprocessEnv(id), 8)` (SyncVectorEnv, "
        "same-step autoreset) for 8; it includes the policy's forward pass and sampling, the wrapper and the rollout arrays.\n"
        "- raw-gymnasium (the env's ceiling): `gym.make(id)` stepped with `env.action_space.sample()` and reset when an episode "
        "ends, or `gym.make_vec(id, num_envs=8, vectorization_mode='sync')` with the same same-step autoreset.\n"
        "- plain-policy-loop (the ceiling with the policy): the same raw env stepped by an untrained MLP [state, 64, 64, action] "
        "with Tanh (the PPO family's actor), sampled as elegantrl samples (multinomial of the softmax; mean + std · noise, "
        "tanh, scaled to the box), one forward pass per step, states, actions, rewards and flags stored in preallocated "
        "arrays; `policy_env_stepper` in benchmarks/throughput.py.\n"
        "- sb3: `PPO.collect_rollouts` (after what `learn` does before its loop, `_setup_learn`) on `make_vec_env(id, n_envs)` "
        "(DummyVecEnv, Monitor), `net_arch=dict(pi=[64, 64], vf=[64, 64])`, Tanh, `n_steps` = the timing's steps per env; "
        "it includes the value forward pass, log-probabilities, the RolloutBuffer, and the returns and advantages at the "
        "end of each timing. PPO because both cases' agents are PPO, and its collection never trains.\n"
        f"- Timing: one torch thread, CPU; per case a warm-up of each, then {repeats} repeats interleaved (elegantrl, raw, "
        f"plain policy loop, SB3, elegantrl, ...), {steps:,d} env steps per timing; medians over repeats; the ratio is of "
        "the medians; the per-pair ratios compare each elegantrl timing with the reference's timing of the same repeat "
        "(median and interquartile range).\n\n"
    )
    write_throughput_report("env-throughput", "env steps per second collected by elegantrl against the raw env, a plain "
                            "policy loop and SB3", records, setup, table, out, command, note)
    return True


THROUGHPUT_ROWS: dict[str, Callable[..., bool]] = {"sac-throughput": run_sac_throughput, "env-throughput": run_env_throughput}
