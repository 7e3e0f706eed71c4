"""We test these aspects of the object store adapter (``infra.objectstore``), against local files
and moto's S3 server over HTTP (dummy credentials, never real AWS):

- bytes written are read back unchanged, locally (atomically, readable by others) and on S3 (with
  their content type);
- a target ending in ``/`` (or an existing local directory) is a folder: the caller names the file;
- botocore's errors become ours, naming the URL: no such key or bucket -> ``NotFound``; access
  denied -> ``PermanentError``; refused credentials -> ``Unauthorized``; an unreachable endpoint,
  throttling and 5xx -> ``ObjectStoreUnavailable`` (a ``TemporaryError``);
- a file streamed through ``writer`` appears whole or not at all: an error inside the block
  leaves the old file (local) or no object (S3), and no temporary file;
- importing the adapter (and the report modules using it) does not import boto3, nor the exports
  pyarrow: cold start.
"""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from finops.errors import InvalidInput, NotFound, PermanentError, TemporaryError, Unauthorized
from infra.objectstore import ObjectStore, ObjectStoreUnavailable, parse_s3_url, resolve_target
from tests.net import refused_port

BUCKET = "exports"


@pytest.fixture(scope="module")
def s3_endpoint(moto_s3: str) -> str:
    """The session's moto S3 server, with this module's bucket."""
    endpoint = moto_s3
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=BUCKET)
    return endpoint


def test_local_files(tmp_path: Path) -> None:
    store = ObjectStore()
    target = tmp_path / "out.csv"
    assert store.write_bytes(str(target), b"a,b\n1,2\n", "text/csv") == str(target)
    assert store.read_bytes(str(target)) == b"a,b\n1,2\n"
    store.write_bytes(str(target), b"replaced\n")
    assert store.read_bytes(f"file://{target}") == b"replaced\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]  # no temporary file left behind
    with pytest.raises(NotFound, match="no such file"):
        store.read_bytes(str(tmp_path / "missing.csv"))
    with pytest.raises(NotFound, match="does not exist"):
        store.write_bytes(str(tmp_path / "no" / "such" / "folder.csv"), b"")
    with pytest.raises(InvalidInput, match="is a directory"):
        store.read_bytes(str(tmp_path))


def test_s3_objects(s3_endpoint: str) -> None:
    store = ObjectStore(endpoint_url=s3_endpoint)
    url = f"s3://{BUCKET}/reports/2026-10/out.csv"
    assert store.write_bytes(url, b"a,b\n", "text/csv; charset=utf-8") == url
    assert store.read_bytes(url) == b"a,b\n"
    head = boto3.client("s3", endpoint_url=s3_endpoint).head_object(Bucket=BUCKET, Key="reports/2026-10/out.csv")
    assert head["ContentType"] == "text/csv; charset=utf-8"
    with pytest.raises(NotFound, match=rf"^s3://{BUCKET}/reports/missing.csv: no such object$"):
        store.read_bytes(f"s3://{BUCKET}/reports/missing.csv")
    with pytest.raises(NotFound, match=r"^s3://no-such-bucket/x.csv: no such bucket$"):
        store.read_bytes("s3://no-such-bucket/x.csv")
    with pytest.raises(NotFound, match="no such bucket"):
        store.write_bytes("s3://no-such-bucket/x.csv", b"")


class Interrupted(Exception):
    pass


def test_a_streamed_file_appears_whole_or_not_at_all(tmp_path: Path, s3_endpoint: str) -> None:
    store = ObjectStore(endpoint_url=s3_endpoint)
    target = tmp_path / "focus.parquet"
    store.write_bytes(str(target), b"the old file")
    for url in (str(target), f"s3://{BUCKET}/streamed/focus.parquet"):
        with pytest.raises(Interrupted), store.writer(url, "application/vnd.apache.parquet") as out:
            out.write(b"half of a ")
            raise Interrupted
    assert target.read_bytes() == b"the old file"
    assert [p.name for p in tmp_path.iterdir()] == ["focus.parquet"]  # no temporary file left behind
    with pytest.raises(NotFound):
        store.read_bytes(f"s3://{BUCKET}/streamed/focus.parquet")
    with store.writer(f"s3://{BUCKET}/streamed/focus.parquet", "application/vnd.apache.parquet") as out:
        for _ in range(3):
            out.write(b"row group ")
    assert store.read_bytes(f"s3://{BUCKET}/streamed/focus.parquet") == b"row group " * 3
    head = boto3.client("s3", endpoint_url=s3_endpoint).head_object(Bucket=BUCKET, Key="streamed/focus.parquet")
    assert head["ContentType"] == "application/vnd.apache.parquet"


