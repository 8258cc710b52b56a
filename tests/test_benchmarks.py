"""The benchmark's rows: matched-compute rows really match, and SB3's side runs the zoo's wrappers."""

import csv
import json
import os
import subprocess
import sys
import threading
import time
from typing import Callable

import pytest
from stable_baselines3.common.vec_env import VecNormalize

from benchmarks import __main__ as benchmarks_main
from benchmarks import runner, tune
from benchmarks.rows import ROOT, ROWS, dqn_matched_copy_gap, gradient_steps_per_env_step, sb3_settings
from benchmarks.runner import Job, train_sb3
from elegantrl import agent as agent_module
from elegantrl.run import Arguments, lr_decay_factor
from elegantrl.tuned import TUNED


def test_gradient_steps_per_env_step_reads_train_freq_and_gradient_steps():
    assert gradient_steps_per_env_step(dict(train_freq=256, gradient_steps=128)) == 0.5
    assert gradient_steps_per_env_step(dict(train_freq=4, gradient_steps=-1)) == 1.0  # as many as collected
    assert gradient_steps_per_env_step(dict(train_freq=(64, "step"), gradient_steps=64)) == 1.0
    with pytest.raises(ValueError, match="counts episodes"):
        gradient_steps_per_env_step(dict(train_freq=(1, "episode"), gradient_steps=-1))


def test_the_work_per_env_step_is_read_from_each_sides_settings():
    from benchmarks.report import work_per_env_step

    line = work_per_env_step(ROWS["sac-pendulum"], ROWS["sac-pendulum"].budget)
    assert line.startswith("SB3 SAC [256, 256] wide, batch 256, 1 gradient step per env step, 100 warm-up steps;"), line
    entry = TUNED["SAC", "Pendulum-v1"]  # what elegantrl runs there: the tuned entry over the family's defaults
    width, steps = entry["net_dim"], entry["repeat_times"] / agent_module.AgentSAC.arg_defaults["batch_size"]
    assert f"elegantrl AgentSAC [{width}, {width}] wide, batch 256, {steps:g} gradient step" in line, line
    line = work_per_env_step(ROWS["td3-pendulum"], ROWS["td3-pendulum"].budget)  # no entry: the family's defaults
    assert "elegantrl AgentTD3 [128, 128] wide, batch 256, 0.5 gradient steps per env step, 1,000 warm-up steps" in line, line


def test_sb3_settings_fill_the_class_defaults():
    settings = sb3_settings("SAC", dict(learning_rate=1e-3))
    assert settings["learning_rate"] == 1e-3
    assert (settings["batch_size"], settings["train_freq"], settings["gradient_steps"]) == (256, 1, 1)


