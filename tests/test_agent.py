"""Agents: learning targets with truncation, exploration rollouts, acting, saving and loading."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from elegantrl.agent import (
    AgentD3QN,
    AgentDDPG,
    AgentDoubleDQN,
    AgentDQN,
    AgentDuelingDQN,
    AgentModSAC,
    AgentPPO,
    AgentQRDQN,
    AgentSAC,
    AgentTD3,
    clip_grad_norm,
    quantile_huber_loss,
)
from elegantrl.env import PreprocessEnv
from elegantrl.replay import ReplayBuffer, Transitions


def batch_of(terminated, truncated, reward=1.0):
    n = len(terminated)
    return Transitions(
        state=torch.zeros(n, 2), action=torch.zeros(n, 1, dtype=torch.long), reward=torch.full((n,), reward),
        terminated=torch.tensor(terminated), truncated=torch.tensor(truncated), next_state=torch.zeros(n, 2),
    )


def constant_heads(net, *biases):
    """Makes every head of a Q network output the constant Q values `biases[i]`."""
    with torch.no_grad():
        for head, bias in zip(net.heads, biases):
            head.weight.zero_()
            head.bias.copy_(torch.tensor(bias))


def test_truncated_transition_bootstraps_and_terminated_does_not():
    agent = AgentDQN()
    agent.init(8, 2, 2, gamma=0.9, reward_scale=2.0)
    batch = batch_of(terminated=[True, False, False], truncated=[False, True, False])
    next_q = torch.tensor([5.0, 5.0, 5.0])
    label = agent.q_label(batch, next_q)
    assert label.tolist() == pytest.approx([2.0, 2.0 + 0.9 * 5.0, 2.0 + 0.9 * 5.0])


def test_twin_target_takes_the_smaller_head_and_respects_termination():
    agent = AgentDoubleDQN()
    agent.init(8, 2, 2, gamma=0.9)
    constant_heads(agent.critic_target, [3.0, 5.0], [4.0, 2.0])  # min over heads [3, 2] -> max 3
    constant_heads(agent.critic, [0.0, 0.0], [0.0, 0.0])
    obj_critic, q_value = agent.get_obj_critic(batch_of(terminated=[True, False], truncated=[False, True]))
    # labels [1, 1 + 0.9*3 = 3.7]; Huber(0, L) = L - 0.5 for L >= 1; mean per head, summed over 2 heads
    assert obj_critic.item() == pytest.approx(2 * np.mean([0.5, 3.2]))
    assert q_value.tolist() == [0.0, 0.0]


def constant_quantiles(net, quantiles):
    """Makes a quantile Q network output the constant quantiles `quantiles[action][i]` for every state."""
    with torch.no_grad():
        net.net[-1].weight.zero_()
        net.net[-1].bias.copy_(torch.tensor(quantiles).flatten())


def test_quantile_huber_loss_is_the_papers_formula_on_a_hand_case():
    # N = 2, so τ̂ = (1/4, 3/4); quantiles θ = (0, 2), target samples Tθ = (-0.5, 3); u_ij = Tθ_j - θ_i
    #   i=0, τ̂=1/4: u = -0.5 -> |1/4 - 1|·0.5·0.25 = 0.09375;  u = 3   -> 1/4·(3 - 0.5)   = 0.625
    #   i=1, τ̂=3/4: u = -2.5 -> |3/4 - 1|·(2.5 - 0.5) = 0.5;   u = 1   -> 3/4·0.5·1       = 0.375
    # Σ_i mean_j: (0.09375 + 0.625) / 2 + (0.5 + 0.375) / 2 = 0.796875; a second, all-zero sample adds 0
    quantiles = torch.tensor([[0.0, 2.0], [1.0, 1.0]])
    target = torch.tensor([[-0.5, 3.0], [1.0, 1.0]])
    assert quantile_huber_loss(quantiles, target).item() == pytest.approx(0.796875 / 2)


def test_qrdqn_target_takes_the_quantiles_of_the_action_best_by_mean_and_respects_termination():
    agent = AgentQRDQN(num_quantiles=2)
    agent.init(8, 2, 2, gamma=0.5)
    # action 0: mean 5 with quantiles (0, 10); action 1: mean 4 with (4, 4). The per-quantile max would be (4, 10).
    for net in (agent.critic_target, agent.critic):
        constant_quantiles(net, [[0.0, 10.0], [4.0, 4.0]])
    assert agent.get_next_q(torch.zeros(3, 2)).tolist() == [[0.0, 10.0]] * 3
    assert agent.act(np.zeros(2, dtype=np.float32)) == 0 and agent.act(np.zeros((4, 2), dtype=np.float32)).tolist() == [0] * 4

    constant_quantiles(agent.critic, [[0.0, 2.0], [0.0, 2.0]])
    batch = batch_of(terminated=[True, False], truncated=[False, True], reward=-0.5)
    obj_critic, q_value = agent.get_obj_critic(batch)
    # terminated: target (-0.5, -0.5), loss 0.09375 + 0.5 = 0.59375 (as in the hand case above);
    # truncated bootstraps: -0.5 + 0.5·(0, 10) = (-0.5, 4.5), loss (0.09375 + 1) / 2 + (0.5 + 1.5) / 2 = 1.546875
    assert obj_critic.item() == pytest.approx((0.59375 + 1.546875) / 2)
    assert q_value.tolist() == [1.0, 1.0]  # the mean over quantiles


def test_explore_env_pairs_each_state_with_its_own_next_state_across_episode_ends():
    torch.manual_seed(0)
    env = PreprocessEnv(gym.make("CartPole-v1", max_episode_steps=10))  # truncates every 10 steps unless it falls
    agent = AgentDQN()
    agent.init(16, env.state_dim, env.action_dim)
    agent.reset_exploration(env, seed=0)
    rollout = agent.explore_env(env, 60)
    assert rollout.state.shape == (60, 1, 4) and rollout.action.shape == (60, 1, 1) and rollout.reward.shape == (60, 1)
    assert rollout.action.dtype == torch.int64 and rollout.terminated.dtype == torch.bool
    done = (rollout.terminated | rollout.truncated)[:, 0]
    assert rollout.truncated.any()
    for t in range(59):
        continues = torch.equal(rollout.state[t + 1], rollout.next_state[t])
        assert continues != bool(done[t])  # after an episode end the next state is a reset, never the final obs
    assert agent.total_steps == 60
    assert np.array_equal(agent.last_state[0], rollout.next_state[-1, 0].numpy()) != bool(done[-1])


def test_explore_rate_decays_on_schedule():
    agent = AgentDQN(explore_rate=(1.0, 0.1), explore_decay_steps=100)
    agent.init(8, 2, 2)
    assert agent.explore_rate == 1.0
    agent.total_steps = 50
    assert agent.explore_rate == pytest.approx(0.55)
    agent.total_steps = 1000
    assert agent.explore_rate == pytest.approx(0.1)
    with pytest.raises(ValueError, match="explore_rate"):
        AgentDQN(explore_rate=(0.1, 0.5))


@pytest.mark.parametrize("agent_class", [AgentDQN, AgentDuelingDQN, AgentDoubleDQN, AgentD3QN, AgentQRDQN])
def test_act_is_greedy_for_one_state_and_for_a_batch(agent_class):
    agent = agent_class()
    agent.init(16, 4, 3)
    states = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    actions = agent.act(states)
    assert actions.shape == (5,)
    assert np.array_equal(actions, agent.critic(torch.as_tensor(states)).argmax(dim=1).numpy())
    assert agent.act(states[0]) == actions[0]


def test_update_net_uses_each_transition_repeat_times_on_average():
    agent = AgentDQN()
    agent.init(16, 4, 2, batch_size=32, repeat_times=4.0)
    env = PreprocessEnv("CartPole-v1")
    agent.reset_exploration(env, seed=0)
    buffer = ReplayBuffer(1000, 4, 2, True)
    steps = []
    original = agent.update_step
    agent.update_step = lambda buf: steps.append(1) or original(buf)
    for _ in range(3):
        buffer.extend(agent.explore_env(env, 20, if_random=True))
        logs = agent.update_net(buffer, new_steps=20)
    assert len(steps) == int(60 * 4 / 32)  # 7.5 -> 7, the half step carried over
    assert set(logs) == {"obj_critic", "q_value", "explore_rate"} and all(np.isfinite(list(logs.values())))


def test_a_target_update_gap_with_tau_one_copies_the_network_every_gap_steps(tmp_path):
    """The original DQN's target: a copy every N gradient steps, fixed in between, and a resume keeps the phase."""
    env = PreprocessEnv("CartPole-v1")
    agent = AgentDQN(target_update_gap=4)
    agent.init(16, 4, 2, batch_size=16, repeat_times=1.0, soft_update_tau=1.0)
    agent.reset_exploration(env, seed=0)
    buffer = ReplayBuffer(1000, 4, 2, True)
    buffer.extend(agent.explore_env(env, 200, if_random=True))
    copied = []
    for _ in range(6):
        agent.update_step(buffer)
        copied.append(all(torch.equal(a, b) for a, b in zip(agent.critic_target.parameters(), agent.critic.parameters())))
    assert copied == [False, False, False, True, False, False]  # the weights move every step; the target only at the copy

    agent.save_or_load_agent(str(tmp_path), if_save=True)
    resumed = AgentDQN(target_update_gap=4)
    resumed.init(16, 4, 2, batch_size=16, repeat_times=1.0, soft_update_tau=1.0)
    resumed.save_or_load_agent(str(tmp_path), if_save=False)
    assert resumed.update_count == 6
    resumed.update_step(buffer)
    assert not all(torch.equal(a, b) for a, b in zip(resumed.critic_target.parameters(), resumed.critic.parameters()))
    resumed.update_step(buffer)  # the 8th step: a copy, two steps after the resume and not four
    assert all(torch.equal(a, b) for a, b in zip(resumed.critic_target.parameters(), resumed.critic.parameters()))


