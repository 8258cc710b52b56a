"""The MCTS family: the batched tree search, the rollouts' path to the EpisodeBuffer, MuZero's wiring."""

import csv
import os

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from elegantrl.agent import AgentMCTS, AgentMuZero, tree_search
from elegantrl.env import PreprocessEnv, build_vector_env
from elegantrl.replay import EpisodeBuffer, SearchTransitions
from elegantrl.run import Arguments, list_agents, load_agent, train_and_evaluate, train_and_evaluate_mp


class BanditModel(nn.Module):
    """A hand-made model: action 1 earns reward 1, action 0 nothing, every value is 0, and the prior prefers action 0."""

    def initial(self, state):
        batch = len(state)
        return state.new_zeros(batch, 1), torch.tensor([[0.7, 0.3]]).log().expand(batch, 2), state.new_zeros(batch)

    def recurrent(self, latent, action):
        return latent, action.float(), torch.tensor([[0.7, 0.3]]).log().expand(len(action), 2), torch.zeros(len(action))


class ChainModel(nn.Module):
    """One action: a chain where the step into depth d earns reward d and the node at depth d is worth 10·d."""

    def initial(self, state):
        return state.new_zeros(len(state), 1), state.new_zeros(len(state), 1), state.new_zeros(len(state))

    def recurrent(self, latent, action):
        depth = latent + 1
        return depth, depth[:, 0], torch.zeros_like(depth), 10 * depth[:, 0]


def muzero(seed: int = 0, **settings) -> AgentMuZero:
    torch.manual_seed(seed)
    agent = AgentMuZero(**settings)
    agent.init(32, 4, 2)
    torch.nn.init.normal_(agent.actor.prediction[-1].weight, std=0.5)  # a prior and values that are not the untrained uniform and 0
    return agent


def states(n: int = 6, seed: int = 1) -> torch.Tensor:
    return torch.as_tensor(np.random.default_rng(seed).normal(size=(n, 4)), dtype=torch.float32)


def test_one_simulation_without_noise_takes_the_priors_most_likely_action():
    agent = muzero(num_simulations=1)
    tree = agent.search(states(16), if_noise=False)
    prior_best = agent.actor.initial(states(16))[1].argmax(dim=1)
    assert torch.equal(tree.root_policy().argmax(dim=1), prior_best)
    assert torch.equal(tree.visit[:, 0].sum(dim=1), torch.ones(16))


def test_search_on_a_hand_made_model_finds_the_better_action_against_the_prior():
    tree = tree_search(BanditModel(), torch.zeros(3, 1), num_simulations=20, gamma=0.9)
    assert tree.root_policy().argmax(dim=1).tolist() == [1, 1, 1]
    assert (tree.visit[:, 0, 1] > tree.visit[:, 0, 0]).all()
    assert tree.root_value().gt(0.5).all()  # most simulations earned the reward


@pytest.mark.parametrize("num_simulations", [1, 2, 7, 25])
def test_root_visits_sum_to_the_simulations_and_every_node_counts_its_own_expansion(num_simulations):
    agent = muzero(num_simulations=num_simulations)
    tree = agent.search(states())
    assert torch.equal(tree.visit[:, 0].sum(dim=1), torch.full((6,), float(num_simulations)))
    assert torch.allclose(tree.root_policy().sum(dim=1), torch.ones(6))
    # an expanded node n is reached through one edge, visited once for its expansion and once per simulation below it
    for b in range(6):
        expanded = tree.child[b] > 0
        assert sorted(tree.child[b][expanded].tolist()) == list(range(1, num_simulations + 1))
        incoming = tree.visit[b][expanded]
        below = tree.visit[b, tree.child[b][expanded]].sum(dim=1)
        assert torch.equal(incoming, 1 + below)


def test_backup_on_a_chain_is_r_plus_gamma_v_by_hand():
    # gamma 0.5. sim 1: edge 0 gets 1 + 0.5·10 = 6. sim 2: edge 1 gets 2 + 0.5·20 = 12, edge 0 gets 1 + 0.5·12 = 7.
    # sim 3: edge 2 gets 3 + 0.5·30 = 18, edge 1 gets 2 + 0.5·18 = 11, edge 0 gets 1 + 0.5·11 = 6.5
    tree = tree_search(ChainModel(), torch.zeros(1, 1), num_simulations=3, gamma=0.5)
    assert tree.child[0, :, 0].tolist() == [1, 2, 3, 0]
    assert tree.visit[0, :3, 0].tolist() == [3, 2, 1]
    assert tree.value_sum[0, :3, 0].tolist() == [6 + 7 + 6.5, 12 + 11, 18]
    assert tree.reward[0, :3, 0].tolist() == [1, 2, 3]
    assert tree.root_value().item() == pytest.approx((0 + 6 + 7 + 6.5) / 4)  # the root's own value 0, then 3 returns


