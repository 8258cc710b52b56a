"""Continuous off-policy agents: networks, targets with truncation, errors, saving, learning."""

import csv
import os

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch.distributions import Normal, TanhTransform, TransformedDistribution

from elegantrl.agent import AgentD3QN, AgentDDPG, AgentInterSAC, AgentModSAC, AgentSAC, AgentTD3, optimizer_state_fits
from elegantrl.env import PreprocessEnv
from elegantrl.net import Actor, ActorSAC, CriticTwin, InterSPG, StackedLinear, build_head, build_mlp
from elegantrl.replay import ReplayBuffer, Transitions
from elegantrl.run import Arguments, store_and_update, train_and_evaluate

CONTINUOUS_AGENTS = [AgentDDPG, AgentTD3, AgentSAC, AgentModSAC, AgentInterSAC]


def filled_buffer(agent, env_id="Pendulum-v1", steps=512):
    env = PreprocessEnv(env_id)
    agent.reset_exploration(env, seed=0)
    buffer = ReplayBuffer(4096, env.state_dim, env.action_dim, env.if_discrete)
    buffer.extend(agent.explore_env(env, steps, if_random=True))
    return buffer


def test_actor_sac_log_prob_matches_the_tanh_squashed_gaussian():
    torch.manual_seed(0)
    actor = ActorSAC(32, 3, 2)
    state = torch.randn(256, 3)
    torch.manual_seed(1)
    action, log_prob = actor.get_action_logprob(state)
    assert action.shape == (256, 2) and log_prob.shape == (256,) and action.abs().max() < 1.0
    mean, log_std = actor.head.mean_log_std(actor.encoder(state)).chunk(2, dim=1)
    squashed = TransformedDistribution(Normal(mean, log_std.clamp(-16, 2).exp()), TanhTransform())
    inner = action.clamp(-1 + 1e-6, 1 - 1e-6)  # TanhTransform's own inverse is unstable at +-1
    assert torch.allclose(log_prob, squashed.log_prob(inner).sum(dim=1), atol=1e-3)
    assert torch.equal(actor(state), mean.tanh())  # the deterministic action is tanh(mean)


def test_actor_outputs_are_bounded_and_twin_critics_are_independent():
    assert Actor(16, 3, 2)(torch.randn(8, 3) * 1e4).abs().max() <= 1.0
    critic = CriticTwin(16, 3, 2)
    state, action = torch.randn(8, 3), torch.rand(8, 2)
    q1, q2 = critic.get_q_heads(state, action)
    assert q1.shape == (8,) and not torch.allclose(q1, q2)
    torch.testing.assert_close(critic(state, action), q1)  # forward runs the first network's slice alone
    # each stacked network is the plain MLP of its own weights, and learns from its own loss only
    layers = [layer for layer in critic.net if isinstance(layer, StackedLinear)]
    for i, q in enumerate((q1, q2)):
        hidden = torch.cat((state, action), dim=1)
        for j, layer in enumerate(layers):
            hidden = hidden @ layer.weight[i] + layer.bias[i]
            hidden = hidden.relu() if j < len(layers) - 1 else hidden
        torch.testing.assert_close(q, hidden.squeeze(1))
    q2.sum().backward()
    assert layers[0].weight.grad[0].abs().sum() == 0 and layers[0].weight.grad[1].abs().sum() > 0


def separate_twin_critic(net_dim, state_dim, action_dim):
    """The twin critic as elegantrl built it before `StackedLinear`: one MLP per Q network, under ``nets``."""
    critic = torch.nn.Module()
    critic.nets = torch.nn.ModuleList(build_mlp([state_dim + action_dim, net_dim, net_dim, 1]) for _ in range(2))
    return critic


def test_a_twin_critic_saved_as_separate_networks_loads_into_the_stacked_layout():
    old = separate_twin_critic(16, 3, 2)
    state, action = torch.randn(8, 3), torch.rand(8, 2)
    old.nets[0][0].set(torch.ones(3), torch.full((3,), 2.0))
    old.nets[1][0].set(torch.ones(3), torch.full((3,), 2.0))
    critic = CriticTwin(16, 3, 2)
    critic.load_state_dict(old.state_dict())  # strict: no key left over or missing
    expected = [net(torch.cat((state, action), dim=1)).squeeze(1) for net in old.nets]
    for q, q_old in zip(critic.get_q_heads(state, action), expected):
        torch.testing.assert_close(q, q_old)
    inter = InterSPG(16, 3, 2)
    old_heads = torch.nn.ModuleList(build_head([16 + 2, 16, 1]) for _ in range(2))
    inter.load_state_dict({**{k: v for k, v in inter.state_dict().items() if not k.startswith("q_nets.")},
                           **{f"q_nets.{k}": v for k, v in old_heads.state_dict().items()}})
    feature = inter.encoder(state)
    for q, head in zip(inter.get_q_heads(state, action), old_heads):
        torch.testing.assert_close(q, head(torch.cat((feature, action), dim=1)).squeeze(1))