@pytest.mark.parametrize("agent_class", [AgentDQN, AgentQRDQN])
@pytest.mark.parametrize("max_grad_norm", [None, 0.01])
def test_max_grad_norm_clips_the_q_networks_gradient(agent_class, max_grad_norm):
    """SB3's DQN clips at norm 10: the DQN family takes the same setting, off by default."""
    torch.manual_seed(0)
    env = PreprocessEnv("CartPole-v1")
    agent = agent_class(max_grad_norm=max_grad_norm)
    agent.init(16, 4, 2, batch_size=32, reward_scale=100.0)  # large rewards: a gradient far above 0.01
    agent.reset_exploration(env, seed=0)
    buffer = ReplayBuffer(1000, 4, 2, True)
    buffer.extend(agent.explore_env(env, 100, if_random=True))
    agent.update_step(buffer)
    norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in agent.critic.parameters()]))
    assert (norm <= 0.01 + 1e-6) == (max_grad_norm is not None)


@pytest.mark.parametrize("max_norm", [1e-3, 1e3])
def test_clip_grad_norm_gives_torchs_clip_grad_norm(max_norm):
    """The foreach clipping scales every gradient as torch's function does, clipping or not, and skips
    parameters without a gradient."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2), torch.nn.Linear(2, 2))
    net[2].bias.requires_grad_(False)
    net(torch.randn(64, 4)).pow(2).sum().backward()
    with_grad = [p for p in net.parameters() if p.grad is not None]
    reference = [torch.nn.Parameter(p.detach().clone()) for p in with_grad]
    for copy, param in zip(reference, with_grad):
        copy.grad = param.grad.clone()
    expected_norm = torch.nn.utils.clip_grad_norm_(reference, max_norm)
    ours = clip_grad_norm(net.parameters(), max_norm)
    assert torch.allclose(ours, expected_norm)
    assert all(torch.allclose(p.grad, r.grad) for p, r in zip(with_grad, reference))
    assert (ours > max_norm) == (max_norm == 1e-3)  # one case clips, the other leaves the gradient alone


def test_save_and_load_round_trip(tmp_path):
    env = PreprocessEnv("CartPole-v1")
    agent = AgentD3QN()
    agent.init(16, 4, 2, batch_size=16)
    agent.reset_exploration(env, seed=0)
    buffer = ReplayBuffer(1000, 4, 2, True)
    buffer.extend(agent.explore_env(env, 200, if_random=True))
    agent.update_net(buffer, 200)  # moves the weights and the optimizer's state away from their initial values
    agent.save_or_load_agent(str(tmp_path), if_save=True)

    loaded = AgentD3QN()
    loaded.init(16, 4, 2)
    states = np.random.default_rng(1).normal(size=(64, 4)).astype(np.float32)
    assert not torch.equal(loaded.critic(torch.as_tensor(states)), agent.critic(torch.as_tensor(states)))
    loaded.save_or_load_agent(str(tmp_path), if_save=False)
    for name in ("critic", "critic_target"):
        for a, b in zip(getattr(agent, name).parameters(), getattr(loaded, name).parameters()):
            assert torch.equal(a, b)
    assert np.array_equal(loaded.act(states), agent.act(states))
    assert loaded.total_steps == agent.total_steps == 200
    assert loaded.critic_optimizer.state_dict()["state"].keys() == agent.critic_optimizer.state_dict()["state"].keys()

    with pytest.raises(FileNotFoundError, match="no saved agent"):
        loaded.save_or_load_agent(str(tmp_path / "missing"), if_save=False)

def test_a_checkpoint_keeps_the_loading_machines_adam_kernel(tmp_path):
    """A checkpoint saved with fused Adam (CUDA, or torch >= 2.4 on a CPU) loads where fused Adam does not exist."""
    saved = AgentSAC()
    saved.init(16, 3, 1, batch_size=16)
    state = saved.state_dict()
    for name in ("critic_optimizer", "actor_optimizer", "alpha_optimizer"):
        for group in state[name]["param_groups"]:
            group.update(fused=True, foreach=None)
    loaded = AgentSAC()
    loaded.init(16, 3, 1, batch_size=16)
    for optimizer in (loaded.critic_optimizer, loaded.actor_optimizer, loaded.alpha_optimizer):
        for group in optimizer.param_groups:
            group.update(fused=None, foreach=False)  # this machine's Adam: the plain per-tensor loop
    loaded.load_state_dict(state)
    for optimizer in (loaded.critic_optimizer, loaded.actor_optimizer, loaded.alpha_optimizer):
        assert all(group["fused"] is None and group["foreach"] is False for group in optimizer.param_groups)
    buffer = ReplayBuffer(100, 3, 1, False)
    env = PreprocessEnv("Pendulum-v1")
    loaded.reset_exploration(env, seed=0)
    buffer.extend(loaded.explore_env(env, 50, if_random=True))
    loaded.update_net(buffer, 50)  # steps with the kernel of this machine
    assert all(torch.isfinite(p).all() for p in loaded.critic.parameters())



@pytest.mark.parametrize(
    "agent_class, setting",
    [
        (AgentDQN, dict(explore_rate=0.1)),
        (AgentDQN, dict(explore_rate=(0.1, 0.5))),
        (AgentQRDQN, dict(num_quantiles=0)),
        (AgentDQN, dict(target_update_gap=0)),
        (AgentQRDQN, dict(target_update_gap=2.5)),
        (AgentQRDQN, dict(num_quantiles=2.5)),
        (AgentTD3, dict(actor_update_gap=0)),
        (AgentModSAC, dict(actor_update_gap=1.5)),
        (AgentDDPG, dict(explore_noise=-0.1)),
        (AgentSAC, dict(target_entropy=float("nan"))),
        (AgentPPO, dict(ratio_clip=-1.0)),
        (AgentPPO, dict(lambda_gae_adv=1.5)),
        # the wrong type: refused with the rule, not a TypeError from comparing it
        (AgentPPO, dict(ratio_clip=None)),
        (AgentSAC, dict(target_entropy="auto")),
        (AgentTD3, dict(policy_noise="0.2")),
        (AgentDQN, dict(explore_rate=("1", 0.1))),
        (AgentPPO, dict(lambda_entropy=True)),
        (AgentPPO, dict(max_grad_norm=0.0)),
        (AgentDQN, dict(max_grad_norm=-1.0)),
        (AgentQRDQN, dict(max_grad_norm="10")),
        (AgentPPO, dict(max_grad_norm=float("nan"))),
        (AgentPPO, dict(max_grad_norm="0.5")),
        (AgentPPO, dict(target_kl=0.0)),
        (AgentPPO, dict(target_kl="0.02")),
    ],
)
def test_a_bad_agent_setting_is_refused_when_the_agent_is_made(agent_class, setting):
    (name, value), = setting.items()
    with pytest.raises(ValueError, match=f"{agent_class.__name__}\\({name}="):
        agent_class(**setting)


def test_every_agent_is_a_short_subclass_of_exactly_one_family_base():
    from elegantrl.agent import AgentMCTS, AgentOffPolicy, AgentOnPolicy
    from elegantrl.replay import EpisodeBuffer, ReplayBuffer, RolloutBuffer
    from elegantrl.run import list_agents

    agents = list_agents()
    assert not {"OffPolicy", "OnPolicy", "MCTS", "Base"} & set(agents)  # templates, not agents
    storage = {AgentOffPolicy: ReplayBuffer, AgentOnPolicy: RolloutBuffer, AgentMCTS: EpisodeBuffer}
    for name, agent_class in agents.items():
        families = [base for base in storage if issubclass(agent_class, base)]
        assert len(families) == 1, name
        agent = agent_class()
        agent.init(8, 4, 2)
        buffer = agent.make_buffer(max_memo=64)
        assert isinstance(buffer, storage[families[0]]), name
        if families[0] is AgentOnPolicy:  # no TD-learning machinery where it is never used
            assert not hasattr(agent, "critic_target") and not hasattr(agent_class, "q_label"), name


def test_act_names_the_shape_it_expects():
    agent = AgentDQN()
    agent.init(8, 4, 2)
    with pytest.raises(ValueError, match=r"one state of shape \(4,\) or a batch of shape \(n, 4\), got shape \(2, 3, 4\)"):
        agent.act(np.zeros((2, 3, 4), dtype=np.float32))
    with pytest.raises(ValueError, match=r"got shape \(5,\)") as refused:
        agent.act(np.zeros(5, dtype=np.float32))
    assert "flatten" not in str(refused.value)
    # an env's own (2, 2) observation, which PreprocessEnv flattened in training: the message says so
    with pytest.raises(ValueError, match=r"got shape \(2, 2\): flatten the env's observation first \(obs.reshape\(-1\)\)"):
        agent.act(np.zeros((2, 2), dtype=np.float32))
    # a Discrete observation's index, which PreprocessEnv gave one-hot in training
    with pytest.raises(ValueError, match=r"got shape \(\): a Discrete observation \(an index\) goes in one-hot, "
                                         r"np.eye\(4\)\[obs - observation_space.start\]"):
        agent.act(3)
