"""What a new user trips on, through the command line where they meet it: the library never deletes
what it did not write, a kill leaves a checkpoint to resume, the exit status says how a run ended,
resume keeps to its task, break_step is the budget, and a bad input is one line that leaves nothing.

Every test that starts a process gives it a timeout and kills it if the test fails."""

import contextlib
import csv
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from elegantrl.agent import AgentD3QN, AgentQRDQN
from elegantrl.run import Arguments, main, train_and_evaluate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI_PATH = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))  # the checkout first, and what the caller had
TINY = ["--net-dim", "16", "--batch-size", "32", "--target-step", "32", "--eval-times1", "2", "--eval-times2", "1"]


def with_ctrl_c() -> None:
    """In a child before its exec: Ctrl-C as a terminal has it, even where this process ignores it (a test runner's
    worker, nohup), since a program inherits an ignored SIGINT and Python keeps it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli(*flags, cwd, timeout=240):
    env = {**os.environ, "PYTHONPATH": CLI_PATH}
    return subprocess.run([sys.executable, "-m", "elegantrl", *flags], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, env=env)


def cli_here(*flags, cwd, capsys, monkeypatch):
    """`cli`, with ``python -m elegantrl``'s `main` called in this process: for checks that end before anything trains
    (the start-up of an interpreter saved). What it returned or exited with, and what it printed."""
    monkeypatch.chdir(cwd)
    try:
        status = main(list(flags))
    except SystemExit as exit_info:  # argparse's own refusals
        status = exit_info.code
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(["elegantrl", *flags], status, captured.out, captured.err)


def start_cli(*flags, cwd):
    env = {**os.environ, "PYTHONPATH": CLI_PATH}
    return subprocess.Popen([sys.executable, "-m", "elegantrl", *flags], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, cwd=cwd, env=env, preexec_fn=with_ctrl_c)


def wait_for_rows(path, rows, process, timeout=120):
    """Waits until recorder.csv at `path` holds `rows` evaluations."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[0]
        if os.path.isfile(path) and len(read_record(path)) >= rows:
            return
        time.sleep(0.1)
    raise AssertionError(f"no {rows} evaluations in {timeout} s")


def read_record(path):
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


def one_line_error(result):
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def train_tiny_run(folder):
    """Trains a tiny run in a new `folder`; returns the names of the files it wrote."""
    folder.mkdir()
    result = cli("--cwd", str(folder), "--break-step", "256", "--warmup-steps", "64", "--eval-gap", "128", *TINY, cwd=folder.parent)
    assert result.returncode == 0, result.stderr
    return sorted(os.listdir(folder))


# ---- never delete what the library did not write -----------------------------------------------
@pytest.mark.timeout(120)
def test_remove_refuses_a_folder_that_is_not_a_run_and_keeps_its_files(tmp_path):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.txt").write_text("four years of work")
    line = one_line_error(cli("--cwd", "precious", "--remove", "--break-step", "64", cwd=tmp_path))
    assert "--remove removes only an elegantrl run folder" in line and "thesis.txt" in line and "Nothing was deleted" in line
    line = one_line_error(cli("--cwd", "precious", "--break-step", "64", cwd=tmp_path))  # not "already holds a run"
    assert "holds no run marked as elegantrl" in line and "already holds a run" not in line
    assert os.listdir(precious) == ["thesis.txt"] and (precious / "thesis.txt").read_text() == "four years of work"


@pytest.mark.timeout(180)
def test_remove_refuses_a_run_folder_holding_a_strangers_file_and_the_current_folder(tmp_path):
    run = tmp_path / "run"
    files = train_tiny_run(run)
    assert "config.json" in files and json.loads((run / "config.json").read_text())["elegantrl_run"] == 1
    line = one_line_error(cli("--cwd", "run", "--break-step", "64", cwd=tmp_path))
    assert "already holds a run" in line and "--resume" in line and "--remove" in line

    (run / "notes.txt").write_text("mine")
    line = one_line_error(cli("--cwd", "run", "--remove", "--break-step", "64", cwd=tmp_path))
    assert "notes.txt" in line and "nothing was deleted" in line
    assert sorted(os.listdir(run)) == sorted([*files, "notes.txt"])

    os.remove(run / "notes.txt")  # the run folder itself is the current folder: never removed
    line = one_line_error(cli("--cwd", ".", "--remove", "--break-step", "64", cwd=run))
    assert "current folder" in line
    line = one_line_error(cli("--cwd", str(tmp_path), "--remove", "--break-step", "64", cwd=run))  # a parent
    assert "current folder, a parent of it" in line
    assert sorted(os.listdir(run)) == files