@pytest.mark.parametrize("name", [name for name, row in ROWS.items() if row.matched])
def test_matched_rows_do_the_same_work_on_both_sides(name):
    """Width, batch, gradient steps per env step and warm-up as elegantrl's run takes them equal SB3's."""
    row = ROWS[name]
    settings = sb3_settings(row.sb3_algo, row.sb3_hyperparams(row.budget))
    (agent,) = row.agents
    args = Arguments(agent=getattr(agent_module, agent)(**row.agent_kwargs), env=row.env_id, **row.elegantrl_args)
    args.check()  # what the run takes, tuned entries included
    width = settings["policy_kwargs"]["net_arch"]
    assert width == [args.net_dim, args.net_dim]
    assert args.batch_size == settings["batch_size"]
    assert args.repeat_times / args.batch_size == gradient_steps_per_env_step(settings)
    assert args.warmup_steps == settings["learning_starts"]
    rate = settings["learning_rate"]  # a constant, or the zoo's lin_X: the same rate at every env step
    for step in (0, row.budget // 4, row.budget // 2, row.budget):
        sb3_rate = rate if isinstance(rate, float) else rate(1.0 - step / row.budget)
        ours = args.learning_rate * lr_decay_factor(step, args.lr_decay_steps)
        assert ours == pytest.approx(sb3_rate, abs=1e-12), (step, ours, sb3_rate)
    assert agent.removeprefix("Agent") == row.sb3_algo  # the same algorithm, not D3QN against DQN
    if "exploration_fraction" in settings:  # the DQN family: the target copied when SB3's is
        assert settings["tau"] == args.soft_update_tau == 1.0
        assert args.agent.target_update_gap == dqn_matched_copy_gap(settings) > 1
        assert args.agent.max_grad_norm == settings["max_grad_norm"]  # SB3's DQN clips at 10, sb3-contrib's QR-DQN does not
    else:  # SAC, TD3: the same Polyak rate, and TD3's targets move with its actor on both sides
        assert args.soft_update_tau == settings["tau"]
        assert args.agent.target_update_gap == (settings.get("policy_delay") or settings.get("target_update_interval") or 1)


def test_rows_as_users_run_them_take_elegantrl_built_in_settings():
    for name, row in ROWS.items():
        if not row.matched:
            assert not row.elegantrl_args and not row.agent_kwargs, f"{name} passes its own settings: put them in elegantrl/tuned.py"


@pytest.mark.timeout(300)
def test_sb3_side_applies_the_zoos_vecnormalize_and_evaluates_raw_returns(tmp_path, monkeypatch):
    """ppo-acrobot's zoo entry has normalize: true: SB3 trains under VecNormalize, and the evaluation
    feeds its policy normalised observations while it scores the env's raw returns."""
    normalised = []
    normalize_obs = VecNormalize.normalize_obs
    monkeypatch.setattr(VecNormalize, "normalize_obs", lambda self, obs: normalised.append(obs) or normalize_obs(self, obs))
    job = Job(row="ppo-acrobot", library="sb3", agent="PPO", seed=0, budget=4096, folder=str(tmp_path))
    model = train_sb3(job, ROWS["ppo-acrobot"])
    assert isinstance(model.get_vec_normalize_env(), VecNormalize)
    with open(os.path.join(tmp_path, "recorder.csv"), newline="") as file:
        records = list(csv.DictReader(file))
    assert records and int(records[-1]["step"]) >= 4096
    evaluation_steps = len(normalised) - 4096 // 16  # the training envs normalise once per vector step too
    assert evaluation_steps >= 10 * 63  # 10 episodes of Acrobot, each at least 63 steps long
    # Acrobot pays -1 a step for at most 500 steps; normalised rewards (about unit scale per step) would not sum to this
    assert all(-500.0 <= float(record["return_mean"]) <= -63.0 for record in records)


@pytest.mark.timeout(60)
def test_seeds_that_run_at_once_are_pinned_to_different_cores(tmp_path, monkeypatch):
    """With --jobs 2 each job's process is told a core of its own, and no two seeds running at once share one."""
    running, seen, lock, real_run = {}, [], threading.Lock(), subprocess.run

    def run(command, **kwargs):  # stands in for the child: what launch() passed it, then a crash
        if "--job" not in command:  # e.g. the report's git describe
            return real_run(command, **kwargs)
        job = json.loads(command[command.index("--job") + 1])
        with lock:
            assert job["core"] not in running.values(), f"seed {job['seed']} was given core {job['core']}, which another seed is using"
            running[job["seed"]] = job["core"]
            seen.append((job["seed"], job["core"]))
        time.sleep(0.02)
        with lock:
            del running[job["seed"]]
        return subprocess.CompletedProcess(command, 1)

    monkeypatch.setattr(runner.subprocess, "run", run)
    ok = runner.run_rows(["dqn-cartpole"], seeds=[0, 1, 2, 3], budget=None, out=str(tmp_path), work_dir=str(tmp_path / "runs"),
                         command="test", jobs=2)
    assert not ok  # every job "crashed"
    assert {core for _, core in seen} <= os.sched_getaffinity(0) and None not in {core for _, core in seen}
    for seed in range(4):  # each job, crashed or not, records the commit it ran, for --report-only
        for job in runner.seed_jobs("dqn-cartpole", seed, ROWS["dqn-cartpole"].budget, str(tmp_path / "runs")):
            assert runner.read_job_record(job) == {"returncode": 1, "commit": runner.source_commit()}
    for seed in range(4):  # all of a seed's jobs run on the one core it took
        assert len({core for s, core in seen if s == seed}) == 1


@pytest.mark.timeout(300)
def test_a_tuning_sweep_with_hold_trains_past_the_hit_and_reports_what_it_kept(tmp_path):
    """`benchmarks/tune.py --hold 2`: the run goes on to twice its first hit and the report counts the evaluations after it."""
    command = [sys.executable, os.path.join(ROOT, "benchmarks", "tune.py"), "--agent", "AgentDiscretePPO", "--env", "CartPole-v1",
               "--target", "100", "--budget", "20000", "--seeds", "100", "--hold", "2", "--candidate", "defaults", "{}",
               "--out", str(tmp_path), "--work-dir", str(tmp_path / "runs")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-2000:]
    with open(tmp_path / "runs" / "AgentDiscretePPO-CartPole-v1" / "defaults-seed100" / "recorder.csv", newline="") as file:
        records = [(float(r["step"]), float(r["return_mean"])) for r in csv.DictReader(file)]
    hit = next((step for step, value in records if value >= 100), None)
    assert hit is not None, f"the run never reached 100: {records}"
    later = [value for step, value in records if step > hit]
    assert records[-1][0] >= 2 * hit and later
    report = (tmp_path / "tune-discreteppo-cartpole-v1.md").read_text()
    held = sum(value >= 100 for value in later)
    assert "held after the hit" in report and f"({held}/{len(later)})" in report


def test_a_learning_curve_stops_where_its_longest_run_stopped():
    import numpy as np

    from benchmarks.report import curve_band

    # (env step, seconds, return): one run ends at 4,000, the other at 6,000; the grid runs on to 10,000
    runs = [[(2000, 1.0, -300.0), (4000, 2.0, -100.0)], [(2000, 1.0, -500.0), (4000, 2.0, -300.0), (6000, 3.0, -200.0)]]
    steps, low, middle, high = curve_band(runs, np.linspace(0, 10_000, 11))
    assert steps.tolist() == [0, 1000, 2000, 3000, 4000, 5000, 6000]  # not the steps neither run trained
    assert np.isnan(middle[0]) and middle[2] == -400.0 and middle[-1] == -150.0  # the shorter run counts at its final -100
    assert low[-1] <= middle[-1] <= high[-1]


@pytest.mark.parametrize("interval, train_freq, gradient_steps", [(10, 256, 128), (250, 4, -1), (1, 256, -1), (512, 256, 64)])
def test_a_matched_dqn_target_is_copied_as_often_as_sb3s(interval, train_freq, gradient_steps):
    """SB3's schedule played out step by step: the gradient steps between two copies of its target are elegantrl's gap."""
    settings = dict(target_update_interval=interval, train_freq=train_freq, gradient_steps=gradient_steps, tau=1.0)
    copies, done = [], 0  # the gradient steps done at each copy that changes the target
    for env_step in range(1, 200_001):
        if env_step % interval == 0 and done and (not copies or copies[-1] != done):  # SB3's _on_step, while it collects
            copies.append(done)
        if env_step % train_freq == 0:  # then a burst of gradient steps
            done += train_freq if gradient_steps == -1 else gradient_steps
    between = [b - a for a, b in zip(copies, copies[1:])]
    gap = dqn_matched_copy_gap(settings)
    if interval <= train_freq or interval % train_freq == 0:
        assert set(between) == {gap}
    else:  # an interval that is no multiple of train_freq: the copies fall a burst early or late, and on average every gap
        burst = train_freq if gradient_steps == -1 else gradient_steps
        assert all(abs(b - gap) <= burst for b in between)
        assert sum(between) / len(between) == pytest.approx(gap, abs=0.1)


@pytest.mark.parametrize("interval, train_freq, tau", [(300, 256, 1.0), (10, 256, 0.1)])
def test_a_dqn_target_schedule_that_matched_rows_do_not_model_is_refused(interval, train_freq, tau):
    with pytest.raises(ValueError, match="matched rows model SB3's DQN target as a copy"):
        dqn_matched_copy_gap(dict(target_update_interval=interval, train_freq=train_freq, gradient_steps=-1, tau=tau))


def test_the_sweep_variants_differ_from_their_base_in_one_thing():
    """benchmarks/variants.py: each variant is its base with one difference, so a sweep of it measures that difference."""
    import torch

    from benchmarks.variants import AgentDiscretePPOUniformStart, AgentPPOLayerStart, agent_class
    from elegantrl.tuned import tuned_entry

    torch.manual_seed(0)
    current = agent_module.AgentPPO.ClassAct(32, 8, 2)
    torch.manual_seed(0)
    earlier = AgentPPOLayerStart.ClassAct(32, 8, 2)
    # the same layers from the same random stream; the current start scales the mean layer by 0.01 and zeroes its bias
    last = f"{len(earlier.net) - 1}."
    for name, param in earlier.net.named_parameters():
        expected = current.net.state_dict()[name] * (100 if name == last + "weight" else 1)
        if name != last + "bias":
            assert torch.allclose(param, expected, atol=1e-5), name
    assert earlier.net[-1].bias.abs().sum() > 0 and current.net[-1].bias.abs().sum() == 0
    assert torch.allclose(earlier.log_std.exp(), torch.full((2,), 0.6065), atol=1e-4) and current.log_std.exp().eq(1).all()

    uniform = AgentDiscretePPOUniformStart.ClassAct(32, 4, 3)(torch.randn(64, 4)).softmax(dim=1)
    assert torch.allclose(uniform, torch.full_like(uniform, 1 / 3), atol=0.01)
    assert tuned_entry(AgentPPOLayerStart(), "LunarLanderContinuous-v3") == tuned_entry(agent_module.AgentPPO(), "LunarLanderContinuous-v3")

    from benchmarks.variants import AgentSACActorGap2
    from elegantrl.replay import ReplayBuffer, Transitions

    buffer = ReplayBuffer(256, 3, 1, False)
    buffer.extend(Transitions(torch.randn(64, 1, 3), torch.rand(64, 1, 1) * 2 - 1, torch.randn(64, 1),
                              torch.zeros(64, 1, dtype=torch.bool), torch.zeros(64, 1, dtype=torch.bool), torch.randn(64, 1, 3)))
    for cls, actor_steps in ((agent_module.AgentSAC, 4), (AgentSACActorGap2, 2)):  # the one difference: the actor's cadence
        agent = cls()
        agent.init(8, 3, 1)
        for _ in range(4):
            agent.update_step(buffer)
        adam_steps = [int(state["step"]) for state in agent.actor_optimizer.state.values()]
        assert agent.update_count == 4 and set(adam_steps) == {actor_steps}, (cls, adam_steps)
        assert [int(state["step"]) for state in agent.alpha_optimizer.state.values()] == [actor_steps]
    assert agent_class("AgentSAC") is agent_module.AgentSAC and agent_class("AgentPPOLayerStart") is AgentPPOLayerStart
    with pytest.raises(ValueError, match="AgentPPOLayerStart"):
        agent_class("AgentPPOOldStart")


TUNE = [sys.executable, os.path.join(ROOT, "benchmarks", "tune.py"), "--agent", "AgentD3QN", "--env", "CartPole-v1", "--target", "475",
        "--budget", "300", "--seeds", "100"]  # a flag given again below takes the later value


def refused(tmp_path, command: list[str]) -> str:
    """Runs a benchmark command line with --out and --work-dir under `tmp_path`; asserts exit 2 with nothing written; its last line."""
    out, work = tmp_path / "out", tmp_path / "work"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([*command, "--out", str(out), "--work-dir", str(work)], capture_output=True, text=True, timeout=120,
                          env=env, cwd=ROOT)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert not out.exists() and not work.exists()  # refused before any job ran or any report was written
    return done.stderr.strip().splitlines()[-1]


def refused_here(tmp_path, capsys, monkeypatch, main: Callable[[], int], flags: list[str]) -> str:
    """`refused`, with the command's `main` called in this process (its checks are the same; only the start-up
    of the interpreter is saved): exit status 2, nothing written; the last line of what it printed."""
    out, work = tmp_path / "out", tmp_path / "work"
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "argv", ["benchmark", *flags, "--out", str(out), "--work-dir", str(work)])
    with pytest.raises(SystemExit) as exit_info:
        main()
    captured = capsys.readouterr()
    assert exit_info.value.code == 2, captured.out[-2000:] + captured.err[-2000:]
    assert not out.exists() and not work.exists()  # refused before any job ran or any report was written
    return captured.err.strip().splitlines()[-1]


