"""Every example runs in its quick mode, as a user would start it."""

import os
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")


@pytest.mark.parametrize("script", ["demo_DQN_variants.py", "demo_off_policy_continuous.py", "demo_on_policy.py",
                                    "demo_custom_env.py", "demo_BipedalWalker.py",
                                    "demo_BipedalWalker.py --rollout-num 2"])
def test_example_runs_in_quick_mode(script, tmp_path):
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, *script.split()[:1]), *script.split()[1:], "--quick"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "best evaluation return" in result.stdout
    assert any((tmp_path / "runs").glob("*/actor.pth"))


def test_the_stock_trading_demo_trains_and_draws_the_test_period(tmp_path):
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, "demo_stock_trading.py"), "--quick"], capture_output=True,
                            text=True, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert any((tmp_path / "runs").glob("*/actor.pth")) and "best evaluation return" in result.stdout
    assert "buy and hold" in result.stdout and os.path.getsize(next((tmp_path / "runs").glob("*/test_period.png"))) > 10_000
