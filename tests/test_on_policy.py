"""On-policy agents: GAE with termination and truncation, PPO and A2C updates, learning."""

import csv
import os

import numpy as np
import pytest
import torch

from elegantrl.agent import AgentA2C, AgentDiscreteA2C, AgentDiscretePPO, AgentInterPPO, AgentPPO
from elegantrl.env import PreprocessEnv
from elegantrl.net import StateNorm
from elegantrl.replay import RolloutBuffer, compute_gae
from elegantrl.run import Arguments, train_and_evaluate


def test_gae_against_a_hand_computed_rollout_with_a_termination_and_a_truncation():
    # one env, five steps: step 1 ends by termination, step 3 by truncation (a time limit)
    reward = torch.tensor([[1.0], [2.0], [3.0], [4.0], [5.0]])
    terminated = torch.tensor([[False], [True], [False], [False], [False]])
    truncated = torch.tensor([[False], [False], [False], [True], [False]])
    value = torch.tensor([[0.5], [1.0], [1.5], [2.0], [2.5]])
    next_value = torch.tensor([[1.0], [9.0], [2.0], [7.0], [3.0]])  # V of each transition's own next_state
    gamma, lam = 0.9, 0.8
    advantage, target = compute_gae(reward, terminated, truncated, value, next_value, gamma, lam)

    d4 = 5 + 0.9 * 3.0 - 2.5  # the last step bootstraps from V(next_state)
    d3 = 4 + 0.9 * 7.0 - 2.0  # truncated: bootstraps from V(final observation) = 7 ...
    d2 = 3 + 0.9 * 2.0 - 1.5
    d1 = 2 + 0.0 - 1.0  # terminated: no future value (V(next_state) = 9 is ignored)
    d0 = 1 + 0.9 * 1.0 - 0.5
    a4 = d4
    a3 = d3  # ... and the trace stops there: the next step belongs to another episode
    a2 = d2 + 0.9 * 0.8 * a3
    a1 = d1
    a0 = d0 + 0.9 * 0.8 * a1
    assert advantage[:, 0].tolist() == pytest.approx([a0, a1, a2, a3, a4])
    assert target[:, 0].tolist() == pytest.approx([a0 + 0.5, a1 + 1.0, a2 + 1.5, a3 + 2.0, a4 + 2.5])


def test_gae_runs_over_envs_independently():
    reward = torch.ones(4, 3)
    flags = torch.zeros(4, 3, dtype=torch.bool)
    terminated = flags.clone()
    terminated[1, 1] = True
    advantage, _ = compute_gae(reward, terminated, flags, torch.zeros(4, 3), torch.zeros(4, 3), 1.0, 1.0)
    assert advantage[:, 0].tolist() == [4.0, 3.0, 2.0, 1.0]
    assert advantage[:, 1].tolist() == [2.0, 1.0, 2.0, 1.0]


@pytest.mark.parametrize("agent_class, env_id", [(AgentPPO, "Pendulum-v1"), (AgentDiscretePPO, "CartPole-v1"),
                                                 (AgentInterPPO, "Pendulum-v1"), (AgentA2C, "Pendulum-v1"),
                                                 (AgentDiscreteA2C, "CartPole-v1")])
def test_update_changes_the_policy_and_save_load_round_trips(agent_class, env_id, tmp_path):
    env = PreprocessEnv(env_id)
    agent = agent_class()
    agent.init(16, env.state_dim, env.action_dim, batch_size=64, repeat_times=2.0)
    assert not hasattr(agent, "critic_target")  # on-policy: no target network
    agent.reset_exploration(env, seed=0)
    buffer = RolloutBuffer()
    rollout = agent.explore_env(env, 256)
    if not env.if_discrete:  # the policy's actions are unbounded; the env received tanh of them
        assert rollout.action.abs().max() > 0.0
    buffer.extend(rollout)
    states = torch.as_tensor(np.random.default_rng(0).normal(size=(8, env.state_dim)), dtype=torch.float32)
    before = agent.actor(states).detach().clone()
    logs = agent.update_net(buffer, 256)
    assert {"obj_critic", "obj_actor", "entropy"} <= set(logs) and all(np.isfinite(list(logs.values())))
    assert not torch.equal(before, agent.actor(states).detach())
    agent.save_or_load_agent(str(tmp_path), if_save=True)
    loaded = agent_class()
    loaded.init(16, env.state_dim, env.action_dim)
    loaded.save_or_load_agent(str(tmp_path), if_save=False)
    assert np.array_equal(loaded.act(states.numpy()), agent.act(states.numpy()))


