"""Environments: `PreprocessEnv` presents any Gym-API env the way the agents expect it.

The agents see one API, Gymnasium's: ``reset() -> (state, info)`` and
``step(action) -> (state, reward, terminated, truncated, info)``, with float32 states of shape
``(state_dim,)``. A continuous action space is presented as the box [-1, 1]; the wrapper maps
actions to the env's own bounds.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import functools
import inspect
import pickle
import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import parse_env_id

# Targets for envs whose spec has no reward_threshold. Explicit targets win over both.
KNOWN_TARGETS = {
    "Pendulum-v1": -200.0,
    "Acrobot-v1": -100.0,
    "LunarLander-v3": 200.0,
    "LunarLanderContinuous-v3": 200.0,
    "BipedalWalker-v3": 300.0,
    "BipedalWalkerHardcore-v3": 300.0,
}

DEFAULT_MAX_STEP = 1000
FLOAT32_MAX = float(np.finfo(np.float32).max)  # states and rewards are stored as float32: beyond this they become inf


def make_env(env_id: str, **kwargs: Any) -> gym.Env:
    """`gymnasium.make(env_id)` with errors that say how to fix a typo or a missing extra."""
    try:  # the id's form first ("module:" aside): gymnasium's own error for "CartPole-v1 " suggests nothing
        parse_env_id(env_id.rsplit(":", 1)[-1])
    except gym.error.Error as error:
        raise ValueError(f"malformed env id {env_id!r}: an id reads [namespace/]Name-vN, e.g. 'CartPole-v1', with no "
                         f"spaces.{close_ids_hint(env_id.strip())}") from error
    try:
        return gym.make(env_id, **kwargs)
    except gym.error.DependencyNotInstalled as error:
        raise ImportError(
            f"env {env_id!r} needs an optional dependency: {error}. "
            f"For Box2D envs (LunarLander, BipedalWalker) run: pip install 'gymnasium[box2d]'"
        ) from error
    except (gym.error.UnregisteredEnv, gym.error.DeprecatedEnv, gym.error.VersionNotFound) as error:
        namespace = env_id.split("/")[0] if "/" in env_id else None
        if namespace and not any(key.startswith(namespace + "/") for key in gym.registry):
            raise ValueError(f"unknown env id {env_id!r}: no installed package registers the {namespace!r} envs. "
                             f"Install it and import it first, or name its module in the id, which imports it: "
                             f"for Atari, pip install ale-py, then 'ale_py:{env_id}'") from error
        raise ValueError(f"unknown or outdated env id {env_id!r} ({error}).{close_ids_hint(env_id)}") from error


def close_ids_hint(env_id: str) -> str:
    """" Did you mean: ...?" with the registered ids close to `env_id`, or "" where none is."""
    close = difflib.get_close_matches(env_id, list(gym.registry.keys()), n=5, cutoff=0.5)
    return f" Did you mean: {', '.join(close)}?" if close else ""


class PreprocessEnv(gym.Env):
    """Wraps a Gymnasium env, an env id, or an old-Gym env for training.

    Args:
        env: a Gymnasium env, an env id such as ``"CartPole-v1"``, or an old-Gym env whose
            ``reset()`` returns the state alone and whose ``step()`` returns
            ``(state, reward, done, info)`` with ``info["TimeLimit.truncated"]`` on time limits.
        target_return: the evaluation return that counts as solved; by default the spec's
            ``reward_threshold``, else a known target for common envs, else never solved (inf).
        max_step: the episode length limit; by default the env's own. An env without a limit
            gets ``DEFAULT_MAX_STEP`` so that no episode runs forever (with a warning when an
            episode reaches it without the env ending it).
        **make_kwargs: passed to ``gymnasium.make`` when ``env`` is an id (e.g. ``render_mode``).

    Attributes the agents read: ``env_name, state_dim, action_dim, if_discrete, max_step,
    target_return``.
    """

    def __init__(
        self,
        env: gym.Env | str | Any,
        target_return: float | None = None,
        max_step: int | None = None,
        **make_kwargs: Any,
    ):
        # how to make the raw env again in another process (see env_recipe): an id, a function, or None
        self.source: str | Callable[[], Any] | None = env if isinstance(env, str) else None
        self._make_kwargs = make_kwargs
        if isinstance(env, str):  # made with the limit, which may lengthen the registered one
            env = make_env(env, **({"max_episode_steps": max_step} if max_step else {}) | make_kwargs)
        if isinstance(env, type) or (callable(env) and not hasattr(env, "step")):
            raise TypeError(f"PreprocessEnv got {getattr(env, '__name__', env)!r}, a class or function, not an env: "
                            f"pass an env instance, e.g. PreprocessEnv(MyEnv()) or PreprocessEnv(make_my_env())")
        missing = [name for name in ("reset", "step", "observation_space", "action_space") if not hasattr(env, name)]
        if missing or not callable(env.reset) or not callable(env.step):
            raise TypeError(f"PreprocessEnv expects a Gym-API env (with reset(), step(action), observation_space and action_space) "
                            f"or an env id string, but got {type(env).__name__} missing {missing}. "
                            f"See https://gymnasium.farama.org/introduction/create_custom_env/")
        if _is_vector_env(env):
            raise TypeError(_vector_env_message(env))
        self.env = env
        spec = self.spec = getattr(env, "spec", None)
        self.env_name: str = getattr(spec, "id", None) or type(getattr(env, "unwrapped", env)).__name__
        self._reset_keywords = _reset_keywords(env.reset)

        self._obs_start = 0  # a Discrete(n, start) state s is one-hot at index s - start
        self.observation_space, self.state_dim, self._obs_n = self._convert_observation_space(env.observation_space)
        self.action_space, self.action_dim, self.if_discrete = self._convert_action_space(env.action_space)

        own_limit = self._env_limit()
        # a limit its spec names but no TimeLimit enforces (gym.make(id).unwrapped): this wrapper enforces it
        spec_limit = None if own_limit else getattr(spec, "max_episode_steps", None)
        self._own_limit = None if own_limit else spec_limit or DEFAULT_MAX_STEP
        # many envs without a limit end their own episodes (StockTradingEnv): warn only if one reaches the default
        self._warn_at_limit = not (own_limit or spec_limit)
        self.max_step: int = int(own_limit or spec_limit or DEFAULT_MAX_STEP)
        if max_step is not None:
            self.set_max_step(max_step)
        self._episode_step = 0
        self._last_state: np.ndarray | None = None

        if target_return is None:
            threshold = getattr(spec, "reward_threshold", None)
            target_return = threshold if threshold is not None else KNOWN_TARGETS.get(self.env_name, np.inf)
        self.target_return: float = float(target_return)
        self.render_mode = getattr(env, "render_mode", None)

    def _convert_observation_space(self, space: Any) -> tuple[gym.spaces.Box, int, int | None]:
        if _is_discrete(space):  # Discrete states become one-hot
            n, self._obs_start = int(space.n), int(getattr(space, "start", 0))
            return gym.spaces.Box(0.0, 1.0, (n,), np.float32), n, n
        if _is_box(space) or _is_multi_binary(space):
            dim, self._obs_shape = int(np.prod(space.shape)), tuple(space.shape)
            if dim == 0:
                raise ValueError(f"env {self.env_name!r}: {_empty_observation_problem(space)}")
            low = np.broadcast_to(np.asarray(getattr(space, "low", 0.0), dtype=np.float32), space.shape).reshape(-1)
            high = np.broadcast_to(np.asarray(getattr(space, "high", 1.0), dtype=np.float32), space.shape).reshape(-1)
            return gym.spaces.Box(low, high, (dim,), np.float32), dim, None
        raise TypeError(
            f"env {self.env_name!r} has observation space {space}; elegantrl needs a Box, Discrete or "
            f"MultiBinary observation space. Flatten a Dict, Tuple or MultiDiscrete space with "
            f"gymnasium.wrappers.FlattenObservation first."
        )

    def _convert_action_space(self, space: Any) -> tuple[gym.spaces.Space, int, bool]:
        if _is_discrete(space):
            self._action_start = int(getattr(space, "start", 0))
            return gym.spaces.Discrete(int(space.n)), int(space.n), True
        shape = getattr(space, "shape", None)
        if _is_box(space) and len(shape) == 1 and shape[0] > 0:
            # float64 arithmetic, clipped to the space's own bounds: in float32 a mapped action can land one
            # rounding step outside them (and a bound near float32's largest overflows to inf)
            self._action_low = np.asarray(space.low, dtype=np.float64)
            self._action_high = np.asarray(space.high, dtype=np.float64)
            self._action_shape, self._action_half_range = tuple(shape), 0.5 * (self._action_high - self._action_low)
            dtype = np.dtype(np.float32 if getattr(space, "dtype", None) is None else space.dtype)
            self._action_dtype = dtype if np.issubdtype(dtype, np.number) else np.dtype(np.float32)
            self._if_bounded = bool(np.isfinite(self._action_low).all() and np.isfinite(self._action_high).all())
            if self._if_bounded:  # agents act in [-1, 1]; step() maps to the env's bounds
                return gym.spaces.Box(-1.0, 1.0, shape, np.float32), int(shape[0]), False
            return gym.spaces.Box(self._action_low.astype(np.float32), self._action_high.astype(np.float32), shape, np.float32), \
                int(shape[0]), False
        raise TypeError(
            f"env {self.env_name!r} has action space {space}; elegantrl needs a Discrete action space "
            f"or a one-dimensional Box of one or more actions. Wrap the env to present one of these (for a MultiDiscrete or "
            f"MultiBinary space, e.g. a Discrete space that enumerates the combinations)."
        )

    @property
    def if_bounded_actions(self) -> bool:
        """True when the action space is discrete or a Box with finite bounds."""
        return self.if_discrete or self._if_bounded

    def _state(self, obs: Any) -> np.ndarray:
        if self._obs_n is not None:
            whole = np.ndim(obs) == 0 and not isinstance(obs, (bool, np.bool_)) and float(obs) == int(obs)
            index = int(obs) - self._obs_start if whole else -1
            if not 0 <= index < self._obs_n:  # a negative index would wrap around to another state
                raise ValueError(f"env {self.env_name!r} returned the observation {obs!r}, outside its observation_space "
                                 f"Discrete({self._obs_n}, start={self._obs_start}): it must be a whole number in "
                                 f"[{self._obs_start}, {self._obs_start + self._obs_n - 1}]")
            state = np.zeros(self._obs_n, dtype=np.float32)
            state[index] = 1.0
            return state
        state = np.asarray(obs, dtype=np.float32)
        if state.shape != self._obs_shape:  # check_env refuses it too: a reshape would hide a wrong observation
            raise ValueError(f"env {self.env_name!r} returned an observation of shape {state.shape}, but its "
                             f"observation_space has shape {self._obs_shape}")
        return state.reshape(-1)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        """Resets the env; returns ``(state, info)`` like Gymnasium, also for old-Gym envs."""
        super().reset(seed=seed)  # seeds this env's np_random (np_random_seed), as the Gym API says reset(seed) does
        if seed is not None:
            self.action_space.seed(seed)
        self._episode_step = 0
        result, self._reset_keywords = _reset_env(self.env, self._reset_keywords, seed, options)
        obs, info = _reset_pair(result) or (result, {})
        self._check_info(info, "reset()")
        self._last_state = self._state(obs)  # kept only to tell a NaN state from a diverged actor
        return self._last_state, info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Steps the env; returns ``(state, reward, terminated, truncated, info)``."""
        if self.if_discrete:
            action = int(action) + self._action_start
        else:
            action = np.asarray(action, dtype=np.float32).reshape(self._action_shape)
            if not np.isfinite(action).all():
                self._raise_non_finite_action(action)
            if self._if_bounded:  # minimum/maximum, not np.clip: its Python wrapper costs about as much as a Pendulum step
                action = np.minimum(np.maximum(self._action_low + (action + 1.0) * self._action_half_range, self._action_low),
                                    self._action_high)
            if self._action_dtype.kind in "iu":  # an integer Box gets whole numbers: the nearest to the continuous action
                action = np.rint(action)
            action = action.astype(self._action_dtype, copy=False)
        result = self.env.step(action)
        if len(result) not in (4, 5):
            raise TypeError(f"env {self.env_name!r}: step() returned {len(result)} values; expected "
                            f"(obs, reward, terminated, truncated, info) or old Gym's (obs, reward, done, info)")
        obs, reward, *flags, info = result
        self._check_info(info, "step()")
        if len(flags) == 2:
            terminated, truncated = flags
        else:  # old Gym folds the time limit into done
            truncated = bool(info.get("TimeLimit.truncated", False))
            terminated = bool(flags[0]) and not truncated
        self._episode_step += 1
        if self._own_limit is not None and self._episode_step >= self._own_limit and not terminated:
            if self._warn_at_limit and not truncated:
                self._warn_at_limit = False  # once per env
                warnings.warn(f"env {self.env_name!r} ran {self._own_limit} steps without ending its episode and has no time limit, "
                              f"so its episodes are truncated at max_step={self._own_limit}. To set the limit: PreprocessEnv(env, "
                              f"max_step=N), Arguments(max_step=N) or --max-step N on the command line.", stacklevel=2)
            truncated = True
        if type(reward) is not float:
            if not isinstance(reward, (np.floating, np.integer)):  # an int, a bool, or an array of one element
                if problem := _reward_problem(reward, "step()"):
                    raise TypeError(f"env {self.env_name!r}: {problem}")
                reward = np.asarray(reward).item()
            reward = float(reward)
        self._last_state = self._state(obs)
        return self._last_state, reward, bool(terminated), bool(truncated), info

    def _check_info(self, info: Any, where: str) -> None:
        if problem := _info_problem(info, where):  # check_env names the same problem before training
            raise TypeError(f"env {self.env_name!r}: {problem}")

    def _raise_non_finite_action(self, action: np.ndarray) -> None:
        if self._last_state is not None and not np.isfinite(self._last_state).all():  # the policy only passed it on
            raise FloatingPointError(f"env {self.env_name!r} returned a non-finite observation {self._last_state} at episode "
                                     f"step {self._episode_step}; check the env's step() and reset(), or clip its outputs")
        raise FloatingPointError(f"env {self.env_name!r} was given a non-finite action {action}: the actor's weights have "
                                 f"diverged (NaN or inf). Try a lower learning_rate or reward_scale.")

    def _env_limit(self) -> int | None:
        # every TimeLimit in the wrapper chain, under other wrappers too (they do not pass its limit on): the shortest
        # ends the episodes; an env's own attribute named env is another env, not a layer, and is not entered
        limits, layer = [], self.env
        while layer is not None:
            if limit := getattr(layer, "_max_episode_steps", None):
                limits.append(limit)
            layer = layer.env if hasattr(layer, "env") and getattr(layer, "unwrapped", layer) is not layer else None
        return min(limits, default=None)

    def set_max_step(self, max_step: int) -> None:
        """Truncates episodes at `max_step` env steps (a time limit: truncated, not terminated)."""
        own_limit = self._env_limit()
        if own_limit and own_limit < max_step:
            warnings.warn(f"env {self.env_name!r} truncates its episodes itself at {own_limit} steps, before max_step={max_step}; "
                          f"to lengthen them, make it with gymnasium.make(id, max_episode_steps={max_step})", stacklevel=2)
        self._own_limit, self.max_step, self._warn_at_limit = int(max_step), int(min(max_step, own_limit or max_step)), False

    def render(self) -> Any:
        """Renders the wrapped env."""
        return self.env.render()

    def close(self) -> None:
        """Closes the wrapped env (an old-Gym env may have no close())."""
        getattr(self.env, "close", lambda: None)()

    def __repr__(self) -> str:
        return (f"PreprocessEnv({self.env_name}, state_dim={self.state_dim}, action_dim={self.action_dim} "
                f"{'discrete' if self.if_discrete else 'continuous'}, max_step={self.max_step}, target_return={self.target_return})")


