"""PreprocessEnv: Gymnasium envs, env ids, old-Gym envs, and what is not an env."""

import gymnasium as gym
import numpy as np
import pytest

from elegantrl.env import PreprocessEnv, clone_env


class OldGymCounter:
    """An old-Gym env written the old way: reset() -> obs, step() -> (obs, reward, done, info)."""

    def __init__(self, limit: int = 5, goal: int = 100):
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float64)
        self.action_space = gym.spaces.Discrete(2)
        self.limit, self.goal, self.t, self.position = limit, goal, 0, 0

    def seed(self, seed=None):
        self.seeded = seed

    def reset(self):
        self.t, self.position = 0, 0
        return np.array([0.0, 0.0])

    def step(self, action):
        self.t += 1
        self.position += 1 if action == 1 else -1
        obs = np.array([self.position, self.t], dtype=np.float64)
        reached = self.position >= self.goal
        timeout = self.t >= self.limit
        info = {"TimeLimit.truncated": True} if timeout and not reached else {}
        return obs, 1.0, bool(reached or timeout), info


def test_gymnasium_env_attributes():
    env = PreprocessEnv(gym.make("CartPole-v1"))
    assert (env.env_name, env.state_dim, env.action_dim, env.if_discrete) == ("CartPole-v1", 4, 2, True)
    assert (env.max_step, env.target_return) == (500, 475.0)
    state, info = env.reset(seed=0)
    assert state.dtype == np.float32 and state.shape == (4,) and isinstance(info, dict)
    state, reward, terminated, truncated, info = env.step(np.int64(1))
    assert state.dtype == np.float32 and reward == 1.0 and not terminated and not truncated


def test_env_id_and_known_target_and_explicit_target():
    env = PreprocessEnv("Pendulum-v1")
    assert (env.state_dim, env.action_dim, env.if_discrete, env.max_step) == (3, 1, False, 200)
    assert env.target_return == -200.0  # not in the spec: from the table of known targets
    assert PreprocessEnv("Pendulum-v1", target_return=-150).target_return == -150.0


def test_continuous_actions_map_from_unit_box_to_env_bounds():
    env = PreprocessEnv("Pendulum-v1")  # torque bounds are [-2, 2]
    assert env.action_space.low[0] == -1.0 and env.action_space.high[0] == 1.0
    env.reset(seed=0)
    env.step(np.array([1.0]))
    assert env.env.unwrapped.last_u == pytest.approx(2.0)
    env.step(np.array([-0.5]))
    assert env.env.unwrapped.last_u == pytest.approx(-1.0)


def test_env_id_typo_suggests_close_matches():
    with pytest.raises(ValueError, match="CartPole-v1"):
        PreprocessEnv("CartPol-v1")
    with pytest.raises(ValueError, match="LunarLander-v3"):
        PreprocessEnv("LunarLander-v2")


def test_not_an_env_is_a_type_error():
    with pytest.raises(TypeError, match="Gym-API env"):
        PreprocessEnv(object())
    with pytest.raises(TypeError, match="Gym-API env"):
        PreprocessEnv([1, 2, 3])


def test_unsupported_observation_space_names_the_fix():
    class DictObs(gym.Env):
        observation_space = gym.spaces.Dict({"a": gym.spaces.Box(0, 1, (2,))})
        action_space = gym.spaces.Discrete(2)

    with pytest.raises(TypeError, match="FlattenObservation"):
        PreprocessEnv(DictObs(), max_step=10)


def test_old_gym_env_is_presented_with_the_gymnasium_api():
    env = PreprocessEnv(OldGymCounter(limit=3), max_step=10)
    with pytest.warns(UserWarning, match="no time limit"):
        PreprocessEnv(OldGymCounter())
    state, info = env.reset(seed=7)
    assert state.dtype == np.float32 and info == {} and env.env.seeded == 7
    for _ in range(2):
        _, _, terminated, truncated, _ = env.step(1)
        assert not terminated and not truncated
    state, reward, terminated, truncated, _ = env.step(1)  # the old env's time limit: done + TimeLimit.truncated
    assert (terminated, truncated) == (False, True)
    assert state.tolist() == [3.0, 3.0]


def test_old_gym_true_termination_is_terminated():
    env = PreprocessEnv(OldGymCounter(limit=10, goal=2), max_step=10)
    env.reset()
    env.step(1)
    _, _, terminated, truncated, _ = env.step(1)
    assert (terminated, truncated) == (True, False)


def test_env_without_time_limit_is_truncated_at_max_step():
    env = PreprocessEnv(gym.make("CartPole-v1", max_episode_steps=None).unwrapped, max_step=4)
    env.reset(seed=0)
    flags = [env.step(i % 2)[3] for i in range(4)]
    assert flags == [False, False, False, True]


def test_discrete_observations_become_one_hot():
    env = PreprocessEnv("FrozenLake-v1")
    state, _ = env.reset(seed=0)
    assert env.state_dim == 16 and state.sum() == 1.0 and state[0] == 1.0


def test_clone_env_is_independent():
    env = PreprocessEnv("CartPole-v1", target_return=300)
    other = clone_env(env)
    assert other is not env and other.env is not env.env and other.target_return == 300.0
    a, _ = env.reset(seed=1)
    b, _ = other.reset(seed=1)
    assert np.array_equal(a, b)
