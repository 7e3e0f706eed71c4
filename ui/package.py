"""Package dist/extension-finops.js as the tarball argocd-extension-installer installs.

The installer (quay.io/argoprojlabs/argocd-extension-installer, an init container of
argocd-server) downloads ``EXTENSION_URL``, checks it against the line naming the file in
``EXTENSION_CHECKSUM_URL`` (``sha256sum`` format), unpacks it and copies ``resources/*`` into
``/tmp/extensions/resources/``; Argo CD then serves every ``extension*.js`` file under
``/tmp/extensions``. The script lives in a directory named like the file,
``resources/extension-finops.js/extension-finops.js``, because that is where the installer writes
the ``EXTENSION_JS_VARS`` file (``extension-0-FINOPS_vars.js``, loaded first: the gate
application's name, ``{"gate_app": "argocd:cost-gate"}``).

The archive is reproducible: sorted entries, owner 0, fixed modes and timestamps, and a gzip
header without a name or time, so the same script always gives the same checksum.

    python ui/package.py [--out ui/dist]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAME = "extension-finops"
SCRIPT = HERE / "dist" / f"{NAME}.js"
MTIME = 0


def _entry(name: str, *, directory: bool, size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
    info.mode = 0o755 if directory else 0o644
    info.size = size
    info.mtime = MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def build(out: Path, script: Path = SCRIPT) -> tuple[Path, Path]:
    """Write ``<out>/extension-finops.tar.gz`` and its ``.sha256`` file; return both paths."""
    data = script.read_bytes()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        tar.addfile(_entry("resources", directory=True))
        tar.addfile(_entry(f"resources/{NAME}.js", directory=True))
        tar.addfile(_entry(f"resources/{NAME}.js/{NAME}.js", directory=False, size=len(data)), io.BytesIO(data))
    out.mkdir(parents=True, exist_ok=True)
    tarball = out / f"{NAME}.tar.gz"
    with tarball.open("wb") as file, gzip.GzipFile(filename="", mode="wb", fileobj=file, mtime=MTIME) as gz:
        gz.write(raw.getvalue())
    checksum = out / f"{NAME}.tar.gz.sha256"
    checksum.write_text(f"{hashlib.sha256(tarball.read_bytes()).hexdigest()}  {tarball.name}\n")
    return tarball, checksum


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE / "dist", help="output directory (default ui/dist)")
    args = parser.parse_args(argv)
    if not SCRIPT.is_file():
        print(f"package.py: {SCRIPT} does not exist: run `make ui` first", file=sys.stderr)
        return 1
    for path in build(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