def clone_env(env: PreprocessEnv, fix: str = "Pass one: Arguments(eval_env=PreprocessEnv(...))") -> PreprocessEnv:
    """A second, independent instance of `env` (for evaluation, or a vector env's sub-env).

    A deep copy keeps whatever the user changed on the env; an env that cannot be copied is
    made again from its registered spec. Else a TypeError ending in `fix` says what to do.
    """
    try:
        return copy.deepcopy(env)
    except Exception as copy_error:
        spec = getattr(env.env, "spec", None)
        try:
            return PreprocessEnv(gym.make(spec), target_return=env.target_return, max_step=_copy_limit(env))
        except Exception:
            raise TypeError(
                f"cannot make a second instance of env {env.env_name!r}: deepcopy fails ({copy_error}) "
                f"and it has no registered spec to make it again. {fix}"
            ) from copy_error


def env_recipe(env: PreprocessEnv) -> Callable[[], PreprocessEnv]:
    """A zero-argument function that makes `env` again in another process; it survives pickling.

    From its `source` (an env id or the function that made it); else from a pickled copy of the
    wrapped env (of the whole env for a `PreprocessEnv` subclass, whose behaviour must travel too);
    else from its registered spec. What cannot be imported there (a notebook's class, a lambda)
    travels by value. Raises TypeError naming the fix when nothing can cross.
    """
    if type(env) is not PreprocessEnv:
        return functools.partial(pickle.loads, _travelling(env, env.env_name))
    source = env.source
    if isinstance(source, str):
        maker: str | Callable[[], Any] = source
    elif source is not None:
        maker = functools.partial(_call_unpickled, _travelling(source, env.env_name))
    else:
        spec = getattr(env.env, "spec", None)
        try:
            maker = functools.partial(pickle.loads, _travelling(env.env, env.env_name))
        except TypeError:
            if spec is None or spec.id not in gym.registry:
                raise
            try:  # the spec whole: its id alone would drop the kwargs it was made with (Pendulum's g); not the user's
                # wrappers it lists, which gym.make cannot make again (they are why the env did not travel)
                bare = dataclasses.replace(spec, additional_wrappers=())
                maker = functools.partial(_call_unpickled, _travelling(functools.partial(gym.make, bare), env.env_name))
            except TypeError:
                maker = spec.id
    return functools.partial(_remake_env, maker, env.target_return, _copy_limit(env), _travelling(env._make_kwargs, env.env_name))


