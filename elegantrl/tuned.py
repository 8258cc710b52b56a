"""Settings tuned per agent family and env, the way rl-baselines3-zoo tunes SB3's.

`Arguments` applies an entry to the fields a user leaves as None, and the agent's constructor
settings (``"agent"``) to those the user did not pass, then prints what it applied at the start of
the run. Anything set by hand wins, field by field. An env with no entry gets the family's own
defaults (`AgentBase.arg_defaults`), which are the robust choice across the suite.

A key is (an agent class name without "Agent", an env id). The agent's own class is looked up
first, then its bases in order, so ("DQN", env) serves DQN, DoubleDQN, DuelingDQN, D3QN and
QRDQN unless one of them has an entry of its own, and ("DDPG", env) serves TD3 too.

Every entry was checked on seeds 100 and above by ``benchmarks/tune.py``, away from the seeds the
benchmark reports (0-4, or 0-9 on some rows); ``benchmarks/results/tune/`` has each sweep, its
command and its seeds, and the comment beside an entry says where it came from.
"""

from __future__ import annotations

import inspect
from typing import Any

from gymnasium.envs.registration import load_env_creator, registry

# Short rollouts of 8 envs, many epochs on each, a shorter horizon: small discrete tasks solved in
# seconds; the PPO family's generic defaults (SB3's) took 3-5 times longer, and missed Acrobot's
# -100 on one seed in three (tune-discreteppo-cartpole-v1.md, tune-discreteppo-acrobot-v1.md).
SHORT_ROLLOUTS = dict(num_envs=8, target_step=64, batch_size=256, repeat_times=10.0, gamma=0.98, learning_rate=1e-3)

# rl-baselines3-zoo's PPO settings for both LunarLanders (16 envs x 1024 steps, minibatch 64, 4 epochs, a long
# horizon, GAE 0.98, an entropy bonus), in elegantrl's terms, and rewards scaled by 0.01: values of +-100s would
# sit where the critic's Smooth L1 loss is linear, a constant step per update whatever the error (SB3's loss is
# the squared error). On tuning seeds 100-102 the scale took DiscretePPO to 200 in a median 279k env steps against
# 442k, holding it on 75% of the evaluations after the hit against 38% (tune-discreteppo-lunarlander-v3-hold-scale.md),
# and PPO on the continuous lander in 279k against 344k, 82% held against 70% (tune-ppo-lunarlandercontinuous-v3-hold-init.md)
ZOO_LUNAR_PPO = dict(num_envs=16, target_step=1024, batch_size=64, repeat_times=4.0, gamma=0.999, learning_rate=3e-4,
                     reward_scale=0.01, agent=dict(lambda_entropy=0.01, lambda_gae_adv=0.98))

