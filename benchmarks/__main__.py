"""The command line: ``python -m benchmarks --suite quick`` (see benchmarks/README.md)."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shlex
import sys

from benchmarks.cli import check_distinct_seeds, positive_int, random_seed
from benchmarks.index import write_index
from benchmarks.rows import HERE, QUICK_SUITE, ROWS
from benchmarks.runner import Job, job_folder_files, report_rows, run_job, run_rows, seed_jobs
from benchmarks.throughput import THROUGHPUT_ROWS


def main() -> int:
    """The command line: run the chosen rows, or (internally) one training job."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description="Benchmark elegantrl against Stable-Baselines3, side by side.")
    every_row = [*ROWS, *THROUGHPUT_ROWS]
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--rows", nargs="+", choices=every_row, help="rows to run (default: all)")
    which.add_argument("--suite", choices=["quick", "full"],
                       help=f"quick: {', '.join(QUICK_SUITE)} (hours a seed on 2 cores); full: every row and both throughput measurements")
    parser.add_argument("--seeds", nargs="+", type=random_seed, default=[0, 1, 2], help="seeds (default: 0 1 2)")
    parser.add_argument("--budget", type=positive_int, default=None, help="env steps per run, overriding each row's budget (for smoke tests)")
    parser.add_argument("--out", default=os.path.join(HERE, "results"), help="where the .md and .csv reports go (default: benchmarks/results)")
    parser.add_argument("--work-dir", default=os.path.join(HERE, "runs"), help="run folders of the jobs (default: benchmarks/runs, git-ignored)")
    parser.add_argument("--repeats", type=positive_int, default=30,
                        help="timings per library and case in sac-throughput and env-throughput (default: 30)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="(row, seed) pairs trained at once, each job single-threaded and pinned to its own core (default: 1; at most nproc)")
    parser.add_argument("--report-only", action="store_true",
                        help="train nothing: rewrite the rows' reports from the finished jobs in --work-dir (after a run was stopped)")
    parser.add_argument("--index", action="store_true",
                        help="train nothing: rebuild docs/benchmarks.md from the committed results (done after every run into benchmarks/results)")
    parser.add_argument("--note", default="",
                        help="a sentence for the reports' Note line: how the run departed from the protocol")
    parser.add_argument("--job", help=argparse.SUPPRESS)  # internal: the JSON of one Job, run in this process
    options = parser.parse_args()
    if options.job:
        run_job(Job(**json.loads(options.job)))
        return 0
    if options.index:
        print(write_index())
        return 0
    command = "python -m benchmarks " + shlex.join(sys.argv[1:])
    options.rows = options.rows or (list(QUICK_SUITE) if options.suite == "quick" else every_row)
    if not 1 <= options.jobs <= len(os.sched_getaffinity(0)):
        parser.error(f"--jobs must be between 1 and the number of CPUs ({len(os.sched_getaffinity(0))}), got {options.jobs}: "
                     "each job is a single-threaded process that needs a core of its own")
    check_distinct_seeds(parser, options.seeds)
    if options.budget is not None and os.path.abspath(options.out) == os.path.join(HERE, "results"):
        parser.error("--budget makes a smoke test, whose reports are not the rows': give --out (e.g. --out /tmp/smoke), "
                     "so that benchmarks/results keeps the committed ones")
    if os.path.exists(options.out) and not os.path.isdir(options.out):
        parser.error(f"--out {options.out} is a file: give a folder for the reports")
    timings = [name for name in options.rows if name in THROUGHPUT_ROWS]
    if options.report_only and timings:  # they have no run folders to report from: --report-only would time them for real
        parser.error(f"--report-only rebuilds reports from the jobs' run folders, and {', '.join(timings)} are timings with none: "
                     "name the training rows with --rows (or --suite quick)")
    training = [name for name in options.rows if name in ROWS]
    if not options.report_only:  # a folder that is not a job's is refused now, not after hours of the jobs before it
        for name, seed in itertools.product(training, options.seeds):
            for job in seed_jobs(name, seed, options.budget or ROWS[name].budget, options.work_dir):
                try:
                    job_folder_files(job.folder)
                except FileExistsError as error:
                    parser.error(str(error))
    write = report_rows if options.report_only else run_rows
    ok = write(training, options.seeds, options.budget, options.out, options.work_dir, command, options.jobs, options.note) if training else True
    for name in timings:  # timings last, so that no training job runs beside them
        ok = THROUGHPUT_ROWS[name](options.out, command, options.repeats, note=options.note) and ok
    if os.path.abspath(options.out) == os.path.join(HERE, "results"):  # not for a smoke test's --out
        print(f"rebuilt {write_index()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