@pytest.mark.timeout(150)
def test_the_command_lines_refuse_bad_values_with_exit_status_2(tmp_path):
    """The entry points themselves, once each: the checks behind them are tested in this process below."""
    assert "must be a whole number of 1 or more" in refused(tmp_path, [sys.executable, "-m", "benchmarks", "--rows", "dqn-cartpole",
                                                                        "--budget", "0"])
    assert "is not JSON" in refused(tmp_path, [*TUNE, "--candidate", "a", "{bad"])


@pytest.mark.parametrize("flags, message", [
    (["--rows", "dqn-cartpole", "--budget", "0"], "argument --budget: must be a whole number of 1 or more, got '0'"),  # was: the full row
    (["--rows", "dqn-cartpole", "--budget", "-5"], "argument --budget: must be a whole number of 1 or more"),  # was: an all-error report
    (["--rows", "dqn-cartpole", "--seeds", "-1"], "argument --seeds: a seed is a whole number from 0 to 2**32 - 1, got '-1'"),
    (["--rows", "dqn-cartpole", "--seeds", "0", "0"], "--seeds names [0] more than once"),  # was: seed 0 counted twice
    (["--rows", "sac-throughput", "--repeats", "0"], "argument --repeats: must be a whole number of 1 or more"),  # was: IndexError
    (["--report-only"], "--report-only rebuilds reports from the jobs' run folders, and sac-throughput, env-throughput are timings"),
    (["--report-only", "--rows", "dqn-cartpole", "env-throughput"], "env-throughput are timings with none"),
])
@pytest.mark.timeout(60)  # a check that no longer refuses would run the jobs in this process
def test_the_benchmark_refuses_bad_values_before_it_runs_anything(tmp_path, capsys, monkeypatch, flags, message):
    assert message in refused_here(tmp_path, capsys, monkeypatch, benchmarks_main.main, flags)