def _copy_limit(env: PreprocessEnv) -> int | None:
    # the limit `env` truncates at, not the one asked of it: a copy made from its id with a longer max_step would
    # lengthen the registered limit that `env` keeps. None: the copy gets the default limit and warns at it too
    return None if env._warn_at_limit else env.max_step


def _travelling(thing: Any, env_name: str) -> bytes:
    """`thing` pickled so that another process can unpickle it (by value where it cannot be imported there)."""
    import cloudpickle  # a dependency of gymnasium

    try:
        return cloudpickle.dumps(thing)
    except Exception as error:
        raise TypeError(
            f"env {env_name!r} cannot be sent to another process: {thing!r} cannot be pickled ({type(error).__name__}: {error}). "
            f"Give Arguments.env an env id, or a function that makes the env, e.g. Arguments(env=make_my_env)") from error


def _call_unpickled(data: bytes) -> Any:
    return pickle.loads(data)()


def _remake_env(source: str | Callable[[], Any], target_return: float, max_step: int | None, make_kwargs: bytes) -> PreprocessEnv:
    env = PreprocessEnv(source, target_return, max_step, **pickle.loads(make_kwargs)) if isinstance(source, str) else source()
    if not isinstance(env, PreprocessEnv):
        env = PreprocessEnv(env, max_step=max_step)
        env.source = source
    elif max_step is not None:
        env.set_max_step(max_step)
    env.target_return = target_return
    return env


