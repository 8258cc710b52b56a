"""Throughput against its ceiling: elegantrl's SAC update against plain PyTorch, and exploration against the raw env."""

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
import torch
import torch.nn.functional as F
from torch import nn

from benchmarks.report import fmt, machine, median
from benchmarks.rows import OURS

# ---- learner throughput: elegantrl's SAC update against a plain-PyTorch one ------------------


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

        def mlp(dim_in: int, dim_out: int) -> nn.Sequential:
            return nn.Sequential(nn.Linear(dim_in, net_dim), nn.ReLU(), nn.Linear(net_dim, net_dim), nn.ReLU(), nn.Linear(net_dim, dim_out))

        self.data, self.size = data, len(data["reward"])
        self.batch_size, self.gamma, self.tau = batch_size, gamma, tau
        self.actor = mlp(state_dim, 2 * action_dim)
        self.q1, self.q2 = mlp(state_dim + action_dim, 1), mlp(state_dim + action_dim, 1)
        self.q1_target, self.q2_target = copy.deepcopy(self.q1).requires_grad_(False), copy.deepcopy(self.q2).requires_grad_(False)
        self.critic_params = [*self.q1.parameters(), *self.q2.parameters()]
        self.target_params = [*self.q1_target.parameters(), *self.q2_target.parameters()]
        self.log_alpha = torch.zeros((), requires_grad=True)
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

    def update(self) -> None:
        """One gradient step on the twin critics, then on the temperature and the actor."""
        index = torch.randint(self.size, (self.batch_size,))
        state, action, reward, undone, next_state = (self.data[key][index] for key in ("state", "action", "reward", "undone", "next_state"))
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


def ratio_cells(ours: list[float], ceiling: list[float]) -> str:
    """Table cells for interleaved timings: both medians, the ratio of the medians, and the per-pair
    ratios' median and quartiles (pairs are neighbouring timings, which see the same machine drift)."""
    pairs = [a / b for a, b in zip(ours, ceiling)]
    quartiles = statistics.quantiles(pairs, n=4) if len(pairs) > 1 else [pairs[0], pairs[0], pairs[0]]
    return (f"{fmt(median(ours))} | {fmt(median(ceiling))} | {median(ours) / median(ceiling):.3f} "
            f"| {median(pairs):.3f} ({quartiles[0]:.3f}–{quartiles[2]:.3f})")


def per_second(work: Callable[[], int]) -> float:
    """Times one call of `work`, which returns how much it did (gradient steps, env steps): the rate."""
    start = time.perf_counter()
    done = work()
    return done / (time.perf_counter() - start)