def test_a_batched_search_equals_the_same_searches_one_at_a_time():
    agent = muzero(num_simulations=12)
    state = states(5)
    noise = torch.distributions.Dirichlet(torch.full((2,), 0.25)).sample((5,))
    batched = tree_search(agent.actor, state, 12, 0.99, noise)
    for b in range(5):
        alone = tree_search(agent.actor, state[b : b + 1], 12, 0.99, noise[b : b + 1])
        assert torch.equal(alone.child[0], batched.child[b]) and torch.equal(alone.visit[0], batched.visit[b])
        for name in ("value_sum", "reward", "prior", "value"):
            assert torch.allclose(getattr(alone, name)[0], getattr(batched, name)[b], atol=1e-5), name


def test_one_seed_gives_one_tree():
    agent = muzero(num_simulations=10)

    def search(seed):
        torch.manual_seed(seed)
        return agent.search(states())

    first, again, other = search(3), search(3), search(4)
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    assert not torch.equal(first.prior[:, 0], other.prior[:, 0])  # the root noise is the seed's


def test_rollouts_reach_the_episode_buffer_and_only_truncation_bootstraps():
    torch.manual_seed(0)
    env = build_vector_env(PreprocessEnv(gym.make("CartPole-v1", max_episode_steps=15)), 3)
    agent = AgentMuZero(num_simulations=4)
    agent.init(16, 4, 2, reward_scale=0.5)
    torch.nn.init.normal_(agent.actor.prediction[-1].weight)  # values that are not the untrained 0
    agent.reset_exploration(env, seed=0)
    buffer = agent.make_buffer(max_memo=10_000)
    assert isinstance(buffer, EpisodeBuffer)
    rollouts = [agent.explore_env(env, 40, if_random=True), agent.explore_env(env, 40)]
    for rollout in rollouts:
        assert isinstance(rollout, SearchTransitions) and rollout.policy.shape == (40, 3, 2) and rollout.root_value.shape == (40, 3)
        assert torch.allclose(rollout.policy.sum(dim=2), torch.ones(40, 3))
        truncated = rollout.truncated & ~rollout.terminated
        expected = agent.actor.initial(rollout.next_state[truncated])[2] / 0.5  # in env units, like the rewards
        assert torch.allclose(rollout.final_value[truncated], expected) and not rollout.final_value[~rollout.truncated].any()
        buffer.extend(rollout)
    assert (rollouts[0].policy == 0.5).all() and rollouts[1].terminated.any() and rollouts[1].truncated.any()
    # every step is stored or waits in its env's unfinished episode, and episodes span the two rollouts
    pending = sum(len(part[2]) for parts in buffer.pending.values() for part in parts)
    assert len(buffer) + pending == 240
    assert sum(buffer.episode_lengths) == len(buffer) and max(buffer.episode_lengths) == 15
    start = buffer.position == 0  # one slot per episode: its end value z_T is v_T, 0 after a termination
    ended_by_time = ~buffer.terminated[start] & (buffer.length[start] == 15)
    assert ended_by_time.any() and buffer.end_value[start][ended_by_time].ne(0).all()
    assert buffer.terminated[start].any() and not buffer.end_value[start][buffer.terminated[start]].any()


def test_prioritised_replay_draws_unrolls_by_the_search_values_error():
    torch.manual_seed(0)
    env = build_vector_env(PreprocessEnv(gym.make("CartPole-v1", max_episode_steps=15)), 3)
    for priority_alpha in (0.0, 1.0):
        agent = AgentMuZero(num_simulations=4, priority_alpha=priority_alpha)
        agent.init(16, 4, 2)
        torch.nn.init.normal_(agent.actor.prediction[-1].weight)  # root values that miss their targets by varied amounts
        agent.reset_exploration(env, seed=0)
        buffer = agent.make_buffer(max_memo=10_000)
        buffer.extend(agent.explore_env(env, 60))
        weight = buffer.sample_batch(64).weight
        assert (weight == 1).all() if priority_alpha == 0 else weight.std() > 0.01


def test_act_is_deterministic_and_is_the_prediction_networks_most_likely_action():
    agent = muzero()
    state = states(8).numpy()
    actions = agent.act(state)
    assert np.array_equal(actions, agent.act(state)) and agent.act(state[0]) == actions[0]
    assert np.array_equal(actions, agent.actor.initial(torch.as_tensor(state))[1].argmax(dim=1).numpy())


def test_checkpoint_round_trip_covers_every_network_and_optimizer(tmp_path):
    env = PreprocessEnv("CartPole-v1")
    agent = muzero(num_simulations=4)
    agent.reset_exploration(env, seed=0)
    buffer = agent.make_buffer(1000)
    buffer.extend(agent.explore_env(env, 100))
    agent.update_net(buffer, 100)
    agent.save_or_load_agent(str(tmp_path), if_save=True)
    loaded = muzero(seed=1, num_simulations=4)
    loaded.save_or_load_agent(str(tmp_path), if_save=False)
    for a, b in zip(agent.actor.state_dict().values(), loaded.actor.state_dict().values()):
        assert torch.equal(a, b)
    assert loaded.critic_optimizer.state_dict()["state"].keys() == agent.critic_optimizer.state_dict()["state"].keys()
    assert loaded.total_steps == 100
    torch.manual_seed(5)
    first = agent.search(states())
    torch.manual_seed(5)
    assert all(torch.equal(a, b) for a, b in zip(first, loaded.search(states())))