class EnvWorkerTraceback(Exception):
    """The traceback, as text, of an env that raised in an async vector env's worker process: the cause of
    the env's own error, which `ReportingAsyncVectorEnv` raises in the training process."""


class ReportingAsyncVectorEnv(gym.vector.AsyncVectorEnv):
    """Gymnasium's AsyncVectorEnv, except that it reports an env's error itself.

    Gymnasium 1.x hands the worker's traceback to its logger as a format string, so a ``%`` in it (a line
    of the env's source, or its message) raised a TypeError in place of the env's error. Here the env's
    exception is raised as it was, its traceback in the worker chained as the cause.
    """

    def _raise_if_errors(self, successes: Any) -> None:
        successes = list(successes)
        if all(successes):
            return
        errors = [self.error_queue.get() for _ in range(len(successes) - sum(successes))]
        for index, *_ in errors:  # a worker that raised has shut down
            self.parent_pipes[index].close()
            self.parent_pipes[index] = None
        self._state = gym.vector.async_vector_env.AsyncState.DEFAULT
        index, _, error, trace = errors[-1]
        others = f" (sub-envs {sorted(other for other, *_ in errors[:-1])} raised too)" if len(errors) > 1 else ""
        raise error from EnvWorkerTraceback(f"sub-env {index} raised in its worker process{others}:\n{trace}")


