"""Tokens that may change while a process runs: a mounted Secret's file is re-read when the
kubelet replaces it, else the value read at cold start applies."""

from __future__ import annotations

import logging
import os
import threading

from infra import logs
from infra.settings.base import CommonSettings

log = logging.getLogger("finops.settings")

_secret_files: dict[str, tuple[tuple[int, int, int], str]] = {}
_secret_files_lock = threading.Lock()


def current_secret(settings: CommonSettings, name: str) -> str | None:
    """The current value of the token ``name``: the file ``SECRETS_DIR/name`` when there is one
    (re-read whenever its inode, size or mtime changes: the kubelet replaces a mounted Secret's
    files when the Secret changes), else the setting read at cold start."""
    if settings.SECRETS_DIR:
        path = os.path.join(settings.SECRETS_DIR, name)
        try:
            st = os.stat(path)  # follows the kubelet's ..data symlink swap
        except OSError:
            pass
        else:
            key = (st.st_ino, st.st_size, st.st_mtime_ns)
            with _secret_files_lock:
                cached = _secret_files.get(path)
                if cached is None or cached[0] != key:
                    with open(path, encoding="utf-8") as f:
                        value = f.read().strip()
                    logs.register_secret(value)
                    if cached is not None:
                        log.info("secret file changed; the new value applies", extra={"fields": {"key": name}})
                    _secret_files[path] = cached = (key, value)
            if cached[1]:  # an empty file (a key being rewritten) keeps the cold-start value
                return cached[1]
    reveal = getattr(getattr(settings, name, None), "get_secret_value", None)  # a SecretStr
    return reveal() if callable(reveal) else None