def test_folders_and_urls(tmp_path: Path) -> None:
    assert resolve_target("s3://b/exports/", "focus-all-2026-10.csv") == "s3://b/exports/focus-all-2026-10.csv"
    assert resolve_target("s3://b/exports/f.csv", "ignored.csv") == "s3://b/exports/f.csv"
    assert resolve_target(str(tmp_path), "f.csv") == str(tmp_path / "f.csv")
    assert resolve_target(f"{tmp_path}/new/", "f.csv") == f"{tmp_path}/new/f.csv"
    assert resolve_target(str(tmp_path / "g.csv"), "f.csv") == str(tmp_path / "g.csv")
    assert parse_s3_url("s3://b/a/b/c.csv") == parse_s3_url("s3://b/a/b/c.csv")
    assert (parse_s3_url("s3://b/a/c.csv").bucket, parse_s3_url("s3://b/a/c.csv").key) == ("b", "a/c.csv")
    for bad in ("s3://", "s3://bucket", "s3://bucket/", "s3:///key"):
        with pytest.raises(InvalidInput, match="an S3 URL is s3://bucket/key"):
            ObjectStore().read_bytes(bad)
    with pytest.raises(InvalidInput, match="names a folder"):
        ObjectStore().write_bytes("s3://bucket/prefix/", b"")


def test_an_unreachable_endpoint_is_temporary(s3_endpoint: str) -> None:
    with (
        refused_port() as port,
        pytest.raises(ObjectStoreUnavailable, match=r"^s3://b/k.csv: the object store is unavailable") as caught,
    ):
        ObjectStore(endpoint_url=f"http://127.0.0.1:{port}", timeout=2, attempts=1).read_bytes("s3://b/k.csv")
    assert isinstance(caught.value, TemporaryError)
    with pytest.raises(InvalidInput, match="S3 endpoint"):
        ObjectStore(endpoint_url="not a url").read_bytes("s3://b/k.csv")


def test_missing_credentials(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(Unauthorized, match="no AWS credentials found"):
        ObjectStore(endpoint_url=s3_endpoint).read_bytes(f"s3://{BUCKET}/x.csv")


class RefusingClient:
    """An S3 client answering every call with one error, as botocore raises it."""

    def __init__(self, code: str, status: int) -> None:
        self.error = ClientError(
            {"Error": {"Code": code, "Message": f"{code} message"}, "ResponseMetadata": {"HTTPStatusCode": status}},
            "GetObject",
        )

    def get_object(self, **_: Any) -> Any:
        raise self.error

    def put_object(self, **_: Any) -> Any:
        raise self.error


@pytest.mark.parametrize(
    ("code", "status", "error", "message"),
    [
        ("AccessDenied", 403, PermanentError, "access denied"),
        ("AllAccessDisabled", 403, PermanentError, "access denied"),
        ("InvalidAccessKeyId", 403, Unauthorized, "credentials were refused"),
        ("SignatureDoesNotMatch", 403, Unauthorized, "credentials were refused"),
        ("NoSuchKey", 404, NotFound, "no such object"),
        ("SlowDown", 503, ObjectStoreUnavailable, "unavailable"),
        ("InternalError", 500, ObjectStoreUnavailable, "unavailable"),
        ("InvalidObjectState", 403, PermanentError, "access denied"),
        ("EntityTooLarge", 400, PermanentError, "EntityTooLarge: EntityTooLarge message"),
    ],
)
def test_client_errors_are_translated(code: str, status: int, error: type[Exception], message: str) -> None:
    store = ObjectStore()
    store._client = RefusingClient(code, status)
    for call in (lambda: store.read_bytes("s3://b/k.csv"), lambda: store.write_bytes("s3://b/k.csv", b"")):
        with pytest.raises(error, match=rf"^s3://b/k.csv: .*{message}") as caught:
            call()
        assert isinstance(caught.value.__cause__, ClientError)
        if error is PermanentError:
            assert not isinstance(caught.value, (NotFound, Unauthorized))


def test_importing_the_adapter_does_not_import_boto3() -> None:
    code = (
        "import sys, infra.objectstore, usecases.reports.cloud, usecases.reports.exports, cli.main; "
        "assert 'boto3' not in sys.modules and 'botocore' not in sys.modules, 'boto3 imported'; "
        "assert 'pyarrow' not in sys.modules, 'pyarrow imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])