def test_ppo_clipped_objective_ignores_ratios_beyond_the_clip():
    agent = AgentPPO(ratio_clip=0.2)
    advantage = torch.tensor([1.0, 1.0, -1.0])
    log_prob = torch.log(torch.tensor([2.0, 1.1, 0.5]))  # ratios 2.0, 1.1, 0.5 against old_log_prob = 0
    log_prob.requires_grad_(True)
    objective = agent.get_obj_actor(log_prob, torch.zeros(3), advantage)
    assert objective.item() == pytest.approx(-(1.2 + 1.1 - 0.8) / 3)
    objective.backward()
    assert log_prob.grad.tolist() == pytest.approx([0.0, -1.1 / 3, 0.0])  # clipped terms give no gradient


def best_return(args):
    with open(os.path.join(args.cwd, "recorder.csv")) as file:
        return max(float(row["return_mean"]) for row in csv.DictReader(file))


@pytest.mark.parametrize("max_grad_norm", [None, 0.01])
def test_max_grad_norm_clips_each_optimizers_gradient(max_grad_norm):
    torch.manual_seed(0)
    agent = AgentPPO(max_grad_norm=max_grad_norm)
    agent.init(32, 3, 1, device="cpu")
    state, target = torch.randn(64, 3), torch.full((64,), 10.0)  # far from the initial values: a large gradient
    agent.optimizer_update(agent.critic_optimizer, agent.criterion(agent.critic(state), target))
    norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in agent.critic.parameters()]))
    assert (norm <= 0.01 + 1e-6) == (max_grad_norm is not None)


@pytest.mark.parametrize("max_grad_norm", [None, 0.01])
@pytest.mark.parametrize("agent_class", [AgentPPO, AgentDiscretePPO])
def test_one_backward_pass_for_actor_and_critic_steps_each_as_two_passes_would(agent_class, max_grad_norm):
    # optimize() steps both networks from the gradient of obj_critic + obj_actor; each network must get its own
    # loss's gradient, clipped on its own, exactly as two separate updates would give it
    torch.manual_seed(0)
    joint = agent_class(max_grad_norm=max_grad_norm)
    joint.init(32, 3, 2, device="cpu")
    apart = agent_class(max_grad_norm=max_grad_norm)
    apart.init(32, 3, 2, device="cpu")
    apart.load_state_dict(joint.state_dict())
    state, target = torch.randn(64, 3), torch.full((64,), 10.0)
    action = torch.randint(0, 2, (64, 1)) if joint.if_discrete else torch.randn(64, 2)
    advantage = torch.randn(64)
    before = [p.detach().clone() for p in [*joint.actor.parameters(), *joint.critic.parameters()]]

    def objectives(agent):
        log_prob, entropy = agent.actor.get_logprob_entropy(state, action)
        obj_actor = agent.get_obj_actor(log_prob, log_prob.detach() - 0.1, advantage) - 0.01 * entropy.mean()
        return agent.criterion(agent.critic(state), target), obj_actor

    for _ in range(3):
        joint.optimize(*objectives(joint))
        obj_critic, obj_actor = objectives(apart)
        apart.optimizer_update(apart.critic_optimizer, obj_critic)
        apart.optimizer_update(apart.actor_optimizer, obj_actor)
    for name, tensor in joint.actor.state_dict().items():
        assert torch.allclose(tensor, apart.actor.state_dict()[name], atol=1e-6), name
    for name, tensor in joint.critic.state_dict().items():
        assert torch.allclose(tensor, apart.critic.state_dict()[name], atol=1e-6), name
    after = [*joint.actor.parameters(), *joint.critic.parameters()]
    assert all(not torch.equal(old, new) for old, new in zip(before, after)), "every parameter of both networks moves"


