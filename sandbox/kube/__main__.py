"""``python -m sandbox.kube --seed DIR [--scenario FILE] --port N``: the API server in the foreground.

The local stack runs it as a process next to the functions; the first line on stdout is the
URL to put in the functions' configuration, printed only once the socket is bound so a
supervisor can wait for it. ``--scenario`` adds the Kubernetes objects of an OpenCost sandbox
scenario as of start-up (``sandbox.cluster``), so pods match what that sandbox reports.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import threading
from pathlib import Path

from sandbox.cluster import cluster_objects
from sandbox.kube.seed import ManifestError
from sandbox.kube.server import serve
from sandbox.opencost.scenario import ScenarioError, load_scenario


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.kube", description=__doc__)
    parser.add_argument("--seed", type=Path, help="folder of YAML manifests to load at start")
    parser.add_argument("--scenario", type=Path, help="OpenCost sandbox scenario whose objects to add")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to bind; 0 picks a free one")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(message)s")
    try:
        objects = cluster_objects(load_scenario(args.scenario)) if args.scenario else None
        server = serve(seed_dir=args.seed, objects=objects, host=args.host, port=args.port)
    except (ManifestError, ScenarioError, OSError) as exc:
        print(f"sandbox.kube: {exc}", file=sys.stderr)
        return 2
    print(server.url, flush=True)
    with server, contextlib.suppress(KeyboardInterrupt):
        threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