def write_throughput_report(name: str, title: str, records: list[dict[str, Any]], setup: str, table: str,
                            out: str, command: str) -> None:
    """Writes ``<name>.csv`` (one line per timing) and ``<name>.md`` (command, date, machine, then `setup`, a
    markdown list ending in a blank line, then the table); prints the table."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{name}.csv"), "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=["row", *records[0]])
        writer.writeheader()
        writer.writerows({"row": name, **r} for r in records)
    with open(os.path.join(out, f"{name}.md"), "w") as file:
        file.write(f"# {name}: {title}\n\n- Command: `{command}`\n"
                   f"- Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}\n"
                   f"- Machine: {machine()}\n" + setup + table)
    print(f"\n## {name}\n\n" + table)


def run_sac_throughput(out: str, command: str, repeats: int, net_dims: tuple[int, ...] = (128, 256),
                       steps: int = 50, batch_size: int = 256) -> bool:
    """Measures SAC gradient steps per second, elegantrl's `AgentSAC.update_net` against `PlainSAC`.

    Both learn from the same 10,000 random Pendulum transitions with the same network sizes and
    batch, on one torch thread. Per net_dim, after a warm-up of each, the two are timed in turn
    (A, B, A, B, ...) `repeats` times, `steps` gradient steps per timing; the report gives the
    median updates/s of each and the ratio elegantrl / plain (1 = no library overhead). Many short
    timings rather than a few long ones: on a shared machine the speed drifts by tens of percent
    within seconds, and neighbouring timings see the same drift.
    Writes ``out/sac-throughput.md`` and ``.csv``; returns True.
    """
    from elegantrl.agent import AgentSAC
    from elegantrl.env import PreprocessEnv
    from elegantrl.replay import ReplayBuffer

    torch.set_num_threads(1)
    env = PreprocessEnv("Pendulum-v1")
    records: list[dict[str, Any]] = []
    for net_dim in net_dims:
        torch.manual_seed(0)
        agent = AgentSAC()
        # repeat_times 1: a rollout of steps × batch_size transitions buys exactly `steps` gradient steps
        agent.init(net_dim, env.state_dim, env.action_dim, learning_rate=1e-3, batch_size=batch_size, repeat_times=1.0,
                   soft_update_tau=5e-3, device="cpu")
        agent.reset_exploration(env, seed=0)
        buffer = ReplayBuffer(10_000, env.state_dim, env.action_dim, if_discrete=False)
        buffer.extend(agent.explore_env(env, 10_000, if_random=True))
        n = len(buffer)
        data = dict(state=buffer.state[:n].clone(), action=buffer.action[:n].clone(), reward=buffer.reward[:n].clone(),
                    undone=(~buffer.terminated[:n]).float(), next_state=buffer.next_state[:n].clone())
        plain = PlainSAC(net_dim, data, batch_size=batch_size)

        def elegantrl_update(num_steps: int = steps, agent: AgentSAC = agent, buffer: ReplayBuffer = buffer) -> int:
            before = agent.update_count
            agent.update_net(buffer, new_steps=num_steps * batch_size)  # repeat_times=1: one step per batch_size new transitions
            return agent.update_count - before

        def plain_update(num_steps: int = steps, plain: PlainSAC = plain) -> int:
            for _ in range(num_steps):
                plain.update()
            return num_steps

        elegantrl_update(20)  # warm-up of each: allocator, Adam state, first-call costs
        plain_update(20)
        for repeat in range(repeats):
            for library, update in ((OURS, elegantrl_update), ("plain-pytorch", plain_update)):
                records.append(dict(net_dim=net_dim, repeat=repeat, library=library, updates_per_s=per_second(update)))
                print(f"[sac-throughput net_dim {net_dim} repeat {repeat}] {library}: {records[-1]['updates_per_s']:.1f} updates/s", flush=True)

    lines = ["| net_dim | elegantrl updates/s | plain PyTorch updates/s | ratio of medians elegantrl / plain "
             "| per-pair ratios: median (quartiles) |", "|---|---|---|---|---|"]
    for net_dim in net_dims:
        ours = [r["updates_per_s"] for r in records if r["net_dim"] == net_dim and r["library"] == OURS]
        plain_rates = [r["updates_per_s"] for r in records if r["net_dim"] == net_dim and r["library"] != OURS]
        lines.append(f"| {net_dim} | {ratio_cells(ours, plain_rates)} |")
    table = "\n".join(lines) + "\n"
    setup = (
        f"- Setup: Pendulum-v1 sizes (state_dim {env.state_dim}, action_dim {env.action_dim}), 10,000 random transitions, "
        f"batch {batch_size}, Adam lr 1e-3, tau 0.005, one torch thread, CPU. Both: actor MLP [state, net_dim, net_dim, 2 × action] "
        "(tanh-squashed Gaussian), two independent critic MLPs [state + action, net_dim, net_dim, 1] with targets, learned log-alpha, "
        "SmoothL1 critic losses, one critic, temperature and actor step per update.\n"
        f"- elegantrl: `AgentSAC.update_net(buffer, new_steps)` on an `elegantrl.replay.ReplayBuffer`, {steps} gradient steps per call. "
        f"Plain PyTorch: `PlainSAC.update()` in benchmarks/throughput.py, {steps} calls in a loop, batches from preallocated tensors.\n"
        f"- Timing: per net_dim a 20-step warm-up of each, then {repeats} repeats interleaved (elegantrl, plain, elegantrl, ...); "
        "medians over repeats; the ratio is of the medians; the per-pair ratios compare neighbouring timings "
        "(median and interquartile range).\n\n"
    )
    write_throughput_report("sac-throughput", "SAC learner updates per second, elegantrl against plain PyTorch",
                            records, setup, table, out, command)
    return True


# ---- exploration throughput: elegantrl's explore_env against the raw env with random actions --


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


def run_env_throughput(out: str, command: str, repeats: int, steps: int = 4096,
                       cases: tuple[tuple[str, str], ...] = (("CartPole-v1", "AgentDiscretePPO"), ("Pendulum-v1", "AgentPPO")),
                       env_counts: tuple[int, ...] = (1, 8)) -> bool:
    """Measures env steps per second collected by elegantrl's `explore_env` against the raw env.

    Per (env, agent) and number of envs: a warm-up of each, then `repeats` timings interleaved
    (elegantrl, raw, elegantrl, ...), `steps` env steps per timing (``steps // num_envs`` per env).
    elegantrl's number includes its policy's forward pass and sampling, `PreprocessEnv` and the
    rollout arrays; the raw one is the env alone with ``action_space.sample()``, so the ratio
    elegantrl / raw is the share of the env's own speed that exploration keeps.
    Writes ``out/env-throughput.md`` and ``.csv``; returns True.
    """
    torch.set_num_threads(1)
    records: list[dict[str, Any]] = []
    for env_id, agent_name in cases:
        for num_envs in env_counts:
            horizon = steps // num_envs
            collectors = ((OURS, elegantrl_explorer(env_id, agent_name, num_envs)), ("raw-gymnasium", raw_env_stepper(env_id, num_envs)))
            for _, collect in collectors:  # warm-up: first-call costs, allocator
                collect(horizon // 4)
            for repeat in range(repeats):
                for library, collect in collectors:
                    rate = per_second(functools.partial(collect, horizon))
                    records.append(dict(env_id=env_id, agent=agent_name, num_envs=num_envs, repeat=repeat, library=library, steps_per_s=rate))
                    print(f"[env-throughput {env_id} {num_envs} env(s) repeat {repeat}] {library}: {rate:,.0f} env steps/s", flush=True)

    lines = ["| env | elegantrl agent | envs | elegantrl env steps/s | raw env steps/s (random actions) "
             "| ratio of medians elegantrl / raw | per-pair ratios: median (quartiles) |", "|---|---|---|---|---|---|---|"]
    for env_id, agent_name in cases:
        for num_envs in env_counts:
            rates = {library: [r["steps_per_s"] for r in records
                               if r["env_id"] == env_id and r["num_envs"] == num_envs and r["library"] == library]
                     for library in (OURS, "raw-gymnasium")}
            lines.append(f"| {env_id} | {agent_name.removeprefix('Agent')} | {num_envs} | {ratio_cells(rates[OURS], rates['raw-gymnasium'])} |")
    table = "\n".join(lines) + "\n"
    setup = (
        "- elegantrl: `agent.explore_env(env, horizon)` with the agent's own stochastic policy after `agent.init(64, ...)` "
        "(untrained), on `PreprocessEnv(id)` for 1 env and `build_vector_env(PreprocessEnv(id), 8)` (SyncVectorEnv, "
        "same-step autoreset) for 8; it includes the policy's forward pass and sampling, the wrapper and the rollout arrays.\n"
        "- Raw ceiling: `gym.make(id)` stepped with `env.action_space.sample()` and reset when an episode ends, or "
        "`gym.make_vec(id, num_envs=8, vectorization_mode='sync')` with the same same-step autoreset.\n"
        f"- Timing: one torch thread, CPU; per case a warm-up of each, then {repeats} repeats interleaved (elegantrl, raw, "
        f"elegantrl, ...), {steps:,d} env steps per timing; medians over repeats; the ratio is of the medians; the per-pair "
        "ratios compare neighbouring timings (median and interquartile range).\n\n"
    )
    write_throughput_report("env-throughput", "env steps per second collected by elegantrl against the raw env",
                            records, setup, table, out, command)
    return True


THROUGHPUT_ROWS: dict[str, Callable[..., bool]] = {"sac-throughput": run_sac_throughput, "env-throughput": run_env_throughput}