def test_an_agent_saved_with_separate_twin_critics_resumes_with_a_fresh_critic_optimizer(tmp_path):
    agent = AgentSAC()
    agent.init(16, 3, 1)
    state = agent.state_dict()
    old_critic, old_target = separate_twin_critic(16, 3, 1), separate_twin_critic(16, 3, 1)
    old_optimizer = torch.optim.Adam(old_critic.parameters())
    old_critic.nets[0][-1].bias.sum().backward()
    old_optimizer.step()  # Adam's moments, one per separate tensor
    state.update(critic=old_critic.state_dict(), critic_target=old_target.state_dict(), critic_optimizer=old_optimizer.state_dict())
    torch.save(state, tmp_path / "agent.pth")
    actor_optimizer_before = agent.actor_optimizer.state_dict()
    with pytest.warns(UserWarning, match="critic_optimizer does not fit .* starts afresh"):
        agent.save_or_load_agent(str(tmp_path), if_save=False)
    probe = torch.cat((torch.randn(4, 3), torch.rand(4, 1)), dim=1)
    torch.testing.assert_close(agent.critic.get_q_heads(probe[:, :3], probe[:, 3:])[1], old_critic.nets[1](probe).squeeze(1))
    assert not agent.critic_optimizer.state  # the moments start afresh
    assert agent.actor_optimizer.state_dict()["param_groups"] == actor_optimizer_before["param_groups"]
    buffer = filled_buffer(agent)
    agent.update_net(buffer, 256)  # and training goes on
    assert all(torch.isfinite(param).all() for param in agent.critic.parameters())


@pytest.mark.parametrize("agent_class", [AgentDDPG, AgentTD3])
def test_continuous_target_bootstraps_on_truncation_only(agent_class):
    agent = agent_class(policy_noise=0.0) if agent_class is AgentTD3 else agent_class()
    agent.init(8, 2, 1, gamma=0.5)
    with torch.no_grad():
        agent.critic_target.net[-1].weight.zero_()
        agent.critic_target.net[-1].bias.fill_(4.0)  # Q_target(s', a') = 4 everywhere, for every network
        agent.critic.net[-1].weight.zero_()
        agent.critic.net[-1].bias.zero_()
    batch = Transitions(torch.zeros(2, 2), torch.zeros(2, 1), torch.tensor([2.0, 2.0]), torch.tensor([True, False]),
                        torch.tensor([False, True]), torch.zeros(2, 2))
    obj_critic, _ = agent.get_obj_critic(batch)
    labels = [2.0, 2.0 + 0.5 * 4.0]  # terminated: r; truncated: r + gamma * Q(s')
    expected = agent.critic.num_nets * np.mean([label - 0.5 for label in labels])
    assert obj_critic.item() == pytest.approx(expected)


def test_td3_updates_the_actor_every_second_critic_step():
    agent = AgentTD3()
    agent.init(16, 3, 1, batch_size=32, repeat_times=1.0)
    buffer = filled_buffer(agent, steps=320)  # 320 * 1 / 32 = 10 critic steps
    actor_before = [p.clone() for p in agent.actor.parameters()]
    logs = agent.update_net(buffer, len(buffer))
    assert agent.update_count == 10
    assert agent.actor_optimizer.state_dict()["state"][0]["step"] == 5
    assert not all(torch.equal(a, b) for a, b in zip(actor_before, agent.actor.parameters()))
    assert {"obj_critic", "q_value", "obj_actor"} <= set(logs)


def test_td3_moves_its_target_networks_once_per_actor_step():
    """TD3's Algorithm 1: the targets move after each delayed actor step, not after every critic step."""
    agent = AgentTD3(actor_update_gap=3)
    agent.init(16, 3, 1, batch_size=32, repeat_times=1.0, soft_update_tau=0.5)
    buffer = filled_buffer(agent, steps=320)
    targets = (agent.critic_target, agent.actor_target)
    seen = []
    for _ in range(6):
        before = [[p.clone() for p in net.parameters()] for net in targets]
        agent.update_step(buffer)
        seen.append([not all(torch.equal(a, b) for a, b in zip(old, net.parameters())) for old, net in zip(before, targets)])
    assert seen == [[False, False], [False, False], [True, True]] * 2
    # the actor's target moves toward the actor after its step, not before it
    before = [p.clone() for p in agent.actor_target.parameters()]
    for _ in range(3):
        agent.update_step(buffer)
    expected = [old.lerp(new, 0.5) for old, new in zip(before, agent.actor.parameters())]
    assert all(torch.allclose(a, b) for a, b in zip(agent.actor_target.parameters(), expected))