TUNED: dict[tuple[str, str], dict[str, Any]] = {
    # short rollouts, rewards scaled by 0.1 and the learning rate decayed to 0 over 100k env steps (the zoo's
    # lin_1e-3 horizon): over tuning seeds 100-109 it held 475 on 75% of the evaluations after the first hit
    # where short rollouts alone held 49%, in about 1.3x their median time (tune-discreteppo-cartpole-v1-hold-scale*.md)
    ("PPO", "CartPole-v1"): dict(SHORT_ROLLOUTS, reward_scale=0.1, lr_decay_steps=100_000),
    ("PPO", "Acrobot-v1"): SHORT_ROLLOUTS,
    # short rollouts again, with the zoo's horizon for Pendulum (gamma 0.9): 3/3 tuning seeds to -200 in a
    # median 15.1 s; the zoo's own 4 x 1024 rollouts with minibatch 64 took 20.3 s, and the family's
    # defaults reached -200 on 2/3 only, near 300k env steps (tune-ppo-pendulum-v1.md). Rewards scaled
    # by 0.1: on seeds 100-104, 49k env steps to -200 instead of 78k and 1 run of 5 falling below -300
    # after the hit instead of 3; no candidate of 10 held -200 much better (tune-ppo-pendulum-v1-hold*.md)
    ("PPO", "Pendulum-v1"): dict(SHORT_ROLLOUTS, target_step=256, gamma=0.9, reward_scale=0.1),
    # 64-wide networks at one gradient step per env step (repeat_times 256 at batch 256), where the family's defaults
    # take one per two env steps at width 128: swept (--hold 2) on tuning seeds 100-109, SAC reached -200 in a median
    # 4,008 env steps and 9.7 s against 6,536 and 15.3 s, held it on 74% of the evaluations after the hit against 79%,
    # 5/10 runs falling below -300 each; ModSAC 7.4 s against 13.2 s, 70% held against 71%, 5/10 each; InterSAC 10.7 s
    # against 16.7 s, but 73% held against 85%, 5/10 runs falling against 3/10.
    # Either change alone saved less: width 64 10.9 s; one step per env step at width 128 17.2 s against 15.4 s, since
    # its fewer env steps cost as many gradient steps (tune-*sac-pendulum-v1-hold-width-steps.md, -hold-steps.md)
    ("SAC", "Pendulum-v1"): dict(net_dim=64, repeat_times=256.0),
    # 64-wide Q networks hovered (best -51 by 70k env steps); 128 reached 200 on 6/6 runs of QR-DQN
    # and D3QN. Width 256 and gamma 0.995 were slower; slower exploration was as fast in median
    # but spread wider (40k and 130k env steps) and needs an agent setting (tune-*-lunarlander-v3.md)
    ("DQN", "LunarLander-v3"): dict(net_dim=128),
    # swept for stability (--hold 2) on seeds 100-104: rewards scaled by 0.1 took D3QN to 200 in a median 80k env
    # steps against 100k and 70 s against 86 s, held it on 47% of the evaluations after the first hit against 38%,
    # with 2/5 runs falling below 100 against 5/5; a learning rate decayed to 0 over 300k env steps held 41% at 160k
    # env steps, lr 1e-3 31% (tune-d3qn-lunarlander-v3-hold.md, -hold-more.md). Only D3QN was swept, so only D3QN has it
    ("D3QN", "LunarLander-v3"): dict(net_dim=128, reward_scale=0.1),
    # swept for stability (--hold 2) on seeds 100-104: width 128 held 475 on 77% (DQN) and 68% (D3QN) of the
    # evaluations after the first hit, against the defaults' 56% and 42%, with 2/5 and 4/5 runs falling below
    # 237.5 (defaults 4/5, 5/5); DQN was as fast (5.0 s against 4.9 s), D3QN slower (9.6 s against 7.2 s).
    # Twice the gradient steps (with or without width 256) reached 475 sooner in env steps, not in seconds,
    # and held it no better for DQN (tune-dqn-cartpole-v1-hold.md, tune-d3qn-cartpole-v1-hold.md). On seeds 100-109
    # neither rewards scaled by 0.1 nor a learning rate decayed over 100k env steps held it better (tune-dqn-cartpole-v1-hold-scale.md),
    # nor gradients clipped at norm 10, a target four times slower or lr 1e-3 (tune-dqn-cartpole-v1-hold-target.md);
    # half the gradient steps or half the batch cost more env steps than they saved (tune-dqn-cartpole-v1-hold-compute.md),
    # and so did batch 256, a 500-step warm-up or epsilon decayed over 2,500 env steps (tune-dqn-cartpole-v1-hold-fewer-steps.md)
    # width 64, alone or with twice the gradient steps or half the batch, was slower and held less (tune-dqn-cartpole-v1-hold-width-steps.md).
    # 8 envs of 8 steps a round (the same 64 transitions and gradient steps): one forward pass picks 8 actions for about the cost
    # of one; on seeds 100-109 DQN took 5.5 s against 6.4 s (held 77% against 80%), D3QN 8.3 s against 9.6 s (77% against 68%),
    # QR-DQN 6.7 s against 8.3 s (77% against 81%); 4 envs of 16 steps were slower (tune-*-cartpole-v1-hold-envs.md)
    ("DQN", "CartPole-v1"): dict(net_dim=128, num_envs=8, target_step=8),
    # swept for stability (--hold 2) on six tuning seeds: width 128 held -100 on 73% of the evaluations after
    # the first hit against the defaults' 31%, and was no slower to get there (tune-d3qn-acrobot-v1-hold*.md)
    ("D3QN", "Acrobot-v1"): dict(net_dim=128),
    # rl-baselines3-zoo's PPO settings for LunarLander in elegantrl's terms, which the ppo-lunarlander
    # row adopted after the generic defaults reached only 161 in 1M env steps on its seed 0; confirmed
    # on tuning seeds: 200 on 100 and 101 (tune-discreteppo-lunarlander-v3.md)
    ("PPO", "LunarLander-v3"): ZOO_LUNAR_PPO,
    # the zoo's entry is the same; unscaled, 200 within 1M env steps on 2/3 tuning seeds (171 on the third)
    # where the family's defaults reached it on none (tune-ppo-lunarlandercontinuous-v3.md)
    ("PPO", "LunarLanderContinuous-v3"): ZOO_LUNAR_PPO,
}


def tuned_entry(agent: object, env_id: str, env_kwargs: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """The tuned entry for `agent` on `env_id`: (the family name it was found under, its settings).

    `env_kwargs` are those the env was made with (its spec's): an entry was tuned on the registered
    env, so a variant of it (LunarLander-v3 with ``continuous=True``, or with wind) gets none.
    ("", {}) when the table has none.
    """
    if env_kwargs is not None and env_id in registry and is_variant(env_id, env_kwargs):
        return "", {}
    for cls in type(agent).__mro__:
        family = cls.__name__.removeprefix("Agent")
        if (family, env_id) in TUNED:
            return family, TUNED[family, env_id]
    return "", {}


def task_kwargs(env_id: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """`kwargs` for ``gym.make(env_id, ...)`` with the env constructor's defaults filled in, less ``render_mode``: two
    sets of keyword arguments that give the same task compare equal (Pendulum-v1 with ``g=10.0`` is Pendulum-v1)."""
    defaults: dict[str, Any] = {}
    if env_id in registry:
        creator = registry[env_id].entry_point
        try:
            creator = load_env_creator(creator) if isinstance(creator, str) else creator
            defaults = {name: parameter.default for name, parameter in inspect.signature(creator).parameters.items()
                        if parameter.default is not inspect.Parameter.empty}
        except (ImportError, AttributeError, ValueError, TypeError):  # an entry point that cannot be read: compare as given
            pass
    return {name: value for name, value in {**defaults, **kwargs}.items() if name != "render_mode"}


def is_variant(env_id: str, kwargs: dict[str, Any]) -> bool:
    """Whether ``gym.make(env_id, **kwargs)`` is another task than ``gym.make(env_id)``."""
    return task_kwargs(env_id, kwargs) != task_kwargs(env_id, registry[env_id].kwargs if env_id in registry else {})
