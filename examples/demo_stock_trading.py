"""Trading a SYNTHETIC multi-stock market with SAC, and the test period against buy-and-hold.

    python examples/demo_stock_trading.py            # 50,000 training steps (a few minutes)
    python examples/demo_stock_trading.py --quick    # a smoke run

The market comes from elegantrl.env.make_synthetic_market: a documented random model, not
market data. Training uses the first 80% of its days; the plot shows the remaining 20%.
"""

import argparse
import os

import numpy as np

from elegantrl.agent import AgentSAC
from elegantrl.env import PreprocessEnv, StockTradingEnv, draw_cumulative_return
from elegantrl.run import Arguments, train_and_evaluate

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
