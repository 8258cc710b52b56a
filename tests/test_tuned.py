"""Tuned settings (elegantrl.tuned): applied to what the user left unset, overridable, printed, kept in config.json."""

import json
import os
import subprocess
import sys

from elegantrl.agent import AgentD3QN, AgentDiscretePPO, AgentDQN, AgentQRDQN, AgentSAC
from elegantrl.run import Arguments, load_agent, train_and_evaluate
from elegantrl.tuned import TUNED, task_kwargs, tuned_entry


def test_an_entry_fills_the_fields_left_unset_and_the_agent_settings_not_passed():
    entry = TUNED["PPO", "LunarLander-v3"]
    args = Arguments(agent=AgentDiscretePPO(), env="LunarLander-v3")
    args.check()
    assert {name: getattr(args, name) for name in entry if name != "agent"} == {k: v for k, v in entry.items() if k != "agent"}
    assert (args.agent.lambda_entropy, args.agent.lambda_gae_adv) == (entry["agent"]["lambda_entropy"], entry["agent"]["lambda_gae_adv"])
    assert args.tuned_settings[0] == "PPO" and args.tuned_settings[1]["num_envs"] == entry["num_envs"]


def test_what_the_user_sets_wins_field_by_field():
    entry = TUNED["PPO", "LunarLander-v3"]
    args = Arguments(agent=AgentDiscretePPO(lambda_entropy=0.0), env="LunarLander-v3", num_envs=2, gamma=0.99)
    args.check()
    assert (args.num_envs, args.gamma) == (2, 0.99)  # the user's
    assert args.target_step == entry["target_step"]  # the rest still tuned
    assert args.agent.lambda_entropy == 0.0 and args.agent.lambda_gae_adv == entry["agent"]["lambda_gae_adv"]
    assert "num_envs" not in args.tuned_settings[1] and "lambda_entropy" not in args.tuned_settings[1]


def test_an_env_without_an_entry_gets_the_family_defaults_and_if_tuned_false_ignores_the_table():
    args = Arguments(agent=AgentSAC(), env="MountainCarContinuous-v0")
    args.check()
    assert tuned_entry(args.agent, "MountainCarContinuous-v0") == ("", {}) and args.tuned_settings is None
    assert (args.net_dim, args.gamma, args.num_envs) == (AgentSAC.arg_defaults["net_dim"], 0.99, 1)
    args = Arguments(agent=AgentDiscretePPO(), env="CartPole-v1", if_tuned=False)
    args.check()
    assert args.tuned_settings is None and args.num_envs == 1 and args.target_step == AgentDiscretePPO.arg_defaults["target_step"]


def test_the_agent_class_is_looked_up_before_its_family(monkeypatch):
    monkeypatch.setitem(TUNED, ("QRDQN", "CartPole-v1"), dict(net_dim=24))
    monkeypatch.setitem(TUNED, ("DQN", "CartPole-v1"), dict(net_dim=40))
    assert tuned_entry(AgentQRDQN(), "CartPole-v1") == ("QRDQN", dict(net_dim=24))
    assert tuned_entry(AgentD3QN(), "CartPole-v1") == ("DQN", dict(net_dim=40))  # D3QN < DoubleDQN < DQN
    assert tuned_entry(AgentDQN(), "MountainCar-v0") == ("", {})


def test_tuned_agent_settings_reach_config_json_and_load_agent_rebuilds_them(tmp_path, monkeypatch, capsys):
    # an entry of the table's form with an agent setting that changes the network: num_quantiles
    monkeypatch.setitem(TUNED, ("QRDQN", "CartPole-v1"), dict(net_dim=24, agent=dict(num_quantiles=4, explore_decay_steps=256)))
    args = Arguments(agent=AgentQRDQN(explore_rate=(1.0, 0.1)), env="CartPole-v1", cwd=str(tmp_path / "run"), batch_size=32,
                     target_step=32, warmup_steps=64, eval_gap=128, eval_times1=2, eval_times2=0, break_step=256)
    train_and_evaluate(args)
    assert "tuned settings for CartPole-v1 (QRDQN family" in capsys.readouterr().out
    with open(os.path.join(args.cwd, "config.json")) as file:
        config = json.load(file)
    assert config["net_dim"] == 24
    assert config["agent_settings"] == dict(num_quantiles=4, explore_decay_steps=256, explore_rate=[1.0, 0.1])
    agent = load_agent(args.cwd)
    assert agent.critic.num_quantiles == 4 and agent.explore_rate_range == [1.0, 0.1]


