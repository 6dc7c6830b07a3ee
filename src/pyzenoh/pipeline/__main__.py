"""``python -m pyzenoh.pipeline RECORDING_DIR OUTPUT_DIR [--master URL]``.

Also the file to hand to ``spark-submit``: it only calls into the installed package, so
nothing Spark pickles lives in ``__main__``.
"""

from __future__ import annotations

import sys

from pyzenoh.pipeline.cli import main

if __name__ == "__main__":
    sys.exit(main())
