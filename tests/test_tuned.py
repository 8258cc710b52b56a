"""Tuned settings (elegantrl.tuned): applied to what the user left unset, overridable, printed, kept in config.json."""

import json
import os
import subprocess
import sys

import pytest

from elegantrl.agent import AgentD3QN, AgentDiscretePPO, AgentDQN, AgentQRDQN, AgentSAC
from elegantrl.run import Arguments, load_agent, train_and_evaluate
from elegantrl.tuned import TUNED, tuned_entry


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
    args = Arguments(agent=AgentSAC(), env="Pendulum-v1")
    args.check()
    assert tuned_entry(args.agent, "Pendulum-v1") == ("", {}) and args.tuned_settings is None
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
