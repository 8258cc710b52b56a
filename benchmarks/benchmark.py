"""The benchmark's former entry point: ``python benchmarks/benchmark.py ARGS`` is ``python -m benchmarks ARGS``.

Kept so that the commands printed in earlier reports still run; the code is the `benchmarks` package.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository, for `import benchmarks`

from benchmarks.__main__ import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
