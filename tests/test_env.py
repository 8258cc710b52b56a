"""PreprocessEnv: Gymnasium envs, env ids, old-Gym envs, and what is not an env."""

import re
import threading
import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch

from elegantrl.env import DEFAULT_MAX_STEP, PreprocessEnv, StockTradingEnv, build_vector_env, check_env, clone_env, close_vector_env


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
    # malformed, as from a config file's stray space: gymnasium's own error names no close match
    with pytest.raises(ValueError, match=r"malformed env id 'CartPole-v1 ': .*Did you mean: CartPole-v1"):
        PreprocessEnv("CartPole-v1 ")
    with pytest.raises(ValueError, match=r"malformed env id '': an id reads \[namespace/\]Name-vN"):
        PreprocessEnv("")


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
    state, info = env.reset(seed=7)
    assert state.dtype == np.float32 and info == {} and env.env.seeded == 7
    for _ in range(2):
        _, _, terminated, truncated, _ = env.step(1)
        assert not terminated and not truncated
    state, reward, terminated, truncated, _ = env.step(1)  # the old env's time limit: done + TimeLimit.truncated
    assert (terminated, truncated) == (False, True)
    assert state.tolist() == [3.0, 3.0]


class OldGymTimeLimit:
    """Old Gym's TimeLimit as gym.make added it: a wrapper whose reset(**kwargs) forwards to a reset() that takes none."""

    def __init__(self, env):
        self.env, self.observation_space, self.action_space = env, env.observation_space, env.action_space

    def seed(self, seed=None):
        return self.env.seed(seed)

    def reset(self, **kwargs):
        return self.env.reset(**kwargs)

    def step(self, action):
        return self.env.step(action)


def test_an_old_gym_env_in_a_wrapper_that_forwards_keywords_is_seeded_by_its_seed_method():
    env = PreprocessEnv(OldGymTimeLimit(OldGymCounter(limit=3)), max_step=10)
    for seed in (7, 8):  # the second reset goes straight to the old API
        state, info = env.reset(seed=seed)
        assert state.tolist() == [0.0, 0.0] and info == {} and env.env.env.seeded == seed
    assert check_env(OldGymTimeLimit(OldGymCounter(limit=3))) is not None


def test_options_for_an_old_gym_env_are_an_error_not_dropped():
    for raw in (OldGymCounter(limit=3), OldGymTimeLimit(OldGymCounter(limit=3))):
        with pytest.raises(TypeError, match="takes no options"):
            PreprocessEnv(raw, max_step=10).reset(seed=0, options={"level": 2})


def test_a_type_error_inside_a_gymnasium_reset_is_the_envs_own_not_a_switch_to_old_gym():
    class Buggy(SpaceEnv):
        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return self.helper(seed=seed), {}

        def helper(self):
            return self.observation_space.sample()

    env = PreprocessEnv(Buggy(gym.spaces.Box(-1.0, 1.0, (2,)), gym.spaces.Discrete(2)), max_step=10)
    with pytest.raises(TypeError, match="helper"):
        env.reset(seed=3)


def test_a_reset_that_takes_a_seed_but_no_options_gets_only_the_seed():
    class SeedOnly(SpaceEnv):
        def reset(self, seed=None):
            return super().reset(seed=seed)

    for raw in (SeedOnly(gym.spaces.Box(-1.0, 1.0, (2,)), gym.spaces.Discrete(2)),
                OldGymTimeLimit(SeedOnly(gym.spaces.Box(-1.0, 1.0, (2,)), gym.spaces.Discrete(2)))):
        env = PreprocessEnv(raw, max_step=10)
        first, second, other = env.reset(seed=3)[0], env.reset(seed=3)[0], env.reset(seed=4)[0]
        assert first.tolist() == second.tolist() != other.tolist()
    with pytest.raises(TypeError, match="options"):  # options it cannot take are not dropped in silence
        env.reset(seed=3, options={"level": 2})


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


def test_an_env_that_ends_its_own_episodes_gets_no_time_limit_warning():
    env = PreprocessEnv(StockTradingEnv())  # no spec and no limit, but it truncates itself before DEFAULT_MAX_STEP
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env.reset(seed=0)
        steps = next(t for t in range(1, DEFAULT_MAX_STEP + 1) if env.step(np.zeros(5))[3])
    assert steps == env.env.max_step < DEFAULT_MAX_STEP