def test_the_policies_log_probabilities_and_entropies_are_their_distributions():
    torch.manual_seed(0)
    state = torch.randn(20, 3)
    gaussian = AgentPPO()
    gaussian.init(32, 3, 2, device="cpu")
    gaussian.actor.log_std.data = torch.tensor([0.3, -0.7])
    action = torch.randn(20, 2) * 2
    log_prob, entropy = gaussian.actor.get_logprob_entropy(state, action)
    dist = gaussian.actor.distribution(state)
    assert torch.allclose(log_prob, dist.log_prob(action).sum(dim=1), atol=1e-5)
    assert torch.allclose(entropy, dist.entropy().sum(dim=1))
    categorical = AgentDiscretePPO()
    categorical.init(32, 3, 4, device="cpu")
    with torch.no_grad():  # one action certain, one impossible: the entropy stays finite (0 log 0 is 0)
        categorical.actor.net[-1].bias.copy_(torch.tensor([0.0, 1e4, -1e4, 0.0]))
    action = torch.randint(0, 4, (20, 1))
    log_prob, entropy = categorical.actor.get_logprob_entropy(state, action)
    dist = categorical.actor.distribution(state)
    assert torch.allclose(log_prob, dist.log_prob(action.squeeze(1)))
    assert torch.equal(categorical.actor.get_logprob_entropy(state, action.int())[0], log_prob)  # any integer dtype, as Categorical
    assert torch.isfinite(entropy).all() and torch.allclose(entropy, dist.entropy())


@pytest.mark.parametrize("target_kl", [None, 1e-4])
def test_target_kl_ends_the_epochs_once_the_policy_has_moved_that_far(target_kl):
    env = PreprocessEnv("CartPole-v1")
    torch.manual_seed(0)
    agent = AgentDiscretePPO(target_kl=target_kl)
    agent.init(64, env.state_dim, env.action_dim, batch_size=64, repeat_times=8.0, learning_rate=3e-3)
    agent.reset_exploration(env, seed=0)
    buffer = RolloutBuffer(agent.device)
    buffer.extend(agent.explore_env(env, 512))
    logs = agent.update_net(buffer, 512)
    steps = agent.actor_optimizer.state_dict()["state"][0]["step"].item()
    if target_kl is None:
        assert steps == 8 * 512 // 64  # every minibatch of every epoch
    else:  # the first step is always taken (the policy is the rollout's), and the stop comes within the first epochs
        assert 1 <= steps < 512 // 64 * 2 and logs["approx_kl"] <= 1.5 * target_kl


@pytest.mark.parametrize("agent_class", [AgentPPO, AgentInterPPO])
def test_a_gaussian_policy_starts_near_the_same_wide_distribution_in_every_state(agent_class):
    env = PreprocessEnv("LunarLanderContinuous-v3")
    torch.manual_seed(0)
    agent = agent_class()
    agent.init(64, env.state_dim, env.action_dim)
    state = torch.randn(256, env.state_dim) * 3.0  # states far apart, as a lander's are
    policy = agent.actor.distribution(state)
    # with the default layer init each state has its own mean, up to about 0.6 away from 0
    assert policy.mean.abs().max() < 0.05
    assert torch.allclose(policy.stddev, torch.ones_like(policy.stddev))


def test_discrete_ppo_reaches_195_on_cartpole(tmp_path):
    args = Arguments(agent=AgentDiscretePPO(), env="CartPole-v1", random_seed=0, cwd=str(tmp_path), target_return=195.0,
                     break_step=40_000, eval_gap=2048, eval_times1=5, eval_times2=5, if_print=False)
    train_and_evaluate(args)
    assert best_return(args) >= 195.0