def test_the_cli_prints_the_tuned_settings_and_a_flag_overrides_one(tmp_path):
    cwd = str(tmp_path / "ppo")
    done = subprocess.run([sys.executable, "-m", "elegantrl", "--agent", "DiscretePPO", "--env", "CartPole-v1", "--cwd", cwd,
                           "--num-envs", "2", "--break-step", "1024", "--eval-times1", "1", "--eval-times2", "0"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    header = next(line for line in done.stdout.splitlines() if "tuned settings" in line)
    assert "PPO family" in header and "target_step=64" in header and "num_envs" not in header


def test_every_entry_names_fields_that_default_to_none_and_settings_its_family_takes():
    import dataclasses
    import inspect

    from elegantrl import agent as agent_module

    defaults = {spec.name: spec.default for spec in dataclasses.fields(Arguments)}
    for (family, env_id), entry in TUNED.items():
        assert all(defaults[name] is None for name in entry if name != "agent"), (family, env_id)
        parameters = inspect.signature(getattr(agent_module, "Agent" + family).__init__).parameters
        assert all(name in parameters for name in entry.get("agent", {})), (family, env_id)


def test_a_setting_changed_after_construction_is_kept():
    agent = AgentDiscretePPO()
    agent.lambda_entropy, agent.ratio_clip = 0.05, 0.1  # the original ElegantRL's way of setting an agent
    args = Arguments(agent=agent, env="LunarLander-v3")
    args.check()
    assert (agent.lambda_entropy, agent.ratio_clip) == (0.05, 0.1)
    assert agent.lambda_gae_adv == TUNED["PPO", "LunarLander-v3"]["agent"]["lambda_gae_adv"]  # untouched, so tuned
    assert "lambda_entropy" not in args.tuned_settings[1]["agent"]


def test_subclasses_with_their_own_constructors_are_left_as_they_are():
    class Forwarding(AgentDiscretePPO):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)

    class Fixed(AgentDiscretePPO):
        def __init__(self, clip=0.1):
            super().__init__(ratio_clip=clip, lambda_entropy=0.05)

    agent = Forwarding(ratio_clip=0.3)
    assert agent.given_settings == {"ratio_clip": 0.3}
    Arguments(agent=agent, env="LunarLander-v3").check()
    assert agent.ratio_clip == 0.3 and agent.lambda_entropy == 0.01  # keyword arguments forwarded: tuned as usual
    agent = Forwarding(0.3)  # an unnamed setting: the agent is not tuned, and nothing raises
    Arguments(agent=agent, env="LunarLander-v3").check()
    assert agent.given_settings is None and agent.lambda_entropy == 0.0
    agent = Fixed()
    args = Arguments(agent=agent, env="LunarLander-v3")
    args.check()
    assert agent.lambda_entropy == 0.05 and args.num_envs == TUNED["PPO", "LunarLander-v3"]["num_envs"]


def test_a_variant_of_an_env_gets_no_entry_and_a_second_check_keeps_the_header():
    import gymnasium as gym

    args = Arguments(agent=AgentD3QN(), env=gym.make("LunarLander-v3", enable_wind=True))
    args.check()
    assert args.tuned_settings is None and args.net_dim == AgentD3QN.arg_defaults["net_dim"]
    # the registered env with its own defaults spelt out is no variant: it keeps the entry
    args = Arguments(agent=AgentD3QN(), env=gym.make("LunarLander-v3", continuous=False, gravity=-10.0))
    args.check()
    assert args.tuned_settings == ("D3QN", TUNED["D3QN", "LunarLander-v3"])
    assert task_kwargs("Pendulum-v1", {"g": 10.0}) == task_kwargs("Pendulum-v1", {"render_mode": "rgb_array"}) == {"g": 10.0}
    assert task_kwargs("LunarLanderContinuous-v3", {"continuous": True}) != task_kwargs("LunarLander-v3", {"continuous": True, "gravity": -5})
    args = Arguments(agent=AgentDiscretePPO(), env="LunarLander-v3")
    args.check()
    first = args.tuned_settings
    args.check()
    assert args.tuned_settings == first and "num_envs" in first[1]


def test_a_resumed_run_keeps_the_tuned_settings_it_had(tmp_path, monkeypatch):
    monkeypatch.setitem(TUNED, ("DQN", "CartPole-v1"), dict(net_dim=24, learning_rate=1e-3))
    run = dict(env="CartPole-v1", cwd=str(tmp_path / "run"), batch_size=32, target_step=32, warmup_steps=64, eval_gap=128,
               eval_times1=1, eval_times2=0, if_print=False)
    train_and_evaluate(Arguments(agent=AgentDQN(), break_step=256, **run))
    monkeypatch.setitem(TUNED, ("DQN", "CartPole-v1"), dict(net_dim=40, learning_rate=5e-4))  # the table changed since
    args = Arguments(agent=AgentDQN(), break_step=512, if_resume=True, **run)
    train_and_evaluate(args)
    assert (args.net_dim, args.learning_rate) == (24, 1e-3)