def build_vector_env(env: PreprocessEnv, num_envs: int, if_async: bool = False) -> gym.vector.VectorEnv:
    """`num_envs` independent copies of `env` stepped as one Gymnasium vector env.

    Sub-envs reset in the same step that ends their episode (``AutoresetMode.SAME_STEP``), with
    the final observation in ``info["final_obs"]``, so that no transition pairs the last state
    of one episode with the first state of the next. ``if_async`` steps them in worker processes.
    """
    fix = (f"num_envs={num_envs} needs that many copies: make the env deep-copyable or register it with "
           f"gymnasium.register, or use num_envs=1 and pass the evaluation its own env, which is a copy otherwise: "
           f"Arguments(eval_env=PreprocessEnv(...))")
    clone_env(env, fix).close()  # one trial copy here, so that a failure is reported here, not in a worker
    make_copies = [lambda: clone_env(env, fix) for _ in range(num_envs)]  # fresh copies: AsyncVectorEnv closes its first
    vector_class = ReportingAsyncVectorEnv if if_async else gym.vector.SyncVectorEnv
    return vector_class(make_copies, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)


def close_vector_env(env: gym.vector.VectorEnv) -> None:
    """Closes a vector env, also one whose worker process died: Gymnasium's close then raises on the dead pipe, and
    would again when the env is collected, printing an ignored exception at exit."""
    try:
        env.close()
    except BaseException as error:  # the run's own error is the one to see: end the other workers and mark the env closed
        # a worker's own KeyboardInterrupt (Ctrl-C reaches the workers too) comes back from the step it cut short
        if not isinstance(error, Exception) and not isinstance(error.__cause__, EnvWorkerTraceback):
            raise
        for process in getattr(env, "processes", ()):
            if process.is_alive():
                process.terminate()
            process.join(timeout=5.0)
            if process.is_alive():  # deaf to SIGTERM: no orphans all the same
                process.kill()
                process.join()
        env.closed = True


