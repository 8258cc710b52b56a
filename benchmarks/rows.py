"""The benchmark's rows: per env, the target, the budget, SB3's baseline with the zoo's settings, elegantrl's agents."""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import stable_baselines3
from stable_baselines3.common.utils import LinearSchedule

HERE = os.path.dirname(os.path.abspath(__file__))  # benchmarks/
ROOT = os.path.dirname(HERE)  # the repository, which holds the benchmarks package
TARGET_HOLD = 2.0  # a run trains on to this multiple of the env steps of its first hit, to see whether the return holds
SB3 = "sb3"
OURS = "elegantrl"


# ---- the rows --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One comparison: an env and target, a budget, the SB3 baseline and the elegantrl agents.

    `sb3_hyperparams(budget)` returns the keyword arguments of the SB3 algorithm class (plus an
    optional ``n_envs``); it takes the budget so that schedules written as fractions of the zoo's
    own ``n_timesteps`` can be kept in env steps when our budget differs.
    """

    env_id: str
    target: float
    budget: int  # env steps; a run that has not reached the target by then has failed
    sb3_algo: str  # a class name in stable_baselines3 or sb3_contrib, e.g. "DQN" or "QRDQN"
    sb3_hyperparams: Callable[[int], dict[str, Any]]
    agents: tuple[str, ...]  # class names in elegantrl.agent, e.g. "AgentD3QN"
    eval_gap: int = 1000  # env steps between evaluations
    eval_episodes: int = 10
    sb3_note: str = ""  # how the zoo's settings were adapted, printed in the report
    elegantrl_args: dict[str, Any] = field(default_factory=dict)  # extra `Arguments` fields, if any
    agent_kwargs: dict[str, Any] = field(default_factory=dict)  # arguments of the elegantrl agents' constructors
    # SB3's own budget where the zoo's schedule ends sooner (its learning rate reaches 0 there, so it can
    # learn no more); a failed SB3 run then counts at this smaller budget, which favours SB3
    sb3_budget: int | None = None
    # a matched-compute row: both sides run the same widths, batch size, gradient steps per env step and
    # warm-up (see `matched`), so that its ratio measures the library rather than its settings
    matched: bool = False


def zoo_dqn_cartpole(budget: int) -> dict[str, Any]:
    """SB3 DQN on CartPole-v1 as rl-baselines3-zoo tunes it (hyperparams/dqn.yml, n_timesteps 5e4).

    SB3 anneals epsilon over `exploration_fraction` of the steps passed to ``learn()``. The zoo's
    0.16 of 5e4 steps means epsilon reaches its floor after 8,000 env steps; we keep those 8,000
    steps whatever our budget, so a longer budget does not slow SB3's exploration schedule.
    """
    zoo_timesteps, zoo_fraction = 50_000, 0.16
    return dict(
        policy="MlpPolicy",
        learning_rate=2.3e-3,
        batch_size=64,
        buffer_size=100_000,
        learning_starts=1000,
        gamma=0.99,
        target_update_interval=10,
        train_freq=256,
        gradient_steps=128,
        exploration_fraction=zoo_fraction * zoo_timesteps / budget,
        exploration_final_eps=0.04,
        policy_kwargs=dict(net_arch=[256, 256]),
    )


def zoo_qrdqn_cartpole(budget: int) -> dict[str, Any]:
    """sb3-contrib QR-DQN on CartPole-v1 as rl-baselines3-zoo tunes it (hyperparams/qrdqn.yml, n_timesteps 5e4).

    The zoo's DQN settings for this env with 10 quantiles; epsilon kept in env steps as in
    `zoo_dqn_cartpole` (it reaches 0.04 after 8,000 env steps).
    """
    return dict(zoo_dqn_cartpole(budget), policy_kwargs=dict(net_arch=[256, 256], n_quantiles=10))


def zoo_qrdqn_lunarlander(budget: int) -> dict[str, Any]:
    """sb3-contrib QR-DQN on LunarLander as rl-baselines3-zoo tunes it (hyperparams/qrdqn.yml, LunarLander-v2, n_timesteps 1e5).

    The zoo's ``lin_1.5e-3`` decays the learning rate linearly to 0 over its 1e5 steps and
    ``exploration_fraction: 0.24`` anneals epsilon over its first 24,000; both are kept in env steps
    (stretched by 1e5 / budget) so that the run is the zoo's own whatever our budget. After 1e5 env
    steps the rate is 0: a run that has not reached the target by then does not learn any more.
    ``gradient_steps=-1`` is one gradient step per env step, taken 256 at a time.
    """
    zoo_timesteps = 100_000
    return dict(
        policy="MlpPolicy",
        learning_rate=LinearSchedule(start=1.5e-3, end=0.0, end_fraction=zoo_timesteps / budget),
        batch_size=128,
        buffer_size=100_000,
        learning_starts=10_000,
        gamma=0.995,
        target_update_interval=1,
        train_freq=256,
        gradient_steps=-1,
        exploration_fraction=0.24 * zoo_timesteps / budget,
        exploration_final_eps=0.18,
        policy_kwargs=dict(net_arch=[256, 256], n_quantiles=170),
    )


def zoo_dqn_acrobot_lunarlander(budget: int) -> dict[str, Any]:
    """SB3 DQN on Acrobot-v1 or LunarLander-v3 as rl-baselines3-zoo tunes it (hyperparams/dqn.yml: the two entries are equal, n_timesteps 1e5).

    ``exploration_fraction: 0.12`` of the zoo's 1e5 steps is kept in env steps: epsilon reaches 0.1
    at 12,000 whatever our budget. ``gradient_steps=-1`` with ``train_freq=4`` is one gradient step
    per env step, taken 4 at a time.
    """
    zoo_timesteps = 100_000
    return dict(
        policy="MlpPolicy",
        learning_rate=6.3e-4,
        batch_size=128,
        buffer_size=50_000,
        learning_starts=0,
        gamma=0.99,
        target_update_interval=250,
        train_freq=4,
        gradient_steps=-1,
        exploration_fraction=0.12 * zoo_timesteps / budget,
        exploration_final_eps=0.1,
        policy_kwargs=dict(net_arch=[256, 256]),
    )


def zoo_sac_pendulum(budget: int) -> dict[str, Any]:
    """SB3 SAC on Pendulum-v1 as rl-baselines3-zoo tunes it (hyperparams/sac.yml, n_timesteps 2e4).

    The zoo sets only the learning rate; everything else is SB3's default (see the row's note).
    """
    return dict(policy="MlpPolicy", learning_rate=1e-3)


def zoo_sac_lunarlandercontinuous(budget: int) -> dict[str, Any]:
    """SB3 SAC on LunarLanderContinuous as rl-baselines3-zoo tunes it (hyperparams/sac.yml, n_timesteps 5e5).

    The zoo's ``lin_7.3e-4`` decays the learning rate linearly to 0 over its 5e5 steps. SB3 feeds
    schedules the fraction of *our* budget left, so we stretch the line by 5e5 / budget: the rate at
    env step t is 7.3e-4 × (1 - t / 5e5) whatever the budget, as in the zoo's own run.
    """
    zoo_timesteps = 500_000
    return dict(
        policy="MlpPolicy",
        batch_size=256,
        learning_rate=LinearSchedule(start=7.3e-4, end=0.0, end_fraction=zoo_timesteps / budget),
        buffer_size=1_000_000,
        ent_coef="auto",
        gamma=0.99,
        tau=0.01,
        train_freq=1,
        gradient_steps=1,
        learning_starts=10_000,
        policy_kwargs=dict(net_arch=[400, 300]),
    )


def zoo_sac_bipedalwalker(budget: int) -> dict[str, Any]:
    """SB3 SAC on BipedalWalker-v3 as rl-baselines3-zoo tunes it (hyperparams/sac.yml, n_timesteps 5e5; no schedule).

    gSDE exploration (``use_sde``, ``log_std_init=-3``), 64 gradient steps every 64 env steps.
    """
    return dict(
        policy="MlpPolicy",
        learning_rate=7.3e-4,
        buffer_size=300_000,
        batch_size=256,
        ent_coef="auto",
        gamma=0.98,
        tau=0.02,
        train_freq=64,
        gradient_steps=64,
        learning_starts=10_000,
        use_sde=True,
        policy_kwargs=dict(log_std_init=-3, net_arch=[400, 300]),
    )


def zoo_td3(budget: int) -> dict[str, Any]:
    """SB3 TD3 as rl-baselines3-zoo tunes it for Pendulum-v1 and LunarLanderContinuous (hyperparams/td3.yml).

    Both entries are the same (n_timesteps 2e4 and 3e5; no schedule depends on it).
    ``noise_type``/``noise_std`` are the zoo's keys; `train_sb3` turns them into the action noise.
    """
    return dict(
        policy="MlpPolicy",
        gamma=0.98,
        buffer_size=200_000,
        learning_starts=10_000,
        noise_type="normal",
        noise_std=0.1,
        gradient_steps=1,
        train_freq=1,
        learning_rate=1e-3,
        policy_kwargs=dict(net_arch=[400, 300]),
    )


def zoo_ppo_cartpole(budget: int) -> dict[str, Any]:
    """SB3 PPO on CartPole-v1 as rl-baselines3-zoo tunes it (hyperparams/ppo.yml, n_timesteps 1e5).

    The zoo's ``lin_0.001`` and ``lin_0.2`` decay the learning rate and the clip range linearly to 0
    over its 1e5 steps. SB3 feeds schedules the fraction of *our* budget left, so we stretch the line
    by 1e5 / budget: at env step t the value is start × (1 - t / 1e5) whatever the budget.
    """
    zoo_timesteps = 100_000
    return dict(
        policy="MlpPolicy",
        n_envs=8,
        n_steps=32,
        batch_size=256,
        gae_lambda=0.8,
        gamma=0.98,
        n_epochs=20,
        ent_coef=0.0,
        learning_rate=LinearSchedule(start=1e-3, end=0.0, end_fraction=zoo_timesteps / budget),
        clip_range=LinearSchedule(start=0.2, end=0.0, end_fraction=zoo_timesteps / budget),
    )


def zoo_ppo_lunarlander(budget: int) -> dict[str, Any]:
    """SB3 PPO on LunarLander as rl-baselines3-zoo tunes it (hyperparams/ppo.yml, LunarLander-v2, n_timesteps 1e6).

    No schedule: the rest (learning_rate 3e-4, clip_range 0.2, net_arch [64, 64]) is SB3's default.
    """
    return dict(
        policy="MlpPolicy",
        n_envs=16,
        n_steps=1024,
        batch_size=64,
        gae_lambda=0.98,
        gamma=0.999,
        n_epochs=4,
        ent_coef=0.01,
    )


def zoo_ppo_acrobot(budget: int) -> dict[str, Any]:
    """SB3 PPO on Acrobot-v1 as rl-baselines3-zoo tunes it (hyperparams/ppo.yml, n_timesteps 1e6; no schedule).

    ``normalize`` is the zoo's VecNormalize of observations and rewards, which `train_sb3` applies
    (evaluation normalises observations with the training statistics and scores the raw reward).
    """
    return dict(policy="MlpPolicy", normalize=True, n_envs=16, n_steps=256, gae_lambda=0.94, gamma=0.99, n_epochs=4, ent_coef=0.0)


def zoo_ppo_pendulum(budget: int) -> dict[str, Any]:
    """SB3 PPO on Pendulum-v1 as rl-baselines3-zoo tunes it (hyperparams/ppo.yml, n_timesteps 1e5; gSDE, no schedule)."""
    return dict(policy="MlpPolicy", n_envs=4, n_steps=1024, gae_lambda=0.95, gamma=0.9, n_epochs=10, ent_coef=0.0,
                learning_rate=1e-3, clip_range=0.2, use_sde=True, sde_sample_freq=4)


SAC_DEFAULTS_NOTE = ("SB3 defaults for the rest: buffer_size=1e6, batch_size=256, learning_starts=100, tau=0.005, "
                     "gamma=0.99, train_freq=1, gradient_steps=1, ent_coef='auto', net_arch=[256, 256]")
TD3_NOTE = ("zoo td3.yml as updated with SB3 2.3 (train_freq=1, gradient_steps=1; older zoo versions had "
            "train_freq=(1, 'episode'), gradient_steps=-1: the same one gradient step per env step); "
            "noise_type=normal, noise_std=0.1 is NormalActionNoise(0, 0.1) in SB3's [-1, 1] action units; "
            "batch_size is SB3's default 256; the first 10,000 env steps are uniformly random (learning_starts)")

PPO_NET_NOTE = ("SB3 defaults for the rest: vf_coef=0.5, max_grad_norm=0.5, normalize_advantage=True, "
                "net_arch=dict(pi=[64, 64], vf=[64, 64]) with tanh")
PPO_DEFAULTS_NOTE = PPO_NET_NOTE + ", no observation or reward normalisation"

ROWS: dict[str, Row] = {
    "dqn-cartpole": Row(
        env_id="CartPole-v1",
        target=475.0,
        budget=100_000,
        sb3_algo="DQN",
        sb3_hyperparams=zoo_dqn_cartpole,
        agents=("AgentDQN", "AgentDoubleDQN", "AgentDuelingDQN", "AgentD3QN"),
        sb3_note="exploration_fraction = 0.16 × 50,000 / budget: epsilon reaches 0.04 after 8,000 env steps, as in the zoo's 5e4-step run",
    ),
    "qrdqn-cartpole": Row(
        env_id="CartPole-v1",
        target=475.0,
        budget=100_000,
        sb3_algo="QRDQN",
        sb3_hyperparams=zoo_qrdqn_cartpole,
        agents=("AgentQRDQN",),
        sb3_note="sb3-contrib's QRDQN; exploration_fraction = 0.16 × 50,000 / budget: epsilon reaches 0.04 after 8,000 env steps, "
                 "as in the zoo's 5e4-step run",
    ),
    "qrdqn-lunarlander": Row(
        env_id="LunarLander-v3",
        target=200.0,
        budget=200_000,
        sb3_algo="QRDQN",
        sb3_hyperparams=zoo_qrdqn_lunarlander,
        agents=("AgentQRDQN",),
        eval_gap=10_000,
        sb3_note="sb3-contrib's QRDQN with the zoo's LunarLander-v2 entry (gymnasium 1.x has only -v3, the same task with bug fixes); "
                 "learning_rate lin_1.5e-3 and exploration_fraction 0.24 kept in env steps as in the zoo's 1e5-step run: "
                 "the rate is 1.5e-3 × (1 - t / 1e5) and 0 after 1e5 env steps, epsilon reaches 0.18 at 24,000; "
                 "so SB3 stops at 1e5 env steps (sb3_budget), where it can learn no more, and a failed SB3 run counts there",
        sb3_budget=100_000,
    ),
    "sac-pendulum": Row(
        env_id="Pendulum-v1",
        target=-200.0,
        budget=30_000,
        sb3_algo="SAC",
        sb3_hyperparams=zoo_sac_pendulum,
        agents=("AgentSAC", "AgentModSAC", "AgentInterSAC"),
        sb3_note=SAC_DEFAULTS_NOTE + " (the zoo's entry sets only learning_rate)",
    ),
    "td3-pendulum": Row(
        env_id="Pendulum-v1",
        target=-200.0,
        budget=30_000,
        sb3_algo="TD3",
        sb3_hyperparams=zoo_td3,
        agents=("AgentTD3", "AgentDDPG"),
        sb3_note=TD3_NOTE,
    ),
    "sac-lunarlandercontinuous": Row(
        env_id="LunarLanderContinuous-v3",
        target=200.0,
        budget=300_000,
        sb3_algo="SAC",
        sb3_hyperparams=zoo_sac_lunarlandercontinuous,
        agents=("AgentSAC", "AgentModSAC"),
        eval_gap=5000,
        sb3_note="the zoo's LunarLanderContinuous entry (-v2 in the zoo's file; gymnasium 1.x has only -v3, the same task with bug fixes); "
                 "learning_rate lin_7.3e-4 kept in env steps: 7.3e-4 × (1 - t / 5e5), i.e. end_fraction = 5e5 / budget",
    ),
    "td3-lunarlandercontinuous": Row(
        env_id="LunarLanderContinuous-v3",
        target=200.0,
        budget=300_000,
        sb3_algo="TD3",
        sb3_hyperparams=zoo_td3,
        agents=("AgentTD3",),
        eval_gap=5000,
        sb3_note="the zoo's LunarLanderContinuous entry (-v2 in the zoo's file); " + TD3_NOTE,
    ),
    "ppo-cartpole": Row(
        env_id="CartPole-v1",
        target=475.0,
        budget=100_000,
        sb3_algo="PPO",
        sb3_hyperparams=zoo_ppo_cartpole,
        agents=("AgentDiscretePPO",),
        sb3_note="8 envs (make_vec_env); learning_rate lin_0.001 and clip_range lin_0.2 kept in env steps: "
                 "start × (1 - t / 1e5), i.e. end_fraction = 1e5 / budget; " + PPO_DEFAULTS_NOTE,
    ),
    "ppo-lunarlander": Row(
        env_id="LunarLander-v3",
        target=200.0,
        budget=1_000_000,
        sb3_algo="PPO",
        sb3_hyperparams=zoo_ppo_lunarlander,
        agents=("AgentDiscretePPO",),
        eval_gap=10_000,
        sb3_note="the zoo's LunarLander-v2 entry (gymnasium 1.x has only -v3, the same task with bug fixes); 16 envs (make_vec_env); "
                 "learning_rate 3e-4 and clip_range 0.2 are SB3's defaults; " + PPO_DEFAULTS_NOTE,
    ),
    "d3qn-acrobot": Row(
        env_id="Acrobot-v1",
        target=-100.0,
        budget=100_000,
        sb3_algo="DQN",
        sb3_hyperparams=zoo_dqn_acrobot_lunarlander,
        agents=("AgentD3QN",),
        eval_gap=2000,
        sb3_note="exploration_fraction = 0.12 × 100,000 / budget: epsilon reaches 0.1 after 12,000 env steps, as in the zoo's 1e5-step run",
    ),
    "ppo-acrobot": Row(
        env_id="Acrobot-v1",
        target=-100.0,
        budget=200_000,
        sb3_algo="PPO",
        sb3_hyperparams=zoo_ppo_acrobot,
        agents=("AgentDiscretePPO",),
        eval_gap=4096,
        sb3_note="16 envs (make_vec_env) under VecNormalize of observations and rewards (the zoo's normalize: true); "
                 "learning_rate 3e-4, clip_range 0.2 and batch_size 64 are SB3's defaults; " + PPO_NET_NOTE,
    ),
    "ppo-pendulum": Row(
        env_id="Pendulum-v1",
        target=-200.0,
        budget=300_000,
        sb3_algo="PPO",
        sb3_hyperparams=zoo_ppo_pendulum,
        agents=("AgentPPO",),
        eval_gap=4096,
        sb3_note="4 envs (make_vec_env); gSDE exploration resampled every 4 steps; batch_size 64 is SB3's default; " + PPO_DEFAULTS_NOTE,
    ),
    "d3qn-lunarlander": Row(
        env_id="LunarLander-v3",
        target=200.0,
        budget=300_000,
        sb3_algo="DQN",
        sb3_hyperparams=zoo_dqn_acrobot_lunarlander,
        agents=("AgentD3QN",),
        eval_gap=10_000,
        sb3_note="exploration_fraction = 0.12 × 100,000 / budget: epsilon reaches 0.1 after 12,000 env steps, as in the zoo's "
                 "1e5-step run; the learning rate is constant, so SB3 trains on for the whole budget",
    ),
    "ppo-lunarlandercontinuous": Row(
        env_id="LunarLanderContinuous-v3",
        target=200.0,
        budget=1_000_000,
        sb3_algo="PPO",
        sb3_hyperparams=zoo_ppo_lunarlander,
        agents=("AgentPPO",),
        eval_gap=10_000,
        sb3_note="the zoo's LunarLanderContinuous-v3 entry, the same as its LunarLander-v3 one; 16 envs (make_vec_env); "
                 "learning_rate 3e-4 and clip_range 0.2 are SB3's defaults; " + PPO_DEFAULTS_NOTE,
    ),
    "sac-bipedalwalker": Row(
        env_id="BipedalWalker-v3",
        target=300.0,
        budget=500_000,
        sb3_algo="SAC",
        sb3_hyperparams=zoo_sac_bipedalwalker,
        agents=("AgentSAC",),
        eval_gap=10_000,
        sb3_note="the zoo's entry, its n_timesteps 5e5 as both sides' budget; gSDE exploration",
    ),
}



# ---- matched compute -------------------------------------------------------------------------


def sb3_class(name: str) -> type:
    """The algorithm class `name` from stable_baselines3, or else from sb3_contrib (e.g. QRDQN)."""
    if hasattr(stable_baselines3, name):
        return getattr(stable_baselines3, name)
    import sb3_contrib  # the QR-DQN rows' (installed by the bench and test extras)

    return getattr(sb3_contrib, name)


def sb3_settings(algo: str, hyperparams: dict[str, Any]) -> dict[str, Any]:
    """`hyperparams` completed with SB3's defaults for `algo`, read from the class's signature."""
    defaults = {name: parameter.default for name, parameter in inspect.signature(sb3_class(algo)).parameters.items()
                if parameter.default is not inspect.Parameter.empty}
    return {**defaults, **hyperparams}


def train_freq_steps(settings: dict[str, Any]) -> int:
    """An off-policy SB3 run's `train_freq` in env steps; ValueError where it counts episodes."""
    train_freq = settings["train_freq"]
    if isinstance(train_freq, (tuple, list)):  # (n, "step"), or SB3's own TrainFreq with its enum unit
        if str(getattr(train_freq[1], "value", train_freq[1])) != "step":
            raise ValueError(f"train_freq={train_freq} counts episodes: it has no fixed gradient steps per env step to match")
        train_freq = train_freq[0]
    return train_freq