def test_an_env_that_never_ends_warns_once_when_it_reaches_the_default_limit():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = PreprocessEnv(SpaceEnv(gym.spaces.Box(-1.0, 1.0, (2,)), gym.spaces.Discrete(2)))  # never ends an episode
        for episode in range(2):
            env.reset(seed=0)
            flags = [env.step(0)[2:4] for _ in range(DEFAULT_MAX_STEP - 1)]
            assert len(caught) == episode  # not at construction, nor before the limit
            assert not any(any(pair) for pair in flags) and env.step(0)[2:4] == (False, True)  # truncated, never terminated
            assert len(caught) == 1  # at the limit, once per env
    message = str(caught[0].message)
    assert f"max_step={DEFAULT_MAX_STEP}" in message
    assert all(fix in message for fix in ("PreprocessEnv(env, max_step=N)", "Arguments(max_step=N)", "--max-step N"))


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


class SpaceEnv(gym.Env):
    """An env with the given spaces whose observations are samples of its observation space."""

    def __init__(self, observation_space, action_space, reward=1.0):
        self.observation_space, self.action_space, self.reward = observation_space, action_space, reward
        self.actions = []

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.observation_space.seed(seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        self.actions.append(action)
        return self.observation_space.sample(), self.reward, False, False, {}


def test_discrete_observations_with_a_start_are_one_hot_from_the_start():
    env = PreprocessEnv(SpaceEnv(gym.spaces.Discrete(5, start=1), gym.spaces.Discrete(2)), max_step=10)
    env.reset(seed=0)
    for obs in (1, 5):
        assert env._state(obs).tolist() == [1.0 * (i == obs - 1) for i in range(5)]


@pytest.mark.parametrize("obs", [-4, 2, np.array([0]), np.array([4, 4]), 0.5, True])
def test_a_discrete_observation_outside_its_space_is_refused(obs):
    env = PreprocessEnv(SpaceEnv(gym.spaces.Discrete(5, start=-3), gym.spaces.Discrete(2)), max_step=10)
    with pytest.raises(ValueError, match=r"outside its observation_space Discrete\(5, start=-3\)"):
        env._state(obs)  # -4 would otherwise wrap around to the last state's one-hot


def test_multibinary_observations_are_a_vector_and_multibinary_actions_are_refused():
    env = PreprocessEnv(SpaceEnv(gym.spaces.MultiBinary((2, 3)), gym.spaces.Discrete(2)), max_step=10)
    state, _ = env.reset(seed=0)
    assert env.state_dim == 6 and state.shape == (6,) and set(state.tolist()) <= {0.0, 1.0}
    with pytest.raises(TypeError, match="one-dimensional Box"):  # not mistaken for Discrete(3)
        PreprocessEnv(SpaceEnv(gym.spaces.Box(0, 1, (2,)), gym.spaces.MultiBinary(3)), max_step=10)


def test_a_scalar_box_observation_is_a_state_of_one_feature():
    env = PreprocessEnv(SpaceEnv(gym.spaces.Box(-1.0, 1.0, ()), gym.spaces.Discrete(2)), max_step=10)
    state, _ = env.reset(seed=0)
    assert env.state_dim == 1 and state.shape == (1,)


def test_an_integer_box_gets_whole_actions_within_its_bounds():
    raw = SpaceEnv(gym.spaces.Box(-1.0, 1.0, (2,)), gym.spaces.Box(0, 4, (2,), np.int64))
    env = PreprocessEnv(raw, max_step=10)
    env.reset(seed=0)
    for action in ([-1.0, 1.0], [0.3, -0.3], [0.26, 0.24]):
        env.step(np.array(action))
    assert [a.tolist() for a in raw.actions] == [[0, 4], [3, 1], [3, 2]]
    assert all(a.dtype == np.int64 for a in raw.actions)


def test_a_non_finite_action_is_refused_as_divergence():
    env = PreprocessEnv("Pendulum-v1")
    env.reset(seed=0)
    with pytest.raises(FloatingPointError, match="diverged"):
        env.step(np.array([np.nan]))


def test_actions_outside_the_unit_box_are_clipped_to_asymmetric_bounds_exactly():
    raw = SpaceEnv(gym.spaces.Box(-1.0, 1.0, (2,)), gym.spaces.Box(np.array([0.0, -3.0], np.float32), np.array([1.0, 5.0], np.float32)))
    env = PreprocessEnv(raw, max_step=10)
    env.reset(seed=0)
    for action in ([-2.0, 2.0], [0.0, 0.0], [1.0, -1.0], [0.5, -0.25]):
        env.step(np.array(action))
    assert [a.tolist() for a in raw.actions] == [[0.0, 5.0], [0.5, 1.0], [1.0, -3.0], [0.75, 0.0]]


@pytest.mark.parametrize("seed", range(5))
def test_mapped_actions_stay_inside_any_bounds_in_the_space_dtype(seed):
    # in float32 arithmetic, about one bound in twelve was overshot by a rounding step; float64 bounds of 0.1 by more
    rng = np.random.default_rng(seed)
    for dtype in (np.float32, np.float64):
        low, high = np.sort(rng.normal(size=(2, 3)) * 5, axis=0)
        space = gym.spaces.Box(low.astype(dtype), high.astype(dtype), dtype=dtype)
        raw = SpaceEnv(gym.spaces.Box(-1.0, 1.0, (2,)), space)
        env = PreprocessEnv(raw, max_step=10)
        env.reset(seed=seed)
        for action in ([-1.0] * 3, [1.0] * 3, rng.uniform(-1, 1, 3)):
            env.step(np.asarray(action, dtype=np.float32))
        assert all(space.contains(a) and a.dtype == dtype for a in raw.actions), raw.actions
    raw = SpaceEnv(gym.spaces.Box(-1.0, 1.0, (2,)), gym.spaces.Box(-0.1, 0.1, (1,), np.float64))
    env = PreprocessEnv(raw, max_step=10)
    env.reset(seed=seed)
    env.step(np.array([1.0], np.float32))
    assert raw.actions[-1].tolist() == [0.1]


def test_bounds_near_the_largest_float32_map_to_finite_actions():
    largest = np.finfo(np.float32).max
    raw = SpaceEnv(gym.spaces.Box(-1.0, 1.0, (2,)), gym.spaces.Box(-largest, largest, (1,), np.float32))
    env = PreprocessEnv(raw, max_step=10)
    env.reset(seed=0)
    for action in (1.0, -1.0, 0.5):
        env.step(np.array([action], np.float32))
    assert [a.item() for a in raw.actions] == pytest.approx([largest, -largest, 0.5 * largest], rel=1e-6)


@pytest.mark.parametrize("reward", [2, np.float32(2.0), np.float64(2.0), np.int64(2), np.array(2.0), [2.0]])
def test_every_kind_of_real_reward_becomes_a_float(reward):
    env = PreprocessEnv(SpaceEnv(gym.spaces.Box(-1.0, 1.0, (2,)), gym.spaces.Discrete(2), reward=reward), max_step=10)
    env.reset(seed=0)
    reward = env.step(0)[1]
    assert type(reward) is float and reward == 2.0


@pytest.mark.parametrize("reward", [True, np.bool_(True), 1j, np.complex64(1.0), "1.0", None])
def test_a_reward_that_is_not_a_real_number_is_refused(reward):
    env = PreprocessEnv(SpaceEnv(gym.spaces.Box(-1.0, 1.0, (2,)), gym.spaces.Discrete(2), reward=reward), max_step=10)
    env.reset(seed=0)
    with pytest.raises(TypeError, match="one real number"):
        env.step(0)


def test_a_torch_tensor_reward_passes_check_env_and_becomes_a_float():
    raw = SpaceEnv(gym.spaces.Box(-1.0, 1.0, (2,)), gym.spaces.Discrete(2), reward=torch.tensor(2.5))
    assert check_env(raw) == []
    env = PreprocessEnv(raw, max_step=10)
    env.reset(seed=0)
    reward = env.step(0)[1]
    assert type(reward) is float and reward == 2.5


def test_a_reward_or_observation_beyond_float32_is_refused_by_check_env_not_called_non_finite():
    with pytest.raises(ValueError, match="reward 1e\\+300, beyond float32's range"):
        check_env(SpaceEnv(gym.spaces.Box(-1.0, 1.0, (2,)), gym.spaces.Discrete(2), reward=1e300))
    huge = gym.spaces.Box(1e300, 1e300, (2,), np.float64)  # every sample is 1e300
    with pytest.raises(ValueError, match="observation beyond float32's range"):
        check_env(SpaceEnv(huge, gym.spaces.Discrete(2)))


def test_a_vector_env_whose_worker_died_closes_without_raising_and_leaves_no_process():
    vector_env = build_vector_env(PreprocessEnv("CartPole-v1"), 2, if_async=True)
    vector_env.reset(seed=0)
    vector_env.processes[0].kill()
    vector_env.processes[0].join()
    with pytest.raises((EOFError, BrokenPipeError, ConnectionResetError)):
        vector_env.step(np.zeros(2, dtype=np.int64))
    close_vector_env(vector_env)  # gymnasium's own close raises here, and again when the env is collected
    assert vector_env.closed and not any(process.is_alive() for process in vector_env.processes)


def test_a_vector_env_is_refused_with_num_envs_as_the_way():
    vector_env = gym.make_vec("Pendulum-v1", num_envs=2)
    for check in (PreprocessEnv, check_env):
        with pytest.raises(TypeError, match="a vector env of 2 envs.*Arguments\\(num_envs=2\\)"):
            check(vector_env)
    vector_env.close()


def test_an_observation_or_action_of_no_numbers_is_refused():
    empty = gym.spaces.Box(-1.0, 1.0, (0,))
    for check in (PreprocessEnv, check_env):
        with pytest.raises(ValueError, match="holds no numbers"):
            check(SpaceEnv(empty, gym.spaces.Discrete(2)))
    with pytest.raises(TypeError, match="one or more actions"):
        PreprocessEnv(SpaceEnv(gym.spaces.Box(-1.0, 1.0, (2,)), empty))
    with pytest.raises(ValueError, match="one or more actions"):
        check_env(SpaceEnv(gym.spaces.Box(-1.0, 1.0, (2,)), empty))


def test_a_reward_of_one_element_in_an_array_is_a_float():
    env = PreprocessEnv(SpaceEnv(gym.spaces.Box(-1.0, 1.0, (2,)), gym.spaces.Discrete(2), reward=np.array([2.5])), max_step=10)
    env.reset(seed=0)
    reward = env.step(0)[1]
    assert type(reward) is float and reward == 2.5


class ForeignBox:
    """A Box of another Gym package (old ``gym``): the same attributes, not a gymnasium class."""

    def __init__(self, low, high, shape, dtype=np.float32):
        self.low, self.high = np.full(shape, low, dtype), np.full(shape, high, dtype)
        self.shape, self.dtype = shape, np.dtype(dtype)

    def contains(self, x):
        return np.shape(x) == self.shape and bool(np.all(x >= self.low) and np.all(x <= self.high))


class ForeignDiscrete:
    """A Discrete space of another Gym package: ``n`` and an empty shape."""

    def __init__(self, n):
        self.n, self.shape, self.dtype = n, (), np.dtype(np.int64)

    def contains(self, x):
        return 0 <= int(x) < self.n


class ForeignSpacesEnv:
    """An old-Gym env whose spaces are not gymnasium's: reset() -> obs, step() -> 4 values."""

    def __init__(self, discrete):
        self.observation_space = ForeignBox(-5.0, 5.0, (3,), np.float64)
        self.action_space = ForeignDiscrete(2) if discrete else ForeignBox(-2.0, 2.0, (1,))
        self.t = 0

    def reset(self):
        self.t = 0
        return np.zeros(3)

    def step(self, action):
        self.t += 1
        done = self.t >= 5
        return np.full(3, 0.1 * self.t), 1.0, done, {"TimeLimit.truncated": done}


@pytest.mark.parametrize("discrete", [True, False])
def test_spaces_of_another_gym_package_pass_check_env_and_preprocess_env(discrete):
    raw = ForeignSpacesEnv(discrete)
    notes = check_env(raw)
    assert any("old Gym API" in note for note in notes)
    env = PreprocessEnv(raw, max_step=10)
    assert (env.state_dim, env.action_dim, env.if_discrete) == (3, 2 if discrete else 1, discrete)
    env.reset(seed=0)
    _, _, terminated, truncated, _ = [env.step(env.action_space.sample()) for _ in range(5)][-1]
    assert (terminated, truncated) == (False, True)


class NotCopyable(gym.Wrapper):
    """An env holding something deepcopy refuses (a lock), and not registered under its own id."""

    def __init__(self):
        super().__init__(SpaceEnv(gym.spaces.Box(-1.0, 1.0, (2,)), gym.spaces.Discrete(2)))
        self.lock = threading.Lock()


def test_a_vector_env_of_an_env_that_cannot_be_copied_names_num_envs():
    env = PreprocessEnv(NotCopyable(), max_step=10)
    with pytest.raises(TypeError, match=r"num_envs=2 needs that many copies.*use num_envs=1 and pass the evaluation its own env"):
        build_vector_env(env, 2)


def test_an_env_that_cannot_be_copied_trains_as_the_message_says(tmp_path):
    from elegantrl.agent import AgentDQN
    from elegantrl.run import Arguments, train_and_evaluate

    agent = train_and_evaluate(Arguments(agent=AgentDQN(), env=PreprocessEnv(NotCopyable(), max_step=10), num_envs=1,
                                         eval_env=PreprocessEnv(NotCopyable(), max_step=10), cwd=str(tmp_path / "run"), net_dim=16,
                                         batch_size=16, warmup_steps=32, eval_gap=64, eval_times1=1, eval_times2=0, break_step=128,
                                         if_print=False))
    assert agent.total_steps == 128


@pytest.mark.parametrize("not_an_instance", [SpaceEnv, lambda: SpaceEnv(gym.spaces.Discrete(2), gym.spaces.Discrete(2))])
def test_an_env_class_or_factory_instead_of_an_env_says_to_pass_an_instance(not_an_instance):
    with pytest.raises(TypeError, match=r"a class or function, not an env: pass an env instance"):
        PreprocessEnv(not_an_instance)


def test_an_env_of_a_namespace_nobody_registered_says_to_install_its_package():
    with pytest.raises(ValueError, match="no installed package registers the 'NoSuchSuite' envs"):
        PreprocessEnv("NoSuchSuite/Pong-v5")


class ClosableEnv(gym.Wrapper):
    """An env whose close() releases its simulator (as PyBullet or Unity envs do): stepping it afterwards fails."""

    def __init__(self):
        super().__init__(gym.make("CartPole-v1"))
        self.closed = False

    def step(self, action):
        assert not self.closed, "stepped after close()"
        return self.env.step(action)

    def close(self):
        self.closed = True


@pytest.mark.parametrize("if_async", [False, True])
def test_vector_env_sub_envs_are_fresh_copies_even_where_gymnasium_closes_its_probe(if_async):
    env = PreprocessEnv(ClosableEnv(), max_step=500)
    vector_env = build_vector_env(env, 2, if_async=if_async)
    try:
        vector_env.reset(seed=0)
        for _ in range(3):
            vector_env.step(np.array([0, 1]))
    finally:
        vector_env.close()


def test_a_non_finite_action_after_a_non_finite_observation_blames_the_observation():
    class NaNAfterReset(SpaceEnv):
        def step(self, action):
            return np.full(2, np.nan, np.float32), 0.0, False, False, {}

    env = PreprocessEnv(NaNAfterReset(gym.spaces.Box(-1.0, 1.0, (2,)), gym.spaces.Box(-1.0, 1.0, (1,))), max_step=10)
    env.reset(seed=0)
    env.step(np.zeros(1))
    with pytest.raises(FloatingPointError, match="returned a non-finite observation .* at episode step 1"):
        env.step(np.array([np.nan]))  # what a policy gives for a NaN state


def test_an_env_recipe_survives_pickling_and_makes_the_same_env_again():
    import pickle

    from elegantrl.env import env_recipe

    for env in (PreprocessEnv("Pendulum-v1", target_return=-300.0), PreprocessEnv(gym.make("CartPole-v1")),
                PreprocessEnv(gym.make("MountainCar-v0"), max_step=50)):
        copy = pickle.loads(pickle.dumps(env_recipe(env)))()
        assert (copy.env_name, copy.state_dim, copy.action_dim, copy.if_discrete, copy.max_step, copy.target_return) == \
               (env.env_name, env.state_dim, env.action_dim, env.if_discrete, env.max_step, env.target_return)
        assert copy is not env


class NoRewardEnv(PreprocessEnv):
    """A PreprocessEnv subclass that changes what the agent sees: its behaviour must reach other processes."""

    def step(self, action):
        state, _, terminated, truncated, info = super().step(action)
        return state, 0.0, terminated, truncated, info


def test_an_env_recipe_keeps_a_preprocess_env_subclass():
    import pickle

    from elegantrl.env import env_recipe

    copy = pickle.loads(pickle.dumps(env_recipe(NoRewardEnv("CartPole-v1"))))()
    copy.reset(seed=0)
    assert type(copy) is NoRewardEnv and copy.step(0)[1] == 0.0


# Gymnasium's checker warns about these by design; none is a fault of the env under test.
KNOWN_CHECKER_WARNINGS = (
    "error::UserWarning",
    # CartPole's velocities and StockTradingEnv's features are unbounded: a Box of infinite bounds is what they are
    "ignore:.*A Box observation space (minimum|maximum) value is (-)?infinity:UserWarning",
    # the render-mode check needs a spec; an env made without gymnasium.make has none
    "ignore:.*Not able to test alternative render modes:UserWarning",
)


@pytest.mark.filterwarnings(*KNOWN_CHECKER_WARNINGS)
@pytest.mark.parametrize("make", [
    lambda: PreprocessEnv(gym.make("CartPole-v1")),
    lambda: PreprocessEnv(gym.make("Pendulum-v1")),
    lambda: PreprocessEnv(gym.make("LunarLander-v3")),
    lambda: PreprocessEnv(OldGymCounter(limit=5), max_step=10),
    lambda: StockTradingEnv(),
    lambda: PreprocessEnv(StockTradingEnv()),
], ids=["CartPole", "Pendulum", "LunarLander", "old-Gym", "StockTrading", "PreprocessEnv(StockTrading)"])
def test_gymnasium_and_stable_baselines3_env_checkers_pass(make):
    from gymnasium.utils.env_checker import check_env as gymnasium_check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    gymnasium_check_env(make())
    sb3_check_env(make())


def test_reset_seeds_the_wrappers_own_random_generator_as_the_gym_api_says():
    env = PreprocessEnv(OldGymCounter(), max_step=10)  # an old-Gym env: its reset() takes no seed
    env.reset(seed=5)
    first = env.np_random.random()
    env.reset(seed=5)
    assert env.np_random_seed == 5 and env.np_random.random() == first
    assert clone_env(env).np_random.random() == env.np_random.random()  # a copy carries the generator's state


class OldGymPair(OldGymCounter):
    """An old-Gym env whose observation is a tuple of two numbers: not Gymnasium's (obs, info)."""

    def reset(self):
        super().reset()
        return (0.0, 0.0)

    def step(self, action):
        obs, reward, done, info = super().step(action)
        return tuple(float(x) for x in obs), reward, done, info


def test_an_old_gym_observation_that_is_a_pair_of_numbers_is_a_state_not_obs_and_info():
    assert check_env(OldGymPair())  # notes on the old API, no problem
    env = PreprocessEnv(OldGymPair(), max_step=10)
    state, info = env.reset()
    assert state.tolist() == [0.0, 0.0] and info == {}
    assert env.step(1)[0].tolist() == [1.0, 1.0]


class Faulty(gym.Env):
    """A Gymnasium env that returns one thing wrong from step()."""

    def __init__(self, obs=None, reward=0.0, flag=False):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.obs = np.zeros(2, np.float32) if obs is None else obs
        self.reward, self.flag = reward, flag

    def reset(self, *, seed=None, options=None):
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return self.obs, self.reward, self.flag, False, {}


@pytest.mark.parametrize("fault, words", [
    (dict(obs=np.zeros(3, np.float32)), "shape (3,)"),
    (dict(obs=np.zeros((2, 1), np.float32)), "shape (2, 1)"),
    (dict(reward=1 + 0j), "the reward must be one real number"),
    (dict(reward="1"), "the reward must be one real number"),
    (dict(reward=True), "the reward must be one real number"),
])
def test_check_env_and_preprocess_env_refuse_the_same_step_results(fault, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        check_env(Faulty(**fault))
    env = PreprocessEnv(Faulty(**fault), max_step=10)
    env.reset()
    with pytest.raises((TypeError, ValueError), match=re.escape(words)):
        env.step(0)


def test_check_env_and_preprocess_env_both_take_flags_of_zero_and_one():
    assert any("0 or 1" in note for note in check_env(Faulty(flag=1)))
    env = PreprocessEnv(Faulty(flag=1), max_step=10)
    env.reset()
    assert env.step(0)[2] is True


def test_a_max_step_given_with_an_env_id_replaces_the_registered_limit():
    assert PreprocessEnv("CartPole-v1", max_step=700).max_step == 700
    assert PreprocessEnv("CartPole-v1", max_step=50).env.spec.max_episode_steps == 50


def test_a_copy_for_another_process_truncates_where_the_env_does():
    from elegantrl.env import env_recipe

    env = PreprocessEnv("CartPole-v1")
    with warnings.catch_warnings(record=True):
        env.set_max_step(1000)  # CartPole truncates itself at 500, so the run's episodes last 500 (it warns)
    copy = env_recipe(env)()  # what train_and_evaluate_mp's workers and Evaluator explore and evaluate
    # made from its id with max_episode_steps=1000 before, the copy's episodes lasted 1000
    assert env.max_step == copy.max_step == copy._env_limit() == 500


def test_a_time_limit_under_another_wrapper_is_the_envs_limit():
    class Forever(gym.Env):
        observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return np.zeros(1, np.float32), {}

        def step(self, action):
            return np.zeros(1, np.float32), 1.0, False, False, {}

    wrapped = gym.wrappers.RecordEpisodeStatistics(gym.wrappers.TimeLimit(Forever(), 6))
    assert PreprocessEnv(wrapped).max_step == 6  # read 1000 before, into config.json, while episodes ended at 6
    with pytest.warns(UserWarning, match="truncates its episodes itself at 6 steps, before max_step=50"):
        PreprocessEnv(gym.wrappers.RecordEpisodeStatistics(gym.wrappers.TimeLimit(Forever(), 6)), max_step=50)


def test_an_env_that_holds_another_env_is_not_its_wrapper():
    class Replaying(gym.Env):  # a user's env that plays an inner env: its limit is not this env's
        observation_space = gym.spaces.Box(-8.0, 8.0, (3,), np.float32)
        action_space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)

        def __init__(self):
            self.env = gym.make("Pendulum-v1")

        def reset(self, *, seed=None, options=None):
            return self.env.reset(seed=seed)

        def step(self, action):
            obs, reward, _, _, info = self.env.step(action)
            return obs, reward, False, False, info

    env = PreprocessEnv(Replaying())
    assert env.max_step == DEFAULT_MAX_STEP and env._own_limit == DEFAULT_MAX_STEP  # it truncates at the default itself
    # of two limits the shorter ends the episodes
    assert PreprocessEnv(gym.wrappers.TimeLimit(gym.make("Pendulum-v1"), 1000)).max_step == 200


def test_an_env_that_cannot_travel_is_remade_from_its_whole_spec():
    import threading

    from elegantrl.env import env_recipe

    class Locked(gym.Wrapper):  # a lock cannot be pickled, so a copy comes from the registered spec
        def __init__(self, env):
            super().__init__(env)
            self.lock = threading.Lock()

    copy = env_recipe(PreprocessEnv(Locked(gym.make("Pendulum-v1", g=2.0)), max_step=150))()
    assert copy.env.unwrapped.g == 2.0 and copy.max_step == 150  # from its id alone it was g=10


def test_a_limit_the_spec_names_but_no_time_limit_enforces_is_enforced_here():
    raw = gym.make("CartPole-v1").unwrapped
    raw.spec = gym.spec("CartPole-v1")  # its spec says 500 steps, but no TimeLimit is left around it
    env = PreprocessEnv(raw)
    assert env.max_step == 500 and env._own_limit == 500  # before: 500 read from the spec, and nothing truncated
    env.reset(seed=0)
    raw.state = np.zeros(4)
    steps, truncated, terminated = 0, False, False
    while not (truncated or terminated):
        raw.state = np.zeros(4)  # held upright: only a time limit ends this episode
        _, _, terminated, truncated, _ = env.step(steps % 2)
        steps += 1
    assert truncated and not terminated and steps == 500