def check_env(env: Any, steps: int = 20) -> list[str]:
    """Checks, before any training, that `env` follows the Gym API the way elegantrl needs it.

    Resets the env and takes `steps` steps with actions from its action space (its bounds
    included). Raises TypeError for something that is not an env at all, ValueError listing every
    problem found (each in plain words, with the fix); returns notes on things that work but
    deserve a look, such as an old-Gym API that `PreprocessEnv` converts.
    """
    raw = env.env if isinstance(env, PreprocessEnv) else env
    name = getattr(getattr(raw, "spec", None), "id", None) or type(raw).__name__
    missing = [attr for attr in ("reset", "step", "observation_space", "action_space") if not hasattr(raw, attr)]
    if missing:
        raise TypeError(f"{name} is not a Gym-API env: it has no {', '.join(missing)}. "
                        f"See https://gymnasium.farama.org/introduction/create_custom_env/")
    if _is_vector_env(raw):
        raise TypeError(_vector_env_message(raw))
    problems: list[str] = []
    notes: list[str] = []
    obs_space, action_space = raw.observation_space, raw.action_space
    if not (_is_box(obs_space) or _is_discrete(obs_space) or _is_multi_binary(obs_space)):
        problems.append(f"observation_space is {obs_space!r}; use a Box, Discrete or MultiBinary space "
                        f"(flatten a Dict, Tuple or MultiDiscrete space with gymnasium.wrappers.FlattenObservation)")
    if not ((_is_box(action_space) and len(action_space.shape) == 1 and action_space.shape[0] > 0) or _is_discrete(action_space)):
        problems.append(f"action_space is {action_space!r}; use a one-dimensional Box of one or more actions, or a Discrete space")
    elif _is_box(action_space) and not (np.isfinite(action_space.low).all() and np.isfinite(action_space.high).all()):
        problems.append(f"action_space {action_space!r} is unbounded; elegantrl's actors act in [-1, 1] and map that to the "
                        f"bounds, so give it finite low and high, e.g. gymnasium.spaces.Box(-2.0, 2.0, {action_space.shape})")
    if _is_box(obs_space) and not int(np.prod(obs_space.shape)):
        problems.append(_empty_observation_problem(obs_space))
    if problems:
        raise ValueError(_problem_report(name, problems))
    if _is_box(obs_space) and obs_space.dtype == np.uint8 and obs_space.shape and int(np.prod(obs_space.shape)) > 1:
        notes.append(f"observations are uint8 arrays of shape {obs_space.shape} (pixels?); the networks get them as 0-255 "
                     f"floats, which saturates their first layer: scale them to [0, 1], e.g. "
                     f"gymnasium.wrappers.TransformObservation(env, lambda obs: obs.astype(np.float32) / 255, Box(0.0, 1.0, {obs_space.shape}))")

    def check_obs(obs: Any, where: str) -> None:
        if _is_discrete(obs_space):
            if np.ndim(obs) != 0:  # e.g. np.array([s]): one integer is what a Discrete observation is
                problems.append(f"{where} returned observation {obs!r} of shape {np.shape(obs)}, but a {obs_space} observation "
                                f"is one integer: return int(s), or declare a Box observation_space")
            elif not np.issubdtype(np.asarray(obs).dtype, np.integer) or not obs_space.contains(int(obs)):
                problems.append(f"{where} returned observation {obs!r}, which is not in {obs_space}")
            return
        try:
            array = np.asarray(obs, dtype=np.float64)
        except (TypeError, ValueError):
            problems.append(f"{where} returned an observation of type {type(obs).__name__} that is not numeric; return a numpy array")
            return
        if array.shape != obs_space.shape:
            problems.append(f"{where} returned an observation of shape {array.shape}, but observation_space has shape {obs_space.shape}")
        elif not np.isfinite(array).all():
            problems.append(f"{where} returned a non-finite observation (NaN or inf): {array}")
        elif np.abs(array).max(initial=0.0) > FLOAT32_MAX:
            problems.append(f"{where} returned an observation beyond float32's range (±{FLOAT32_MAX:.3g}), which becomes inf "
                            f"in training: {array}; scale it down, e.g. with gymnasium.wrappers.TransformObservation")
        elif not obs_space.contains(array.astype(obs_space.dtype)):
            said = f"{where.split(' #')[0]} returned observations outside observation_space's bounds"
            if not any(note.startswith(said) for note in notes):  # one note, with the first such observation
                notes.append(f"{said}, e.g. {array}" + (f" at {where}" if " #" in where else ""))
        if np.asarray(obs).dtype != obs_space.dtype:
            notes.append(f"{where.split(' #')[0]} returned {np.asarray(obs).dtype} observations; observation_space says {obs_space.dtype} "
                         f"(PreprocessEnv casts them to float32)")

    def reset() -> Any:
        try:
            result = _reset_env(raw, _reset_keywords(raw.reset), 0, None)[0]
        except Exception as error:
            raise ValueError(_problem_report(name, [f"reset() raised {type(error).__name__}: {error}"])) from error
        if pair := _reset_pair(result):  # as PreprocessEnv.reset reads it
            if problem := _info_problem(pair[1], "reset()"):
                problems.append(problem)
            return pair[0]
        notes.append("reset() returns the observation alone (the old Gym API); PreprocessEnv converts it, "
                      "but Gymnasium's reset(seed=None, options=None) returns (observation, info)")
        return result

    check_obs(reset(), "reset()")
    rng = np.random.default_rng(0)
    if _is_discrete(action_space):
        actions = [int(getattr(action_space, "start", 0)) + int(a) for a in rng.integers(action_space.n, size=steps)]
    else:
        low, high = action_space.low, action_space.high
        if np.isfinite(low).all() and np.isfinite(high).all():
            actions = [low, high] + [rng.uniform(low, high).astype(action_space.dtype) for _ in range(steps - 2)]
        else:
            actions = [np.clip(rng.normal(size=action_space.shape), low, high).astype(action_space.dtype) for _ in range(steps)]
    for step, action in enumerate(actions, start=1):
        where = f"step() #{step}"
        try:
            result = raw.step(action)
        except Exception as error:
            problems.append(f"{where} raised {type(error).__name__}: {error} for action {action!r}, which is in {action_space}; "
                            f"an env must accept every action of its action_space")
            break
        if not isinstance(result, tuple) or len(result) not in (4, 5):
            problems.append(f"{where} returned {type(result).__name__} of length {len(result) if hasattr(result, '__len__') else '?'}; "
                            f"return (observation, reward, terminated, truncated, info)")
            break
        if len(result) == 4 and step == 1:
            notes.append("step() returns (obs, reward, done, info) (the old Gym API); PreprocessEnv converts it, reading "
                         "info['TimeLimit.truncated'] for time limits; Gymnasium returns (obs, reward, terminated, truncated, info)")
        obs, reward, *flags, info = result
        check_obs(obs, where)
        if problem := _reward_problem(reward, where):
            problems.append(problem)
        elif not np.isfinite(value := float(np.asarray(reward).item())):
            problems.append(f"{where} returned a non-finite reward ({reward})")
        elif abs(value) > FLOAT32_MAX:
            problems.append(f"{where} returned reward {value:g}, beyond float32's range (±{FLOAT32_MAX:.3g}), which becomes inf "
                            f"in training; scale it down (gymnasium.wrappers.TransformReward)")
        elif np.ndim(reward):
            notes.append("step() returns the reward as an array of one element; PreprocessEnv converts it to a float, Gymnasium's type")
        if not all(isinstance(flag, (bool, np.bool_)) or isinstance(flag, (int, np.integer)) and flag in (0, 1) for flag in flags):
            problems.append(f"{where} returned terminated/truncated flags {flags!r}; they must be bools")
        elif not all(isinstance(flag, (bool, np.bool_)) for flag in flags):
            notes.append("step() returns terminated/truncated as 0 or 1; PreprocessEnv converts them to bools, Gymnasium's type")
        if problem := _info_problem(info, where):
            problems.append(problem)
        if problems:
            break
        if any(bool(flag) for flag in flags):
            check_obs(reset(), "reset()")
    if problems:
        raise ValueError(_problem_report(name, problems))
    return sorted(set(notes), key=notes.index)