def tiny_run(cwd: str) -> tuple[AgentMuZero, list[dict]]:
    args = Arguments(agent=AgentMuZero(num_simulations=4), env="CartPole-v1", cwd=cwd, num_envs=2, break_step=400,
                     warmup_steps=64, target_step=32, eval_gap=200, eval_times1=1, eval_times2=0, if_print=False)
    agent = train_and_evaluate(args)
    with open(os.path.join(cwd, "recorder.csv")) as file:
        return agent, [{k: v for k, v in row.items() if k != "seconds"} for row in csv.DictReader(file)]


def test_a_tiny_run_saves_an_actor_that_load_agent_rebuilds_and_one_seed_gives_one_curve(tmp_path):
    agent, record = tiny_run(str(tmp_path / "run"))
    assert {"actor.pth", "agent.pth", "recorder.csv"} <= set(os.listdir(tmp_path / "run"))
    loaded = load_agent(str(tmp_path / "run"))
    state = states().numpy()
    assert isinstance(loaded, AgentMuZero) and np.array_equal(loaded.act(state), agent.act(state))
    assert tiny_run(str(tmp_path / "again"))[1] == record and len(record) == 2  # the losses too: every draw is the seed's


def test_the_family_is_wired_like_the_others():
    agents = list_agents()
    assert agents["MuZero"] is AgentMuZero and "MCTS" not in agents
    agent = AgentMuZero()
    assert AgentMCTS.if_off_policy and not AgentMCTS.supports_workers
    with pytest.raises(ValueError, match=r"AgentMuZero\(num_simulations=0\)"):
        AgentMuZero(num_simulations=0)
    with pytest.raises(ValueError, match="noise_fraction"):
        AgentMuZero(noise_fraction=1.5)
    with pytest.raises(ValueError, match="priority_alpha"):
        AgentMuZero(priority_alpha=-1.0)
    assert agent.num_unroll == 5


def test_train_and_evaluate_mp_refuses_muzero_before_making_anything(tmp_path):
    args = Arguments(agent=AgentMuZero(), env="CartPole-v1", cwd=str(tmp_path / "run"))
    with pytest.raises(ValueError, match=r"AgentMuZero cannot train with train_and_evaluate_mp.*train_and_evaluate\(args\)"):
        train_and_evaluate_mp(args)
    assert not os.path.exists(args.cwd)


def test_learning_waits_for_the_first_episode_to_end():
    # the buffer keeps whole episodes: with none ended yet there is nothing to unroll, and that is no error
    agent = muzero()
    buffer = agent.make_buffer(1024)
    assert agent.update_net(buffer, new_steps=512) == {}


def test_a_run_whose_first_episodes_outlast_the_warm_up_trains(tmp_path):
    # random Acrobot episodes run to their 500-step limit, long after 64 warm-up steps
    args = Arguments(agent=AgentMuZero(), env="Acrobot-v1", cwd=str(tmp_path / "run"), warmup_steps=64, break_step=1200,
                     eval_gap=1200, eval_times1=1, eval_times2=0, if_print=False, random_seed=0)
    agent = train_and_evaluate(args)
    assert agent.total_steps >= 1200


@pytest.mark.parametrize("temperature", [0.01, 1e-4])
def test_a_small_temperature_draws_the_most_visited_actions(temperature):
    agent = muzero(temperature=temperature)
    policy = agent.search(states(64), if_noise=False).root_policy()
    action = agent.select_action(states(64))  # policy ** (1 / T) underflowed to all zeros here, and multinomial failed
    assert action.shape == (64,) and ((action == 0) | (action == 1)).all()
    assert (policy.gather(1, action[:, None]) >= policy.max(dim=1, keepdim=True).values - 1e-6).float().mean() > 0.9


def test_a_buffer_smaller_than_one_episode_is_refused_at_the_start(tmp_path):
    with pytest.raises(ValueError, match=r"max_memo \(300\) is less than one episode may last \(max_step 500\)"):
        Arguments(agent=AgentMuZero(), env="CartPole-v1", max_memo=300, cwd=str(tmp_path / "run")).init_before_training()
    assert not (tmp_path / "run").exists()


def test_an_action_the_search_never_visited_is_never_drawn_at_any_temperature():
    agent = muzero(num_simulations=1, temperature=25.0)  # one simulation visits one action; a high T flattens the rest
    action = agent.select_action(states(512))
    policy = agent.search_log[-1][0]
    assert (policy == 0).any(dim=1).all()  # every state has an action never visited
    assert (policy.gather(1, action[:, None]) > 0).all()