def test_ppo_reaches_minus_500_on_pendulum(tmp_path):
    """Random play scores about -1200 to -1500; gamma 0.9 suits Pendulum's short horizon (as the SB3 zoo sets it)."""
    args = Arguments(agent=AgentPPO(), env="Pendulum-v1", random_seed=0, cwd=str(tmp_path), target_return=-500.0,
                     gamma=0.9, learning_rate=1e-3, break_step=80_000, eval_gap=4096, eval_times1=5, eval_times2=5, if_print=False)
    train_and_evaluate(args)
    assert best_return(args) >= -500.0


def test_a2c_beats_random_play_on_cartpole(tmp_path):
    """Random play scores about 22 on CartPole-v1."""
    args = Arguments(agent=AgentDiscreteA2C(), env="CartPole-v1", random_seed=0, cwd=str(tmp_path), target_return=100.0,
                     break_step=40_000, eval_gap=2048, eval_times1=5, eval_times2=5, if_print=False)
    train_and_evaluate(args)
    assert best_return(args) >= 100.0


@pytest.mark.parametrize("if_async", [False, True])
def test_vector_env_rollouts_never_pair_one_episode_with_the_next(if_async):
    import gymnasium as gym

    from elegantrl.env import build_vector_env

    torch.manual_seed(0)
    env = build_vector_env(PreprocessEnv(gym.make("CartPole-v1", max_episode_steps=15)), num_envs=3, if_async=if_async)
    try:
        agent = AgentDiscretePPO()
        agent.init(16, 4, 2)
        agent.reset_exploration(env, seed=0)
        rollout = agent.explore_env(env, 40)
    finally:
        env.close()
    assert rollout.state.shape == (40, 3, 4) and rollout.action.shape == (40, 3, 1) and agent.total_steps == 120
    done = rollout.terminated | rollout.truncated
    assert rollout.truncated.any() and rollout.terminated.any()
    for t in range(39):
        for i in range(3):
            continues = torch.equal(rollout.state[t + 1, i], rollout.next_state[t, i])
            assert continues != bool(done[t, i])  # a finished episode's next_state is its final observation


@pytest.mark.parametrize("agent_name", ["DiscretePPO", "D3QN"])
def test_training_with_a_vector_of_envs(agent_name, tmp_path):
    from elegantrl import agent as agents

    warmup_steps = 0 if agent_name == "DiscretePPO" else 128
    args = Arguments(agent=getattr(agents, "Agent" + agent_name)(), env="CartPole-v1", num_envs=4, cwd=str(tmp_path),
                     net_dim=16, batch_size=64, target_step=64, warmup_steps=warmup_steps, break_step=1024, eval_gap=512,
                     eval_times1=2, eval_times2=0, if_print=False)
    agent = train_and_evaluate(args)
    assert agent.total_steps == 1024  # the warm-up, then rounds of 64 steps x 4 envs: break_step is never exceeded
    with open(os.path.join(args.cwd, "recorder.csv")) as file:
        expected = ["512", "1024"] if warmup_steps == 0 else ["640", "1024"]  # the first round ending past each 512
        assert [row["step"] for row in csv.DictReader(file)] == expected


def test_random_warm_up_is_refused_for_on_policy_agents(tmp_path):
    with pytest.raises(ValueError, match="learns on-policy.*warmup_steps=0"):
        Arguments(agent=AgentPPO(), env="Pendulum-v1", warmup_steps=100, cwd=str(tmp_path)).init_before_training()