@pytest.mark.timeout(150)
def test_a_smoke_test_or_a_users_folder_is_refused_before_anything_trains(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, *filter(None, [os.environ.get("PYTHONPATH")])])}
    report = os.path.join(ROOT, "benchmarks", "results", "dqn-cartpole.md")
    before = os.stat(report).st_mtime_ns
    done = subprocess.run([sys.executable, "-m", "benchmarks", "--rows", "dqn-cartpole", "--seeds", "0", "--budget", "100",
                           "--work-dir", str(tmp_path / "work")], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert done.returncode == 2 and "give --out" in done.stderr and os.stat(report).st_mtime_ns == before  # the committed report stays
    mine = tmp_path / "work" / "dqn-cartpole" / "elegantrl-AgentD3QN-seed0"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("mine")
    done = subprocess.run([sys.executable, "-m", "benchmarks", "--rows", "dqn-cartpole", "--seeds", "0", "--out", str(tmp_path / "out"),
                           "--work-dir", str(tmp_path / "work")], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert done.returncode == 2 and "notes.txt" in done.stderr and (mine / "notes.txt").exists()
    assert sorted(os.listdir(tmp_path / "work" / "dqn-cartpole")) == ["elegantrl-AgentD3QN-seed0"]  # no job ran before the refusal


@pytest.mark.parametrize("flags, message", [
    (["--candidate", "a", "{bad"], "--candidate a: '{bad' is not JSON"),  # was: a JSONDecodeError traceback
    (["--candidate", "a", "[1]"], "--candidate a: the settings are a JSON object"),  # was: an AttributeError traceback
    (["--candidate", "a", "{}", "--jobs", "0"], "argument --jobs: must be a whole number of 1 or more"),  # was: a ValueError traceback
    (["--candidate", "a", "{}", "--candidate", "a", '{"net_dim": 16}'], "--candidate a is named twice"),  # was: the first dropped
    (["--candidate", "a", '{"net_dimm": 3}'], "Arguments has no field 'net_dimm'; did you mean 'net_dim'?"),  # was: an error per job
    (["--candidate", "a", '{"agent_kwargs": {"foo": 1}}'], "AgentD3QN got an unexpected setting 'foo': it takes explore_rate"),
    (["--candidate", "a", "{}", "--seeds", "100", "100"], "--seeds names [100] more than once"),
    (["--candidate", "a", "{}", "--eval-gap", "0"], "argument --eval-gap: must be a whole number of 1 or more"),
    (["--candidate", "a", "{}", "--env", "CartPol-v1"], "unknown or outdated env id 'CartPol-v1'"),
    (["--candidate", "a", "{}", "--env", "Pendulum-v1"], "AgentD3QN needs a discrete action space"),
    (["--candidate", "a", "{}", "--target", "nan"], "argument --target: must be a finite number, got 'nan'"),
    (["--candidate", "a", "{}", "--budget", "0"], "argument --budget: must be a whole number of 1 or more"),
    (["--candidate", "a", "{}", "--agent", "AgentD3QNN"], "elegantrl.agent has AgentDQN, "),  # was: only the variants
    (["--candidate", "a", "{}", "--agent", "AgentBase"], "no agent class 'AgentBase'"),  # a family base: not an agent to train
    (["--candidate", "a", '{"tuned_settings": [1]}'], "'tuned_settings' is set by the run itself"),
])
@pytest.mark.timeout(60)
def test_a_sweep_refuses_bad_arguments_and_candidates_before_it_trains(tmp_path, capsys, monkeypatch, flags, message):
    assert message in refused_here(tmp_path, capsys, monkeypatch, tune.main, [*TUNE[2:], *flags])


@pytest.mark.parametrize("script, flags", [("workers.py", ["--seeds", "0", "0"]), ("workers.py", ["--budget", "0"]),
                                           ("learners.py", ["--seeds", "-1"]), ("learners.py", ["--budget", "-3"]),
                                           ("muzero.py", ["--seeds", "1", "1"]), ("gpu_check.py", ["--repeats", "0"])])
def test_the_other_benchmark_scripts_refuse_bad_values_before_they_run(tmp_path, script, flags):
    done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", script), *flags], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and ("more than once" in done.stderr or "must be a whole number" in done.stderr
                                     or "a seed is a whole number" in done.stderr), done.stderr[-500:]
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG and /proc are Linux's; elsewhere a job is not tied to its runner")
@pytest.mark.timeout(60)
def test_a_job_ends_when_its_runner_is_killed():
    # SIGKILL gives the runner no chance to stop its jobs; without this they trained on, unseen, for hours
    runner_code = ("import subprocess, sys\n"
                   "from benchmarks.cli import job_environment\n"
                   "job = subprocess.Popen([sys.executable, '-c', 'from benchmarks.cli import end_with_runner; end_with_runner(); "
                   "print(flush=True); import time; time.sleep(50)'], env=job_environment(), stdout=subprocess.PIPE, text=True)\n"
                   "job.stdout.readline()\n"
                   "print(job.pid, flush=True)\n"
                   "job.wait()\n")
    runner = subprocess.Popen([sys.executable, "-c", runner_code], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": ROOT})
    job = int(runner.stdout.readline())
    runner.kill()
    runner.wait(timeout=10)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{job}/status") as file:
                if "State:\tZ" in file.read():  # ended; only its reaping is left, to whoever inherited it
                    break
        except FileNotFoundError:
            break
        time.sleep(0.1)
    else:
        os.kill(job, 9)  # still our job: it is alive, so its pid was not reused
        pytest.fail("the job outlived its runner")


def test_a_job_folder_is_emptied_only_of_what_jobs_write(tmp_path):
    job = tmp_path / "dqn-cartpole" / "sb3-DQN-seed0"
    runner.fresh_job_folder(str(job))  # made
    (job / "recorder.csv").write_text("step\n")
    (job / "job.json").write_text("{}")
    runner.fresh_job_folder(str(job))  # an earlier job's files go
    assert os.listdir(job) == []
    (job / "notes.txt").write_text("mine")  # a --work-dir that holds a folder of the user's by that name
    (job / "recorder.csv").write_text("step\n")
    with pytest.raises(FileExistsError, match="nothing was deleted"):
        runner.fresh_job_folder(str(job))
    assert sorted(os.listdir(job)) == ["notes.txt", "recorder.csv"]


def test_a_report_is_rebuilt_only_from_jobs_that_ran_at_this_commit(tmp_path, capsys):
    """--report-only names this checkout's commit and describes the runs with its row settings, so it refuses jobs
    that ran at another commit, or that did not record theirs, and writes nothing for them."""
    work, out = tmp_path / "runs", tmp_path / "out"
    jobs = runner.seed_jobs("dqn-cartpole", 0, ROWS["dqn-cartpole"].budget, str(work))
    for job in jobs:  # finished jobs: their last evaluation at the budget
        runner.fresh_job_folder(job.folder)
        with open(os.path.join(job.folder, "recorder.csv"), "w") as file:
            file.write(f"step,seconds,return_mean\n{job.budget},1.0,20.0\n")
        runner.write_job_record(job, runner.source_commit(), returncode=0)
    assert runner.report_rows(["dqn-cartpole"], [0], None, str(out), str(work), "test")
    assert f"elegantrl at git {runner.source_commit()}" in (out / "dqn-cartpole.md").read_text()
    os.remove(out / "dqn-cartpole.md")
    with open(os.path.join(jobs[1].folder, "job.json"), "w") as file:
        json.dump({"returncode": 0, "commit": "0123abc"}, file)
    os.remove(os.path.join(jobs[2].folder, "job.json"))
    assert not runner.report_rows(["dqn-cartpole"], [0], None, str(out), str(work), "test")
    message = capsys.readouterr().err
    assert "0123abc" in message and "an unrecorded commit" in message and "git worktree add --detach" in message
    assert not (out / "dqn-cartpole.md").exists()


def test_a_row_torn_by_a_kill_is_left_out_of_a_jobs_summary(tmp_path):
    """A job stopped mid-write leaves a last line without its end: --report-only reads the rows before it, and
    does not take the cut "-15" of "-150.5" for a return, nor stop at a row that is not numbers, a torn row with
    the next appended to it, or a row short of a cell."""
    job = Job("td3-pendulum", "elegantrl", "AgentTD3", 0, 30_000, str(tmp_path))
    (tmp_path / "recorder.csv").write_text("step,seconds,return_mean,obj_actor\r\n1000,1.0,-900.0,\r\n"
                                           "2000,2.0,-250.0,0.5\r\n\x00\x00,2.5,oops\r\n2500,2.5,-15000,2.6,-180.0,\r\n2600,2.6,-10\r\n3000,3.0,-15")
    result = runner.summarise(job, -200.0, True)
    assert result["evaluations"] == 2 and result["status"] == "failed"
    assert result["best_return"] == -250.0 and result["final_return"] == -250.0 and result["steps"] == 2000
