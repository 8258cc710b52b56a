"""Trading a SYNTHETIC multi-stock market with SAC, and the test period against buy-and-hold.

    python examples/demo_stock_trading.py            # 50,000 training steps (a few minutes)
    python examples/demo_stock_trading.py --quick    # a smoke run

The market comes from elegantrl.env.make_synthetic_market: a documented random model, not
market data. Training uses the first 80% of its days; the plot shows the remaining 20%.
"""

import argparse
import os
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from elegantrl.agent import AgentSAC
from elegantrl.env import PreprocessEnv, StockTradingEnv
from elegantrl.run import Arguments, train_and_evaluate


def draw_cumulative_return(act: Any, env: StockTradingEnv, path: str) -> tuple[float, float]:
    """Plays `act` (a function of the state, e.g. ``agent.act``) over `env`'s period and draws its
    cumulative return against equal-weight buy-and-hold into the PNG `path`.

    Returns (the policy's return, buy-and-hold's return) over the period, as fractions.
    """
    state, _ = env.reset()
    assets, done = [env.total_assets()], False
    while not done:
        state, _, terminated, truncated, info = env.step(act(state))
        assets.append(info["total_assets"])
        done = terminated or truncated
    policy = np.array(assets) / assets[0] - 1.0
    hold = (env.prices[: len(assets)] / env.prices[0]).mean(axis=1) - 1.0
    figure = Figure(figsize=(8, 4.5))
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    ax.plot(policy * 100, label="policy")
    ax.plot(hold * 100, label="buy and hold (equal weights)")
    ax.set_xlabel("trading day")
    ax.set_ylabel("cumulative return (%)")
    ax.set_title("StockTradingEnv on a SYNTHETIC market")
    ax.grid(alpha=0.3)
    ax.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    return float(policy[-1]), float(hold[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()

    # no target: trading has no "solved"; evaluation runs the whole training period once
    args = Arguments(agent=AgentSAC(), env=PreprocessEnv(StockTradingEnv("train"), target_return=np.inf),
                     eval_env=PreprocessEnv(StockTradingEnv("train")), net_dim=64, break_step=50_000,
                     eval_gap=5_000, eval_times1=1, eval_times2=0)
    if options.quick:
        args.break_step, args.warmup_steps, args.eval_gap = 512, 128, 256
    agent = train_and_evaluate(args)

    path = os.path.join(args.cwd, "test_period.png")
    policy, hold = draw_cumulative_return(agent.act, StockTradingEnv("test"), path)
    print(f"test period (synthetic market): policy {policy:+.1%}, buy and hold {hold:+.1%}; plot in {path}")


if __name__ == "__main__":
    main()