@pytest.mark.timeout(180)
def test_remove_replaces_a_run_of_the_library(tmp_path):
    run = tmp_path / "run"
    train_tiny_run(run)
    first = (run / "recorder.csv").read_text()
    result = cli("--cwd", "run", "--remove", "--seed", "1", "--break-step", "128", "--warmup-steps", "64", "--eval-gap", "128",
                 *TINY, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads((run / "config.json").read_text())["random_seed"] == 1
    assert (run / "recorder.csv").read_text() != first and len(read_record(run / "recorder.csv")) == 1


# ---- kills: a checkpoint a kill cannot tear, and the exit status ---------------------------------
@pytest.mark.timeout(240)
def test_sigkill_after_a_few_evaluations_leaves_a_checkpoint_that_resume_continues(tmp_path):
    flags = ["--cwd", "run", "--warmup-steps", "64", "--eval-gap", "256", *TINY]
    process = start_cli(*flags, "--break-step", "1000000", cwd=tmp_path)
    try:
        wait_for_rows(tmp_path / "run" / "recorder.csv", 3, process)
        process.kill()
        process.wait(timeout=30)
    finally:
        process.kill()
    steps = torch.load(tmp_path / "run" / "agent.pth", weights_only=True)["total_steps"]
    assert steps >= 3 * 256
    assert (tmp_path / "run" / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # drawn during the run
    rows = len(read_record(tmp_path / "run" / "recorder.csv"))
    with open(tmp_path / "run" / "recorder.csv", "a") as file:
        file.write(f"{steps + 1},12.5,-3")  # as a kill in the middle of appending a row would leave it

    result = cli(*flags, "--resume", "--break-step", str(steps + 512), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"resumed at env step {steps:,d}" in result.stdout
    record = read_record(tmp_path / "run" / "recorder.csv")
    assert len(record) > rows and int(record[-1]["step"]) == steps + 512
    assert all(row["best_return"] for row in record)  # the torn row is gone, and did not tear the next
    assert [int(row["step"]) for row in record] == sorted({int(row["step"]) for row in record})
    assert torch.load(tmp_path / "run" / "agent.pth", weights_only=True)["total_steps"] == steps + 512


@pytest.mark.timeout(240)
@pytest.mark.parametrize("signum, status, name", [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "Ctrl-C")])
def test_sigterm_and_ctrl_c_give_their_exit_status_and_keep_the_agent(signum, status, name, tmp_path):
    process = start_cli("--cwd", "run", "--warmup-steps", "64", "--eval-gap", "256", "--break-step", "1000000", *TINY, cwd=tmp_path)
    try:
        wait_for_rows(tmp_path / "run" / "recorder.csv", 2, process)
        process.send_signal(signum)
        output, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == status, output
    assert f"stopped by {name} at env step" in output and "Traceback" not in output
    steps = int(output.split("at env step ")[1].split(".")[0].replace(",", ""))
    assert torch.load(tmp_path / "run" / "agent.pth", weights_only=True)["total_steps"] == steps >= 2 * 256


@pytest.mark.timeout(240)
def test_ctrl_c_in_a_terminal_with_async_env_workers_still_saves(tmp_path):
    # a terminal's Ctrl-C reaches the whole process group: the env workers' cut-short steps must not skip the save
    script = tmp_path / "train.py"
    script.write_text("""
import time
import gymnasium as gym
from elegantrl.agent import AgentD3QN
from elegantrl.run import Arguments, main, train_and_evaluate

class Slow(gym.Wrapper):  # most of the run is spent waiting for the workers' steps
    def step(self, action):
        time.sleep(0.02)
        return self.env.step(action)

if __name__ == "__main__":
    train_and_evaluate(Arguments(agent=AgentD3QN(), env=lambda: Slow(gym.make("CartPole-v1")), cwd="run", num_envs=2,
                                 if_async_envs=True, net_dim=16, batch_size=32, target_step=32, warmup_steps=64,
                                 eval_gap=128, eval_times1=1, eval_times2=0, break_step=1_000_000, target_return=1e9))
""")
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               cwd=tmp_path, env={**os.environ, "PYTHONPATH": CLI_PATH}, start_new_session=True, preexec_fn=with_ctrl_c)
    try:
        wait_for_rows(tmp_path / "run" / "recorder.csv", 2, process)
        os.killpg(process.pid, signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    steps = int(output.split("at env step ")[1].split(".")[0].replace(",", ""))
    assert torch.load(tmp_path / "run" / "agent.pth", weights_only=True)["total_steps"] == steps >= 2 * 128, output


@pytest.mark.timeout(240)
@pytest.mark.parametrize("trainer", ["train_and_evaluate", "train_and_evaluate_mp"])
def test_sigterm_ends_a_users_script_with_status_143_and_no_traceback(trainer, tmp_path):
    # A scheduler (or docker stop) sends SIGTERM: the run saves, and the script ends as the signal would
    # end it, not with status 1 and a traceback that reads as a crash.
    workers = "rollout_num=2, " if trainer.endswith("_mp") else ""
    script = tmp_path / "train.py"
    script.write_text(f"""
from elegantrl.agent import AgentD3QN
from elegantrl.run import Arguments, {trainer}
if __name__ == "__main__":
    {trainer}(Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd="run", {workers}net_dim=16, batch_size=32, target_step=32,
              warmup_steps=64, eval_gap=256, eval_times1=2, eval_times2=1, break_step=1_000_000, target_return=1e9))
    print("the script went on")
""")
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               cwd=tmp_path, env={**os.environ, "PYTHONPATH": CLI_PATH})
    try:
        wait_for_rows(tmp_path / "run" / "recorder.csv", 2, process)
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 143, output
    assert "stopped by SIGTERM at env step" in output and "Traceback" not in output and "the script went on" not in output
    assert torch.load(tmp_path / "run" / "agent.pth", weights_only=True)["total_steps"] >= 2 * 256


@pytest.mark.timeout(180)
@pytest.mark.parametrize("workers", [[], ["--rollout-num", "2"]])
def test_a_second_ctrl_c_stops_at_once_without_a_traceback(workers, tmp_path):
    process = start_cli("--cwd", "run", "--warmup-steps", "64", "--eval-gap", "256", "--break-step", "1000000", *TINY, *workers,
                        cwd=tmp_path)
    try:
        wait_for_rows(tmp_path / "run" / "recorder.csv", 1, process)
        process.send_signal(signal.SIGINT)
        time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130 and "Traceback" not in output, output
    assert torch.load(tmp_path / "run" / "agent.pth", weights_only=True)["total_steps"] >= 256  # the last good checkpoint


@pytest.mark.timeout(120)
def test_ctrl_c_during_the_warm_up_counts_the_steps_taken(tmp_path):
    process = start_cli("--cwd", "run", "--warmup-steps", "2000000", "--max-memo", "2000000", "--break-step", "3000000",
                        cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "run" / "config.json").exists():  # written once the warm-up starts
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.1)
        time.sleep(2.0)
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, output
    steps = int(output.split("at env step ")[1].split(".")[0].replace(",", ""))
    assert 0 < steps < 2_000_000
    assert torch.load(tmp_path / "run" / "agent.pth", weights_only=True)["total_steps"] == steps