def _reset_pair(result: Any) -> tuple[Any, Any] | None:
    """Gymnasium's (obs, info) from reset(), info None included (a mistake to name); None for old Gym's bare
    observation, which may itself be a pair of numbers."""
    return result if isinstance(result, tuple) and len(result) == 2 and (result[1] is None or isinstance(result[1], dict)) else None


def _reward_problem(reward: Any, where: str) -> str | None:
    """What is wrong with `reward`, if anything: one real number (an array of one included), as both check_env
    and PreprocessEnv take it."""
    try:  # a torch tensor converts too, unless it lives on a GPU
        value = np.asarray(reward)
    except (TypeError, RuntimeError, ValueError):
        return f"{where} returned reward {reward!r}, which numpy cannot read; the reward must be one real number (a float)"
    if value.size != 1 or value.dtype.kind not in "iuf":
        return f"{where} returned reward {reward!r}; the reward must be one real number (a float)"
    return None


def _empty_observation_problem(space: Any) -> str:
    """The words check_env and PreprocessEnv both use for an observation space of no numbers."""
    return (f"observation_space is {space!r}, which holds no numbers: a policy could not tell one state from another. "
            f"Give the observation at least one element")


def _is_vector_env(env: Any) -> bool:
    """A Gymnasium vector env (or one shaped like it): several envs behind one, with batched spaces."""
    return isinstance(env, gym.vector.VectorEnv) or hasattr(env, "num_envs") and hasattr(env, "single_action_space")


def _vector_env_message(env: Any) -> str:
    count = getattr(env, "num_envs", "several")
    return (f"got a vector env of {count} envs ({type(env).__name__}); elegantrl makes its own vector envs. Pass one env "
            f"(an id such as 'Pendulum-v1', or gymnasium.make(...)) and set Arguments(num_envs={count})")


def _info_problem(info: Any, where: str) -> str | None:
    """What is wrong with `info`, if anything: the words check_env and PreprocessEnv both use."""
    return None if isinstance(info, dict) else f"{where} returned info of type {type(info).__name__}; info must be a dict (return {{}} for none)"


def _is_discrete(space: Any) -> bool:
    """A Discrete space, of Gymnasium or of old Gym (duck-typed): one integer, so it has no shape."""
    return hasattr(space, "n") and not hasattr(space, "nvec") and not getattr(space, "shape", None)


def _is_multi_binary(space: Any) -> bool:
    """A MultiBinary space: an array of 0/1 that has ``n`` like Discrete, but a shape too."""
    return hasattr(space, "n") and not hasattr(space, "nvec") and bool(getattr(space, "shape", None))


def _is_box(space: Any) -> bool:
    """A Box space, of Gymnasium or of old Gym (duck-typed)."""
    return hasattr(space, "low") and hasattr(space, "high") and getattr(space, "shape", None) is not None


def _reset_keywords(reset: Any) -> frozenset[str]:
    """Which of Gymnasium's ``reset(seed=, options=)`` keywords a reset method takes: none in old Gym.

    A ``**kwargs`` method (a wrapper) is taken at its word and marked ``"**"``: `_reset_env` finds out
    whether it forwards them to a reset that takes fewer (old Gym's TimeLimit around an old-Gym env).
    """
    try:
        parameters = inspect.signature(reset).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: assume Gymnasium's
        return frozenset({"seed", "options"})
    if any(p.kind == p.VAR_KEYWORD for p in parameters):
        return frozenset({"seed", "options", "**"})
    return frozenset(p.name for p in parameters if p.name in ("seed", "options"))


def _reset_env(env: Any, keywords: frozenset[str], seed: int | None, options: dict | None) -> tuple[Any, frozenset[str]]:
    """``env.reset`` with the keywords it takes (see `_reset_keywords`); old Gym is seeded by ``env.seed``.

    Returns the reset's result and the keywords to use next time: fewer, once a ``**kwargs`` wrapper
    turned out to pass them to a reset that takes fewer. Options that the env cannot take are an error.
    """
    while "seed" in keywords:
        kwargs = {"seed": seed, **({"options": options} if "options" in keywords or options is not None else {})}
        try:
            return env.reset(**kwargs), keywords
        except TypeError as error:  # only a forwarded call's own complaint, not a TypeError from inside a reset
            if "**" not in keywords or "reset() got an unexpected keyword argument" not in str(error):
                raise
            if "argument 'seed'" in str(error):
                keywords = frozenset()
            elif "argument 'options'" in str(error) and not options:
                keywords = frozenset({"seed"})
            else:
                raise
    if options:  # an empty dict asks for nothing (Gymnasium's own env checker passes one)
        raise TypeError(f"{type(env).__name__}.reset() takes no options (the old Gym API), but options={options!r} were given")
    if seed is not None and callable(getattr(env, "seed", None)):
        env.seed(seed)
    return env.reset(), keywords


