"""``python -m sandbox.opencost --scenario FILE --port N``: run the sandbox in the foreground; it prints
the URL and serves until interrupted."""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
from pathlib import Path

from sandbox.opencost.scenario import ScenarioError, load_scenario
from sandbox.opencost.server import serve
from sandbox.opencost.synthetic import synthetic

DEMO = Path(__file__).resolve().parent.parent / "demo" / "scenario.yaml"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.opencost", description=__doc__)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--scenario", type=Path, default=DEMO, help=f"scenario YAML (default: {DEMO})")
    source.add_argument("--synthetic", type=int, metavar="CONTAINERS", help="generate a synthetic scenario instead")
    parser.add_argument(
        "--gpu-containers", type=int, default=0, metavar="N", help="with --synthetic: N of them on time-sliced GPUs"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9003, help="0 picks a free port (default: 9003, OpenCost's)")
    parser.add_argument("--log-requests", action="store_true", help="log each request to stderr")
    args = parser.parse_args(argv)
    try:
        if args.synthetic:
            scenario = synthetic(args.synthetic, gpu_containers=args.gpu_containers)
        else:
            scenario = load_scenario(args.scenario)
    except (ScenarioError, ValueError) as error:
        print(error, file=sys.stderr)
        return 2
    server = serve(scenario, host=args.host, port=args.port, log_requests=args.log_requests)
    print(f"OpenCost sandbox for cluster {scenario.cluster!r} at {server.url}", flush=True)
    with server, contextlib.suppress(KeyboardInterrupt):
        threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