def test_ou_noise_is_correlated_in_time():
    agent = AgentDDPG(explore_noise=0.2, if_ou_noise=True)
    agent.init(8, 3, 1)
    torch.manual_seed(0)
    with torch.no_grad():
        mean_action = agent.actor(torch.zeros(1, 3))
        noise = np.array([(agent.select_action(torch.zeros(1, 3)) - mean_action).item() for _ in range(2000)])
    noise = noise[np.abs(noise) < 0.99]  # leave out samples cut by the clamp to [-1, 1]
    assert np.corrcoef(noise[:-1], noise[1:])[0, 1] > 0.6


def test_ou_noise_is_its_own_for_each_env():
    agent = AgentDDPG(explore_noise=0.2, if_ou_noise=True)
    agent.init(8, 3, 2)
    states = torch.zeros(4, 3)  # four envs stepped at once, all in the same state
    with torch.no_grad():
        noise = agent.select_action(states) - agent.actor(states)
    assert len({tuple(row.tolist()) for row in noise}) == 4
    fresh = AgentDDPG(explore_noise=0.2, if_ou_noise=True)
    fresh.init(8, 3, 2)
    fresh.load_state_dict(agent.state_dict())  # a resume: the noise of the run's envs is not part of the checkpoint
    assert "ou_state" not in agent.state_dict()


def test_a_warm_up_rollout_stored_with_a_learned_one_buys_no_gradient_steps():
    # the asynchronous workers' first batch can hold warm-up rollouts and learned ones together
    agent = AgentTD3()
    agent.init(8, 3, 1, batch_size=32, repeat_times=64.0)
    env = PreprocessEnv("Pendulum-v1")
    agent.reset_exploration(env, seed=0)
    warm_up, learned = agent.explore_env(env, 256, if_random=True), agent.explore_env(env, 64, if_random=False)
    buffer = ReplayBuffer(4096, env.state_dim, env.action_dim, env.if_discrete)
    store_and_update(agent, buffer, [warm_up, learned], Arguments(agent=agent, env=env), [False, True])
    assert buffer.cur_size == 320 and agent.update_count == 64 * 64 // 32  # the 64 learned steps' worth only


def test_sac_actor_objective_uses_the_temperature_of_its_critic_target():
    """All of a step's objectives use alpha from before the temperature's own step (the paper's simultaneous updates, SB3)."""
    agent = AgentSAC()
    agent.init(16, 3, 1, batch_size=32)
    batch = filled_buffer(agent).sample_batch(32)
    with torch.no_grad():
        agent.log_alpha.fill_(1.0)
    alpha = agent.alpha
    torch.manual_seed(0)
    action, log_prob = agent.actor.get_action_logprob(batch.state)
    expected = (alpha * log_prob - torch.min(*agent.critic.get_q_heads(batch.state, action))).mean()
    torch.manual_seed(0)
    objective = agent.get_obj_actor(batch)
    assert agent.alpha < alpha  # the temperature took its step (the entropy is above the target at the start)
    assert objective.item() == pytest.approx(expected.item(), rel=1e-6)


def test_inter_sac_actor_objective_does_not_train_the_critic_heads():
    agent = AgentInterSAC()
    agent.init(16, 3, 1, batch_size=32)
    assert agent.actor is agent.critic  # one network
    batch = filled_buffer(agent).sample_batch(32)
    agent.critic.zero_grad(set_to_none=True)
    agent.get_obj_actor(batch).backward()
    assert all(p.grad is None for p in agent.critic.q_nets.parameters())
    assert agent.critic.actor_head.mean_log_std.weight.grad.abs().sum() > 0
    assert agent.critic.encoder[1].weight.grad.abs().sum() > 0  # through the action path