def test_single_file_tutorial_solves_cartpole_195_as_a_script(tmp_path):
    import subprocess
    import sys

    tutorial = os.path.join(os.path.dirname(__file__), "..", "examples", "tutorial_single_file_ppo.py")
    with open(tutorial) as file:
        source = file.read()
    imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert imports and not any("elegantrl" in line for line in imports)  # a lesson that stands alone
    assert len(source.splitlines()) <= 300
    result = subprocess.run([sys.executable, tutorial, "--env", "CartPole-v1", "--target-return", "195", "--break-step", "40960"],
                            capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    best = float(result.stdout.strip().splitlines()[-2].split()[-1])  # the last progress line's best column
    assert best >= 195.0, result.stdout


def test_state_normalisation_is_learned_saved_and_loaded_with_the_actor(tmp_path):
    args = Arguments(agent=AgentPPO(), env="Pendulum-v1", if_state_norm=True, cwd=str(tmp_path / "run"), net_dim=16,
                     target_step=512, break_step=1024, eval_gap=512, eval_times1=1, eval_times2=0, if_print=False)
    agent = train_and_evaluate(args)
    norm = agent.actor.net[0]
    assert norm.mean.abs().sum() > 0 and not torch.equal(norm.std, torch.ones_like(norm.std))
    # Pendulum's state is (cos θ, sin θ, θ'): the running std of θ' is far from 1
    assert torch.allclose(agent.critic.net[0].mean, norm.mean) and norm.std[2] > 1.5
    saved = torch.load(os.path.join(args.cwd, "actor.pth"), weights_only=True)
    assert "net.0.mean" in saved and "net.0.std" in saved  # the best actor carries its normalisation
    loaded = AgentPPO()
    loaded.init(16, 3, 1, device=agent.device)  # the same device: a GPU's and the CPU's float results differ in the last bits
    loaded.actor.load_state_dict(saved)
    states = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    assert np.array_equal(loaded.act(states), agent.act(states))


def test_running_state_statistics_match_the_data():
    agent = AgentPPO()
    agent.init(8, 2, 1)
    data = torch.randn(1000, 2) * torch.tensor([3.0, 0.5]) + torch.tensor([1.0, -2.0])
    for chunk in data.split(300):
        agent.update_state_norm(chunk)
    assert torch.allclose(agent.state_mean, data.mean(0), atol=1e-4)
    assert torch.allclose(agent.state_var, data.var(0, unbiased=False), atol=1e-3)
    assert torch.allclose(agent.actor.net[0].std, data.std(0, unbiased=False), atol=1e-3)


def test_a_feature_constant_so_far_is_left_unscaled_and_outliers_are_clipped():
    agent = AgentPPO()
    agent.init(8, 2, 1)
    agent.update_state_norm(torch.stack([torch.randn(200), torch.full((200,), 0.5)], dim=1))  # feature 1 never moved
    norm = agent.actor.net[0]
    assert norm.std[1] == 1.0  # not a tiny std that would multiply its first move by thousands
    moved = norm(torch.tensor([[0.0, 0.51], [1e6, 0.5]]))
    assert moved[0, 1] == pytest.approx(0.01, abs=1e-6) and moved[1, 0] == StateNorm.clip


def test_state_norm_is_a_free_identity_until_set_and_after_loading_unset_statistics():
    agent = AgentPPO()
    agent.init(8, 2, 1)
    states = torch.randn(4, 2)
    norm = agent.actor.net[0]
    assert norm(states) is states  # no arithmetic on the hot path while states are not normalised
    fresh = AgentPPO()
    fresh.init(8, 2, 1)
    fresh.actor.load_state_dict(agent.actor.state_dict())
    assert fresh.actor.net[0](states) is states
    agent.update_state_norm(torch.randn(100, 2) * 3.0 + 1.0)
    fresh.actor.load_state_dict(agent.actor.state_dict())  # a loaded network normalises as the saved one did
    assert torch.allclose(fresh.actor.net[0](states), (states - norm.mean) / norm.std)


def test_a_state_norm_pickled_before_the_flag_existed_works_out_the_flag_from_its_statistics():
    for mean, expected in [(torch.zeros(2), False), (torch.ones(2), True)]:
        norm = StateNorm(2)
        norm.mean.copy_(mean)
        old_state = {k: v for k, v in norm.__dict__.items() if k != "if_active"}
        loaded = StateNorm.__new__(StateNorm)
        loaded.__setstate__(old_state)
        assert loaded.if_active is expected
