"""Run the fake LLM server: `python -m fake_llm --port 0 --script FILE [--log FILE]`.

Prints the bound port on the first line of stdout, then serves until interrupted. The script
file is re-read on every request.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fake_llm.script import Script
from fake_llm.server import FakeLLM


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, print the port and serve."""
    parser = argparse.ArgumentParser(prog="python -m fake_llm", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--script", type=Path, help="JSON script; defaults apply without one")
    parser.add_argument("--log", type=Path, help="append every request as a JSON line")
    parser.add_argument("--verbose", action="store_true", help="log each request to stderr")
    args = parser.parse_args(argv)
    server = FakeLLM(
        args.script if args.script else Script(),
        port=args.port,
        log_path=args.log,
        verbose=args.verbose,
    )
    print(server.port, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