# ---- resume keeps to its task; break_step is the budget; one seed, one curve ---------------------
@pytest.mark.timeout(180)
def test_resume_keeps_the_agent_settings_that_shape_its_networks(tmp_path):
    fields = dict(env="CartPole-v1", cwd=str(tmp_path / "run"), net_dim=16, batch_size=32, target_step=32, warmup_steps=64,
                  eval_gap=128, eval_times1=2, eval_times2=1, if_print=False)
    train_and_evaluate(Arguments(agent=AgentQRDQN(num_quantiles=8), break_step=256, **fields))
    with pytest.raises(ValueError, match=r"settings differ from the run's: num_quantiles is the default now, 8 in the run.*"
                                         r"AgentQRDQN\(\*\*\{'num_quantiles': 8\}\)"):
        train_and_evaluate(Arguments(agent=AgentQRDQN(), if_resume=True, break_step=512, **fields))
    # the command line cannot pass agent settings: a resume there takes the run's own from config.json
    result = cli("--agent", "QRDQN", "--cwd", "run", "--resume", "--break-step", "512", "--warmup-steps", "64", "--eval-gap", "128",
                 *TINY, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert torch.load(tmp_path / "run" / "agent.pth", weights_only=True)["total_steps"] == 512


@pytest.mark.timeout(180)
def test_resume_with_another_env_or_agent_is_refused_and_the_config_kept(tmp_path):
    run = tmp_path / "run"
    train_tiny_run(run)
    config = (run / "config.json").read_bytes()
    line = one_line_error(cli("--cwd", "run", "--resume", "--env", "Acrobot-v1", "--break-step", "2000", cwd=tmp_path))
    assert "CartPole-v1" in line and "--env is 'Acrobot-v1'" in line
    assert "state_dim" not in line and "--net-dim" not in line  # what follows from another env, or flags not passed
    line = one_line_error(cli("--cwd", "run", "--resume", "--agent", "DQN", "--break-step", "2000", cwd=tmp_path))
    assert "--agent is 'DQN', the run's 'D3QN'" in line and "--net-dim" not in line
    assert (run / "config.json").read_bytes() == config


@pytest.mark.timeout(180)
def test_resume_refuses_the_env_made_with_other_keyword_arguments_and_the_command_line_makes_the_runs(tmp_path, capsys, monkeypatch):
    from elegantrl.agent import AgentSAC
    from elegantrl.env import PreprocessEnv

    fields = dict(cwd=str(tmp_path / "run"), net_dim=16, batch_size=32, warmup_steps=64, eval_gap=128, eval_times1=1, eval_times2=1,
                  max_step=300, if_print=False)  # longer than the registered 200: the command line's env must be made with it
    train_and_evaluate(Arguments(agent=AgentSAC(), env=PreprocessEnv("Pendulum-v1", max_step=300, g=2.0), break_step=256, **fields))
    config = (tmp_path / "run" / "config.json").read_bytes()
    with pytest.raises(ValueError, match=r"another task: the env's keyword arguments is \{\}, the run's \{'g': 2.0\}"):
        train_and_evaluate(Arguments(agent=AgentSAC(), env="Pendulum-v1", if_resume=True, break_step=512, **fields))
    with pytest.raises(ValueError, match=r"the env's keyword arguments is \{'g': 9.0\}, the run's \{'g': 2.0\}"):
        train_and_evaluate(Arguments(agent=AgentSAC(), env=PreprocessEnv("Pendulum-v1", max_step=300, g=9.0), if_resume=True,
                                     break_step=512, **fields))
    # the command line cannot pass them: its resume makes the env as config.json says, where the check above would refuse another
    result = cli_here("--agent", "SAC", "--env", "Pendulum-v1", "--cwd", "run", "--resume", "--break-step", "384", "--warmup-steps", "64",
                      "--eval-gap", "128", "--max-step", "300", *TINY, cwd=tmp_path, capsys=capsys, monkeypatch=monkeypatch)
    assert result.returncode == 0, result.stderr
    assert torch.load(tmp_path / "run" / "agent.pth", weights_only=True)["total_steps"] == 384
    assert (tmp_path / "run" / "config.json").read_bytes() == config


@pytest.mark.timeout(180)
def test_a_command_line_resume_takes_the_runs_agent_and_env_where_no_flag_names_them(tmp_path, capsys, monkeypatch):
    from elegantrl.agent import AgentSAC

    fields = dict(net_dim=16, batch_size=32, warmup_steps=64, eval_gap=128, eval_times1=1, eval_times2=1, if_print=False)
    train_and_evaluate(Arguments(agent=AgentSAC(), env="Pendulum-v1", cwd=str(tmp_path / "run"), break_step=256, **fields))
    # not D3QN on CartPole-v1, the defaults of a new run, which would be refused as another task
    result = cli_here("--cwd", "run", "--resume", "--break-step", "384", "--warmup-steps", "64", "--eval-gap", "128", *TINY,
                      cwd=tmp_path, capsys=capsys, monkeypatch=monkeypatch)
    assert result.returncode == 0, result.stderr
    assert torch.load(tmp_path / "run" / "agent.pth", weights_only=True)["total_steps"] == 384
    line = one_line_error(cli_here("--cwd", "run", "--resume", "--agent", "TD3", "--break-step", "512", cwd=tmp_path,
                                   capsys=capsys, monkeypatch=monkeypatch))
    assert "--agent is 'TD3', the run's 'SAC'" in line  # a flag given still names the task, and is refused as another
    # a run of a user's env class, which is not registered: the command line cannot make it, and says where it can be resumed
    config_path = tmp_path / "run" / "config.json"
    config_path.write_text(json.dumps({**json.loads(config_path.read_text()), "env": "MyEnv"}))
    line = one_line_error(cli_here("--cwd", "run", "--resume", "--break-step", "512", cwd=tmp_path, capsys=capsys, monkeypatch=monkeypatch))
    assert "trained on env 'MyEnv', which is not a registered env id" in line and "--env module:MyEnv" in line, line
    assert "resume it in Python" in line, line
    # a run of a user's own agent class: named, not replaced by the command line's default D3QN
    config_path.write_text(json.dumps({**json.loads(config_path.read_text()), "env": "Pendulum-v1", "agent": "AgentMySAC"}))
    line = one_line_error(cli_here("--cwd", "run", "--resume", "--break-step", "512", cwd=tmp_path, capsys=capsys, monkeypatch=monkeypatch))
    assert "trained agent 'AgentMySAC', which the command line does not have" in line and "D3QN" not in line, line


@pytest.mark.timeout(180)
@pytest.mark.parametrize("agent, budget", [("D3QN", 300), ("DiscretePPO", 500)])
def test_break_step_is_the_budget(agent, budget, tmp_path):
    result = cli("--agent", agent, "--cwd", "run", "--break-step", str(budget), "--num-envs", "2", "--eval-times1", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    steps = torch.load(tmp_path / "run" / "agent.pth", weights_only=True)["total_steps"]
    assert 0 < steps <= budget and int(read_record(tmp_path / "run" / "recorder.csv")[-1]["step"]) == steps


@pytest.mark.timeout(240)
@pytest.mark.parametrize("agent, envs", [("D3QN", "--no-async-envs"), ("D3QN", "--async-envs"), ("DiscretePPO", "--no-async-envs")])
def test_two_runs_with_one_seed_and_two_envs_give_one_record(agent, envs, tmp_path):
    records = []
    for run in ("a", "b"):
        flags = ["--agent", agent, envs, "--cwd", run, "--seed", "7", "--num-envs", "2", "--break-step", "512", "--eval-gap", "128"]
        result = cli(*flags, *TINY, "--warmup-steps", "64" if agent == "D3QN" else "0", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        records.append([{k: v for k, v in row.items() if k != "seconds"} for row in read_record(tmp_path / run / "recorder.csv")])
    assert len(records[0]) == 4 and records[0] == records[1]


# ---- validate before anything is written ----------------------------------------------------------
@pytest.mark.timeout(240)
@pytest.mark.parametrize("flags, words", [
    (["--seed", "-1"], "--seed must be an integer from 0"),
    (["--device", "cuda:7"], "--device 'cuda:7' is not available here"),
    (["--device", "gpu"], "--device 'gpu' is not a torch device"),
    (["--repeat-times", "inf"], "--repeat-times must be a finite number"),
    (["--learning-rate", "nan"], "--learning-rate must be a finite number"),
    (["--gamma", "2"], "--gamma must be in (0, 1]"),
    (["--cwd", "somefile/run"], "is a file"),
    (["--cwd", "/proc/elegantrl-test/run"], "cannot be written"),
    (["--resume", "--remove", "--cwd", "x"], "--resume and --remove"),
    (["--resume"], "--resume needs --cwd set to a run folder"),
    (["--cwd", ""], "--cwd must be a folder's path"),
    (["--cwd", "x" * 300], "cannot be made: File name too long"),
    (["--cwd", "dangling"], "cannot be made"),
    (["--seed", "1e3"], "argument --random-seed/--seed: '1e3' is not a whole number"),
    (["--agent", "Foo"], "invalid choice: 'Foo'"),
])
def test_a_bad_setting_is_one_line_naming_the_flag_and_leaves_nothing(flags, words, tmp_path, capsys, monkeypatch):
    (tmp_path / "somefile").write_text("")
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    line = one_line_error(cli_here(*flags, "--break-step", "64", cwd=tmp_path, capsys=capsys, monkeypatch=monkeypatch))
    assert words in line
    assert sorted(os.listdir(tmp_path)) == ["dangling", "somefile"]


def test_a_failed_start_leaves_no_folder_behind(tmp_path):
    import gymnasium as gym

    class Uncopyable(gym.Wrapper):  # a vector of it needs copies, which fail after the run folder was chosen
        spec = None  # no registered spec to make it again from

        def __deepcopy__(self, memo):
            raise TypeError("holds a simulator handle")

    from elegantrl.env import PreprocessEnv

    args = Arguments(agent=AgentD3QN(), env=PreprocessEnv(Uncopyable(gym.make("CartPole-v1").env)), num_envs=2,
                     cwd=str(tmp_path / "runs" / "deep" / "run"), break_step=64, if_print=False)
    with pytest.raises(TypeError, match="num_envs=2 needs that many copies"):
        train_and_evaluate(args)
    assert os.listdir(tmp_path) == []


def test_a_seed_of_none_is_drawn_printed_and_recorded(tmp_path, capsys):
    args = Arguments(agent=AgentD3QN(), env="CartPole-v1", random_seed=None, cwd=str(tmp_path / "run"), break_step=64,
                     warmup_steps=64, eval_times1=1, eval_times2=0)
    train_and_evaluate(args)
    assert isinstance(args.random_seed, int) and 0 <= args.random_seed < 2**31
    assert f"drew seed {args.random_seed}" in capsys.readouterr().out
    assert json.loads((tmp_path / "run" / "config.json").read_text())["random_seed"] == args.random_seed


def test_help_texts_say_the_real_defaults(tmp_path):
    result = cli("--help", cwd=tmp_path, timeout=60)
    text = " ".join(result.stdout.split())
    assert "by default runs/{env}_{agent}_{seed} (a new one if that exists)" in text and "exists) (default" not in text


@pytest.mark.parametrize("max_step", [50, 300])  # shorter and longer than Pendulum's registered 200
def test_max_step_is_the_time_limit_of_training_evaluation_and_worker_envs(max_step):
    from elegantrl.agent import AgentSAC
    from elegantrl.env import clone_env, env_recipe

    args = Arguments(agent=AgentSAC(), env="Pendulum-v1", max_step=max_step)
    args.check()
    for env in (args.env, clone_env(args.env), env_recipe(args.env)()):  # trained on, evaluated on, sent to workers
        env.reset(seed=0)
        steps, terminated, truncated = 0, False, False
        while not (terminated or truncated) and steps < 1000:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            steps += 1
        assert (steps, truncated, terminated, env.max_step) == (max_step, True, False, max_step)


def test_max_step_is_a_flag_and_must_be_positive(tmp_path):
    line = one_line_error(cli("--max-step", "0", "--break-step", "64", cwd=tmp_path))
    assert "--max-step must be a positive int" in line


def test_a_cwd_may_start_with_the_home_folder_or_be_a_path(tmp_path, monkeypatch):
    import pathlib

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    args = Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd="~/runs/a")
    args.init_before_training()
    assert args.cwd == str(tmp_path / "home" / "runs" / "a") and os.path.isdir(args.cwd) and not os.path.exists("~")
    args = Arguments(agent=AgentD3QN(), env="CartPole-v1", cwd=pathlib.Path("b"))
    args.init_before_training()
    assert args.cwd == "b" and os.path.isdir("b")


def test_resume_with_a_seed_of_none_goes_on_with_the_runs_seed_and_keeps_the_time_limit(tmp_path, capsys):
    fields = dict(agent=AgentD3QN(), env="CartPole-v1", cwd=str(tmp_path / "run"), warmup_steps=64, eval_times1=1,
                  eval_times2=0, max_step=100)
    train_and_evaluate(Arguments(random_seed=None, break_step=128, **fields))
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["max_step"] == 100
    with pytest.raises(ValueError, match="Arguments.max_step is 500, the run's 100"):
        Arguments(**{**fields, "max_step": None}, if_resume=True, break_step=256).init_before_training()
    capsys.readouterr()
    resumed = Arguments(**fields, random_seed=None, if_resume=True, break_step=256)
    train_and_evaluate(resumed)
    assert resumed.random_seed == config["random_seed"] and "goes on with its seed" in capsys.readouterr().out
    assert json.loads((tmp_path / "run" / "config.json").read_text()) == config


@pytest.mark.timeout(120)
def test_render_is_quiet_and_uses_the_runs_time_limit(tmp_path):
    run = tmp_path / "run"
    train_tiny_run(run)
    result = cli("--render", "run", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == "" and result.stdout == "wrote run/video.gif\n"
