"""check_env: a user's env is checked before training, and each problem is named in plain words."""

import gymnasium as gym
import numpy as np
import pytest

from elegantrl.env import PreprocessEnv, check_env


class GoodEnv(gym.Env):
    """A minimal correct env; the broken ones below each change one thing."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(3, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.full(3, 0.1, np.float32), -float(np.square(action).sum()), False, self.t >= 5, {}


class WrongShape(GoodEnv):
    def step(self, action):
        obs, *rest = super().step(action)
        return (obs[:2], *rest)


class NaNObservation(GoodEnv):
    def reset(self, *, seed=None, options=None):
        return np.array([0.0, np.nan, 0.0], np.float32), {}


class ArrayReward(GoodEnv):
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, np.array([reward, reward]), terminated, truncated, info


class ThreeValueStep(GoodEnv):
    def step(self, action):
        return super().step(action)[:3]


class RejectsBoundaryActions(GoodEnv):
    def step(self, action):
        if np.abs(action).max() > 1.5:
            raise AssertionError("torque too large")
        return super().step(action)


class NoActionSpace:
    observation_space = gym.spaces.Box(-1.0, 1.0, (3,))

    def reset(self):
        return np.zeros(3)

    def step(self, action):
        return np.zeros(3), 0.0, False, {}


class TupleObservationSpace(GoodEnv):
    observation_space = gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Discrete(3)))


class HalfBoundedActions(GoodEnv):
    action_space = gym.spaces.Box(np.array([0.0, -np.inf], np.float32), np.array([1.0, 1.0], np.float32))


class InfoNotDict(GoodEnv):
    def step(self, action):
        obs, reward, terminated, truncated, _ = super().step(action)
        return obs, reward, terminated, truncated, None


class InfoNoneFromReset(GoodEnv):
    def reset(self, *, seed=None, options=None):
        return super().reset(seed=seed)[0], None


class OneElementReward(GoodEnv):
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, np.array([reward]), terminated, truncated, info


class DiscreteObservationInAnArray(GoodEnv):
    """A Discrete observation returned as np.array([s]), a common slip."""

    observation_space = gym.spaces.Discrete(5)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.array([0]), {}

    def step(self, action):
        return np.array([1]), 0.0, False, False, {}


class ObservationsOutOfBounds(GoodEnv):
    def step(self, action):
        obs, *rest = super().step(action)
        return (obs * 20.0 * self.t, *rest)  # beyond [-1, 1], and a different observation at every step


class OldGymEnv:
    observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self):
        return np.zeros(3, np.float32)

    def step(self, action):
        return np.zeros(3, np.float32), 1.0, False, {}


def test_a_correct_env_and_the_registered_envs_pass():
    assert check_env(GoodEnv()) == []
    for env_id in ("CartPole-v1", "Pendulum-v1", "FrozenLake-v1"):
        assert check_env(gym.make(env_id)) == []


@pytest.mark.parametrize(
    "env, message",
    [
        (WrongShape(), r"observation of shape \(2,\), but observation_space has shape \(3,\)"),
        (NaNObservation(), r"reset\(\) returned a non-finite observation"),
        (ArrayReward(), r"reward must be one real number"),
        (ThreeValueStep(), r"returned tuple of length 3; return \(observation, reward, terminated, truncated, info\)"),
        (RejectsBoundaryActions(), r"raised AssertionError: torque too large .* must accept every action"),
        (TupleObservationSpace(), r"observation_space is Tuple.*use a Box, Discrete or MultiBinary space.*FlattenObservation"),
        (InfoNotDict(), r"info must be a dict"),
        (DiscreteObservationInAnArray(), r"reset\(\) returned observation array\(\[0\]\) of shape \(1,\), but a Discrete\(5\) "
                                         r"observation is one integer: return int\(s\)"),
        (HalfBoundedActions(), r"action_space Box\(\[  0. -inf\], 1.0, \(2,\), float32\) is unbounded; .*finite low and high"),
    ],
)
def test_broken_envs_get_the_problem_named(env, message):
    with pytest.raises(ValueError, match=message):
        check_env(env)


@pytest.mark.parametrize("env, where", [(InfoNoneFromReset(), r"reset\(\)"), (InfoNotDict(), r"step\(\) #1")])
def test_info_none_is_blamed_on_info_by_check_env_and_preprocess_env_alike(env, where):
    message = where + r" returned info of type NoneType; info must be a dict"
    with pytest.raises(ValueError, match=message) as error:
        check_env(env)
    assert "observation" not in str(error.value)  # (obs, None) is not mistaken for old Gym's bare observation
    wrapped = PreprocessEnv(env, max_step=5)
    with pytest.raises(TypeError, match=message.replace(" #1", "")):
        wrapped.reset(seed=0)
        wrapped.step(wrapped.action_space.sample())


def test_a_reward_of_one_element_is_accepted_by_both_with_a_note():
    assert any("array of one element" in note for note in check_env(OneElementReward()))
    env = PreprocessEnv(OneElementReward(), max_step=5)
    env.reset(seed=0)
    assert type(env.step(np.zeros(2))[1]) is float


def test_observations_out_of_bounds_get_one_note_for_reset_and_one_for_step_not_one_a_step():
    notes = check_env(ObservationsOutOfBounds())
    assert len(notes) == 1 and notes[0].startswith("step() returned observations outside observation_space's bounds, e.g. [2. 2. 2.] "
                                                   "at step() #1"), notes


def test_something_that_is_not_an_env():
    with pytest.raises(TypeError, match="no action_space"):
        check_env(NoActionSpace())


def test_old_gym_api_is_accepted_with_a_hint():
    notes = check_env(OldGymEnv())
    assert any("old Gym API" in note and "(observation, info)" in note for note in notes)
    assert any("TimeLimit.truncated" in note for note in notes)


def test_arguments_check_the_env_before_training(tmp_path):
    from elegantrl.agent import AgentSAC
    from elegantrl.env import PreprocessEnv
    from elegantrl.run import Arguments

    with pytest.raises(ValueError, match="info must be a dict"):
        Arguments(agent=AgentSAC(), env=PreprocessEnv(InfoNotDict(), max_step=5), cwd=str(tmp_path)).init_before_training()
    assert not any(tmp_path.iterdir())  # nothing was created for a run that cannot start


class PixelEnv(gym.Env):
    observation_space = gym.spaces.Box(0, 255, (8, 8, 3), np.uint8)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


def test_pixel_observations_get_a_note_to_scale_them_and_scaled_ones_none():
    notes = check_env(PixelEnv())
    assert len(notes) == 1 and "uint8" in notes[0] and "obs.astype(np.float32) / 255" in notes[0]
    scaled = gym.wrappers.TransformObservation(PixelEnv(), lambda obs: obs.astype(np.float32) / 255, gym.spaces.Box(0.0, 1.0, (8, 8, 3)))
    assert check_env(scaled) == []