def _problem_report(name: str, problems: list[str]) -> str:
    return f"env {name!r} does not follow the Gym API as elegantrl needs it:\n  - " + "\n  - ".join(problems)


def make_synthetic_market(num_stocks: int = 5, num_days: int = 1250, seed: int = 0) -> np.ndarray:
    """SYNTHETIC daily closing prices, (num_days, num_stocks): a documented model, not market data.

    Log returns follow a one-factor model, r = beta * market + idiosyncratic, with a drift per
    stock, and a two-state volatility regime (calm, volatile) that switches as a Markov chain
    (about every 60 days on average). Prices start at 100. The same seed gives the same market.
    """
    rng = np.random.default_rng(seed)
    drift = rng.uniform(-0.0002, 0.0008, num_stocks)  # daily, between about -5% and +20% a year
    beta = rng.uniform(0.5, 1.5, num_stocks)
    volatile, regimes = False, np.empty(num_days, dtype=bool)
    for day in range(num_days):
        volatile = volatile != (rng.random() < 1 / 60)
        regimes[day] = volatile
    scale = np.where(regimes, 2.5, 1.0)[:, None]
    market = rng.normal(0.0, 0.008, (num_days, 1)) * scale
    noise = rng.normal(0.0, 0.012, (num_days, num_stocks)) * scale
    log_returns = drift + beta * market + noise
    log_returns[0] = 0.0
    return 100.0 * np.exp(np.cumsum(log_returns, axis=0))


class StockTradingEnv(gym.Env):
    """A multi-stock daily trading env on a SYNTHETIC market (`make_synthetic_market`), no download.

    State: cash, the value held in each stock, each price relative to the period's first, and
    three features per stock (5- and 20-day returns, 20-day volatility), all scaled to order 1.
    Action: per stock in [-1, 1], the fraction of `max_trade` (in money) to buy (> 0) or sell
    (< 0), bounded by the cash and the shares held. Each trade pays `cost_rate` of its value.
    Reward: the change of total assets, scaled by `reward_scale`. An episode is the whole train
    (first 80% of days) or test period; its end is a time limit (truncated), not a terminal state.
    """

    metadata = {"render_modes": []}

    def __init__(self, mode: str = "train", num_stocks: int = 5, initial_cash: float = 1e6, max_trade: float = 1e5,
                 cost_rate: float = 1e-3, reward_scale: float = 1e-4, seed: int = 0):
        if mode not in ("train", "test"):
            raise ValueError(f"mode must be 'train' or 'test', got {mode!r}")
        prices = make_synthetic_market(num_stocks, seed=seed)
        split = int(len(prices) * 0.8)
        history = 20  # days of history the features need, taken from before the period
        self.prices = prices[:split] if mode == "train" else prices[split - history :]
        self.features = self._features(self.prices)[history:]
        self.prices = self.prices[history:]
        self.num_stocks, self.initial_cash, self.max_trade = num_stocks, initial_cash, max_trade
        self.cost_rate, self.reward_scale = cost_rate, reward_scale
        self.max_step = len(self.prices) - 1
        dim = 1 + num_stocks * 5
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (dim,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (num_stocks,), np.float32)

    @staticmethod
    def _features(prices: np.ndarray) -> np.ndarray:
        log_price = np.log(prices)
        features = np.zeros((len(prices), prices.shape[1], 3))
        for lag, column in ((5, 0), (20, 1)):
            features[lag:, :, column] = (log_price[lag:] - log_price[:-lag]) * 10
        daily = np.diff(log_price, axis=0, prepend=log_price[:1])
        for day in range(20, len(prices)):
            features[day, :, 2] = daily[day - 19 : day + 1].std(axis=0) * 50
        return features

    def _state(self) -> np.ndarray:
        price = self.prices[self.day]
        return np.concatenate((
            [self.cash / self.initial_cash],
            self.shares * price / self.initial_cash * self.num_stocks,
            price / self.prices[0],
            self.features[self.day].reshape(-1),
        )).astype(np.float32)

    def total_assets(self) -> float:
        """Cash plus the value of the shares held, at today's prices."""
        return float(self.cash + self.shares @ self.prices[self.day])

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.day, self.cash, self.shares = 0, self.initial_cash, np.zeros(self.num_stocks)
        return self._state(), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        price = self.prices[self.day]
        before = self.total_assets()
        trade = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0) * self.max_trade / price  # in shares
        sell = np.minimum(-np.minimum(trade, 0.0), self.shares)  # no short selling
        self.shares -= sell
        self.cash += sell @ price * (1 - self.cost_rate)
        buy = np.maximum(trade, 0.0)
        cost = buy @ price * (1 + self.cost_rate)
        if cost > self.cash:  # not enough cash: buy proportionally less of each
            buy *= self.cash / cost
            cost = self.cash
        self.shares += buy
        self.cash -= cost
        self.day += 1
        reward = (self.total_assets() - before) * self.reward_scale
        return self._state(), reward, False, self.day >= self.max_step, {"total_assets": self.total_assets()}