def gradient_steps_per_env_step(settings: dict[str, Any]) -> float:
    """An off-policy SB3 run's gradient steps per env step, from its `train_freq` and `gradient_steps` (one env)."""
    train_freq = train_freq_steps(settings)
    # -1 is as many gradient steps as the env steps just collected
    return 1.0 if settings["gradient_steps"] == -1 else settings["gradient_steps"] / train_freq


def dqn_matched_copy_gap(settings: dict[str, Any]) -> int:
    """The gradient steps between two of SB3 DQN's target copies, which elegantrl's matched DQN copies at too.

    SB3 copies its DQN target (``tau=1``) every ``target_update_interval`` env steps, checked while it
    collects, so the target stays put through each burst of gradient steps: an interval up to
    ``train_freq`` is one copy per burst, every train_freq env steps; a longer one is a copy every
    interval env steps (a multiple of train_freq; or, ten times it and more, to within one burst).
    That is N·g gradient steps for N env steps between copies and g gradient steps per env step.
    Settings not modelled (an interval between train_freq and ten times it that is no multiple of it,
    and ``tau < 1``) raise ValueError.
    """
    train_freq = train_freq_steps(settings)
    interval = settings["target_update_interval"]
    if settings["tau"] != 1.0 or train_freq < interval < 10 * train_freq and interval % train_freq:
        raise ValueError(f"target_update_interval={interval}, train_freq={train_freq}, tau={settings['tau']}: matched rows "
                         f"model SB3's DQN target as a copy (tau=1) every interval up to train_freq, a multiple of it, "
                         f"or ten times it and more")
    env_steps = -(-interval // train_freq) * train_freq if interval < 10 * train_freq else interval
    return max(1, round(env_steps * gradient_steps_per_env_step(settings)))


def matched(name: str, agent: str, width: int = 256) -> Row:
    """Row `name` at matched compute: `agent` against the same SB3 run, both doing the same work per env step.

    Both sides get two hidden layers of `width` (elegantrl's networks have one width, so the zoo's
    400×300 becomes width × width on SB3's side too). elegantrl takes SB3's batch size, its gradient
    steps per env step (as ``repeat_times`` = steps × batch), its warm-up of random actions and its
    buffer size, and, so that the two learn alike, its discount, its learning rate (the zoo's linear
    decays as ``lr_decay_steps``, to zero at the same env step), its soft-update rate (for DQN, its
    copies of the network, every `dqn_matched_copy_gap` gradient steps), its number of quantiles, its
    epsilon schedule and its gradient clipping (DQN's at norm 10). What still differs is each
    library's own design: the network and update code, the replay buffer; the cadence (elegantrl
    collects rounds of ``target_step`` env steps, then takes their gradient steps, where SB3 trains
    every ``train_freq`` env steps); the critic loss (SB3's SAC and TD3 use MSE, elegantrl
    SmoothL1). Where the row stops SB3 early (``sb3_budget``: its learning rate is zero there), both sides stop there.
    """
    base = ROWS[name]
    budget = min(base.budget, base.sb3_budget or base.budget)

    def sb3_hyperparams(budget: int) -> dict[str, Any]:
        hyperparams = base.sb3_hyperparams(budget)
        return {**hyperparams, "policy_kwargs": {**hyperparams.get("policy_kwargs", {}), "net_arch": [width, width]}}

    settings = sb3_settings(base.sb3_algo, sb3_hyperparams(budget))
    if settings.get("n_envs", 1) != 1:
        raise ValueError(f"{name}: matched rows are for one-env off-policy rows, this one has n_envs={settings['n_envs']}")
    batch = settings["batch_size"]
    # if_tuned=False: the family's defaults under the matched fields, not a tuned entry's other settings (CartPole's
    # DQN entry explores with 8 envs of 8 steps a round, where SB3's side has one env)
    fields = dict(net_dim=width, batch_size=batch, repeat_times=gradient_steps_per_env_step(settings) * batch,
                  warmup_steps=settings["learning_starts"], max_memo=settings["buffer_size"], gamma=settings["gamma"], if_tuned=False)
    rate = settings["learning_rate"]
    if isinstance(rate, float):
        fields["learning_rate"] = rate
    elif isinstance(rate, LinearSchedule) and rate.end == 0.0:  # the zoo's lin_X: zero at end_fraction of the budget given
        fields.update(learning_rate=rate.start, lr_decay_steps=round(rate.end_fraction * budget))
    else:
        raise ValueError(f"{name}: SB3's learning rate {rate!r} has no elegantrl counterpart; matched rows take a constant or lin_X")
    agent_kwargs: dict[str, Any] = {}
    if "exploration_fraction" in settings:  # the DQN family: epsilon-greedy, over the same env steps
        agent_kwargs = dict(explore_rate=(settings["exploration_initial_eps"], settings["exploration_final_eps"]),
                            explore_decay_steps=round(settings["exploration_fraction"] * budget),
                            target_update_gap=dqn_matched_copy_gap(settings), max_grad_norm=settings["max_grad_norm"])
        fields["soft_update_tau"] = 1.0
    else:
        fields["soft_update_tau"] = settings["tau"]
    if "n_quantiles" in settings["policy_kwargs"]:
        agent_kwargs["num_quantiles"] = settings["policy_kwargs"]["n_quantiles"]
    return replace(base, budget=budget, sb3_hyperparams=sb3_hyperparams, agents=(agent,), matched=True, elegantrl_args=fields,
                   agent_kwargs=agent_kwargs, sb3_note=f"{base.sb3_note}; at matched compute: net_arch=[{width}, {width}] on both sides")


# The same algorithm on both sides (DQN against DQN, not D3QN), so that only the library differs.
ROWS.update({
    "dqn-cartpole-matched": matched("dqn-cartpole", "AgentDQN"),
    "qrdqn-cartpole-matched": matched("qrdqn-cartpole", "AgentQRDQN"),
    "dqn-acrobot-matched": matched("d3qn-acrobot", "AgentDQN"),
    "sac-pendulum-matched": matched("sac-pendulum", "AgentSAC"),
    "td3-pendulum-matched": matched("td3-pendulum", "AgentTD3"),
    "dqn-lunarlander-matched": matched("d3qn-lunarlander", "AgentDQN"),
    "qrdqn-lunarlander-matched": matched("qrdqn-lunarlander", "AgentQRDQN"),
    "sac-lunarlandercontinuous-matched": matched("sac-lunarlandercontinuous", "AgentSAC"),
    "td3-lunarlandercontinuous-matched": matched("td3-lunarlandercontinuous", "AgentTD3"),
})

# Named sets of rows for ``--suite``: "quick" is the small envs, both kinds of row (hours on 2 cores, 3
# seeds); "full" is every row and both throughput measurements (days: the LunarLander rows dominate).
QUICK_SUITE = ("dqn-cartpole", "qrdqn-cartpole", "ppo-cartpole", "d3qn-acrobot", "ppo-acrobot", "sac-pendulum", "td3-pendulum",
               "dqn-cartpole-matched", "sac-pendulum-matched")