@pytest.mark.parametrize("agent_class", CONTINUOUS_AGENTS)
def test_update_and_save_load_round_trip(agent_class, tmp_path):
    agent = agent_class()
    agent.init(16, 3, 1, batch_size=32, repeat_times=2.0)
    logs = agent.update_net(filled_buffer(agent, steps=256), 256)
    assert all(np.isfinite(list(logs.values())))
    if isinstance(agent, AgentSAC):
        assert "alpha" in logs and agent.log_alpha.item() != 0.0  # the temperature is learned
    agent.save_or_load_agent(str(tmp_path), if_save=True)
    loaded = agent_class()
    loaded.init(16, 3, 1)
    loaded.save_or_load_agent(str(tmp_path), if_save=False)
    states = np.random.default_rng(0).normal(size=(10, 3)).astype(np.float32)
    assert np.array_equal(loaded.act(states), agent.act(states))
    assert loaded.act(states[0]).shape == (1,) and np.abs(loaded.act(states)).max() <= 1.0
    if isinstance(agent, AgentSAC):
        assert loaded.log_alpha.item() == agent.log_alpha.item()


def test_continuous_agent_on_a_discrete_env_names_the_agents_that_fit(tmp_path):
    with pytest.raises(ValueError, match="AgentSAC needs a continuous.*CartPole-v1 has Discrete.*AgentD3QN"):
        Arguments(agent=AgentSAC(), env="CartPole-v1", cwd=str(tmp_path)).init_before_training()


def test_discrete_agent_on_a_continuous_env_names_the_agents_that_fit(tmp_path):
    with pytest.raises(ValueError, match="AgentD3QN needs a discrete.*AgentSAC"):
        Arguments(agent=AgentD3QN(), env="Pendulum-v1", cwd=str(tmp_path)).init_before_training()


class UnboundedActions(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,))
    action_space = gym.spaces.Box(-np.inf, np.inf, (1,))


def test_unbounded_box_is_a_clear_error(tmp_path):
    env = PreprocessEnv(UnboundedActions(), max_step=10)
    with pytest.raises(ValueError, match="unbounded Box action space.*finite low and high.*env.action_space ="):
        Arguments(agent=AgentSAC(), env=env, cwd=str(tmp_path)).init_before_training()
    fixed = UnboundedActions()
    fixed.action_space = gym.spaces.Box(-2.0, 2.0, (1,))  # the fix the message gives
    assert PreprocessEnv(fixed, max_step=10).if_bounded_actions


@pytest.mark.parametrize("env_id", ["LunarLanderContinuous-v3", "BipedalWalker-v3"])
def test_box2d_envs_train_through_the_same_api(env_id, tmp_path):
    args = Arguments(agent=AgentSAC(), env=env_id, cwd=str(tmp_path), net_dim=16, batch_size=32, warmup_steps=64,
                     target_step=32, break_step=128, eval_gap=128, eval_times1=1, eval_times2=0, if_print=False)
    train_and_evaluate(args)
    assert {"actor.pth", "recorder.csv", "learning_curve.png"} <= set(os.listdir(args.cwd))


@pytest.mark.parametrize("agent_class", [AgentSAC, AgentTD3, AgentDDPG])
def test_agent_reaches_minus_400_on_pendulum(agent_class, tmp_path):
    """Random play scores about -1200 to -1500 on Pendulum-v1."""
    args = Arguments(agent=agent_class(), env="Pendulum-v1", random_seed=0, cwd=str(tmp_path), target_return=-400.0,
                     break_step=12_000, eval_gap=1000, eval_times1=5, eval_times2=5, if_print=False)
    train_and_evaluate(args)
    with open(os.path.join(args.cwd, "recorder.csv")) as file:
        best = max(float(row["return_mean"]) for row in csv.DictReader(file))
    assert best >= -400.0


def test_optimizer_state_fits_compares_every_moment_and_the_groups():
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.Adam([param])
    assert optimizer_state_fits(optimizer, optimizer.state_dict())  # no moments yet
    param.sum().backward()
    optimizer.step()
    assert optimizer_state_fits(optimizer, optimizer.state_dict())
    scalar = torch.nn.Parameter(torch.zeros(()))  # a 0-dim parameter's moments are 0-dim too
    saved = torch.optim.Adam([scalar])
    scalar.backward()
    saved.step()
    assert not optimizer_state_fits(optimizer, saved.state_dict())
    two_groups = torch.optim.Adam([{"params": [param]}, {"params": [torch.nn.Parameter(torch.zeros(1))]}])
    one_group = torch.optim.Adam([param, torch.nn.Parameter(torch.zeros(1))])
    assert not optimizer_state_fits(one_group, two_groups.state_dict())


def test_sac_built_again_for_another_env_steers_toward_that_envs_entropy():
    agent = AgentSAC()
    agent.init(8, 3, 1)
    agent.init(8, 3, 4)  # the same agent object, reused on an env with four action dimensions
    assert agent.entropy_target == -4.0 and agent.target_entropy is None
    given = AgentSAC(target_entropy=-0.5)
    given.init(8, 3, 4)
    assert given.entropy_target == -0.5
