"""We test these aspects of rotating a token without a new revision, against a served function:

- with ``SECRETS_DIR`` (the Secret mounted as files), the token in the file is the one checked,
  not the environment's copy from the cold start;
- replacing the file as the kubelet does (a new file renamed over the old) makes the warm process
  accept the new token and refuse the old one at the next request;
- an empty file keeps the cold-start value rather than accepting an empty token.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sandbox.localstack import Stack, serve_function


def _replace(directory: Path, key: str, value: str) -> None:
    staged = directory / f".{key}.new"
    staged.write_text(value)
    os.replace(staged, directory / key)


@pytest.fixture
def secrets_dir(tmp_path: Path) -> Path:
    _replace(tmp_path, "WEBHOOK_TOKEN", "hook-file-old")
    return tmp_path


@pytest.fixture
def rotating_on_sync(stack: Stack, secrets_dir: Path) -> Iterator[str]:
    with serve_function(stack, "on_sync", WEBHOOK_TOKEN="hook-env-cold", SECRETS_DIR=str(secrets_dir)) as url:
        yield url


def _status(url: str, token: str) -> int:
    # an invalid webhook body: 400 once authenticated, 401 before; no database work either way
    return httpx.post(url, json={"app": 1}, headers={"Authorization": f"Bearer {token}"}, timeout=10).status_code


def test_a_rotated_token_file_applies_to_the_warm_process(rotating_on_sync: str, secrets_dir: Path) -> None:
    assert _status(rotating_on_sync, "hook-file-old") == 400
    assert _status(rotating_on_sync, "hook-env-cold") == 401
    _replace(secrets_dir, "WEBHOOK_TOKEN", "hook-file-new")
    assert _status(rotating_on_sync, "hook-file-new") == 400
    assert _status(rotating_on_sync, "hook-file-old") == 401
    _replace(secrets_dir, "WEBHOOK_TOKEN", "")
    assert _status(rotating_on_sync, "hook-env-cold") == 400
    assert httpx.post(rotating_on_sync, json={"app": 1}).status_code == 401
