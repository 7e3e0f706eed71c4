"""The object store: read and write whole files at a local path or ``s3://bucket/key``.

The only module that imports boto3, and only when an ``s3://`` URL is used (importing boto3 costs
a few hundred milliseconds of cold start that most functions never need). Credentials and region
come from the usual AWS chain (environment, shared config, instance or pod role); the endpoint can
be set for an S3-compatible store or a test server (``ObjectStore(endpoint_url=...)``, which also
switches to path-style addressing).

botocore's exceptions never leave this module:

- ``NoSuchKey``, ``NoSuchBucket``, 404 -> ``NotFound`` naming the URL;
- ``AccessDenied``, 403 and other refusals -> ``PermanentError``; missing or rejected credentials
  -> ``Unauthorized``;
- connection failures, timeouts, throttling and 5xx -> ``ObjectStoreUnavailable`` (a
  ``TemporaryError``: retry later).

Local files get the same treatment (a missing file is ``NotFound``) and are written atomically:
to a temporary file in the same folder, then renamed over the target. ``writer(url)`` streams a
large file: it yields a binary file to write to (local: that temporary file; S3: an anonymous
temporary file, uploaded in one request when the block ends), so nothing is written in part and
the caller never holds the whole file in memory.

A URL ending in ``/`` names a folder: ``resolve_target(url, name)`` appends the file name the
caller picks (a local path that is an existing directory is a folder too).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from finops.errors import InvalidInput, NotFound, PermanentError, TemporaryError, Unauthorized

_NOT_FOUND = {"NoSuchKey", "NoSuchBucket", "404", "NotFound"}
_UNAUTHORIZED = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "TokenRefreshRequired"}
_TEMPORARY = {
    "InternalError",
    "ServiceUnavailable",
    "SlowDown",
    "RequestTimeout",
    "Throttling",
    "ThrottlingException",
    "RequestTimeTooSkewed",
}


class ObjectStoreUnavailable(TemporaryError):
    """The object store is unavailable."""


@dataclass(frozen=True)
class S3Location:
    bucket: str
    key: str


def parse_s3_url(url: str) -> S3Location:
    """``s3://bucket/key`` into its parts; the key may end in ``/`` (a folder) but not be empty."""
    bucket, _, key = url.removeprefix("s3://").partition("/")
    if not bucket or not key:
        raise InvalidInput(f"{url}: an S3 URL is s3://bucket/key")
    return S3Location(bucket, key)


def is_s3(url: str) -> bool:
    return url.startswith("s3://")


def resolve_target(url: str, name: str) -> str:
    """Where to write: ``url`` itself, or ``url`` + ``name`` when ``url`` names a folder."""
    if url.endswith("/"):
        return url + name
    if not is_s3(url) and _local_path(url).is_dir():
        return str(_local_path(url) / name)
    return url


class ObjectStore:
    """Whole-file reads and writes; one S3 client per store, created on first use."""

    def __init__(self, endpoint_url: str | None = None, *, timeout: float = 30.0, attempts: int = 3) -> None:
        self.endpoint_url = endpoint_url
        self.timeout = timeout
        self.attempts = attempts  # botocore's standard retry mode: throttling, 5xx and connection errors
        self._client: Any = None

    def read_bytes(self, url: str) -> bytes:
        if not is_s3(url):
            with _local_errors(url):
                return _local_path(url).read_bytes()
        where = parse_s3_url(url)
        if where.key.endswith("/"):
            raise InvalidInput(f"{url}: names a folder, not a file")
        with self._s3_errors(url):
            response = self._s3().get_object(Bucket=where.bucket, Key=where.key)
            body: bytes = response["Body"].read()
            return body

    def write_bytes(self, url: str, data: bytes, content_type: str = "application/octet-stream") -> str:
        """Write ``data`` at ``url`` (replacing what is there); returns the URL written."""
        with self.writer(url, content_type) as out:
            out.write(data)
        return url

    @contextmanager
    def writer(self, url: str, content_type: str = "application/octet-stream") -> Iterator[BinaryIO]:
        """A binary file whose content replaces ``url``'s when the block ends without an error
        (an error leaves ``url`` as it was)."""
        if not is_s3(url):
            with _local_writer(url) as out:
                yield out
            return
        where = parse_s3_url(url)
        if where.key.endswith("/"):
            raise InvalidInput(f"{url}: names a folder; give a file name")
        with tempfile.TemporaryFile() as out:
            yield out
            out.seek(0)
            with self._s3_errors(url):
                self._s3().put_object(Bucket=where.bucket, Key=where.key, Body=out, ContentType=content_type)

    def _s3(self) -> Any:
        if self._client is None:
            import boto3
            from botocore.config import Config  # type: ignore[import-untyped]

            options: dict[str, Any] = {"retries": {"max_attempts": self.attempts, "mode": "standard"}}
            options |= {"connect_timeout": self.timeout, "read_timeout": self.timeout}
            if self.endpoint_url:
                options["s3"] = {"addressing_style": "path"}
            try:
                self._client = boto3.session.Session().client(
                    "s3", endpoint_url=self.endpoint_url, config=Config(**options)
                )
            except ValueError as exc:  # botocore's "Invalid endpoint: ..."
                raise InvalidInput(f"S3 endpoint {self.endpoint_url!r}: {exc}") from exc
        return self._client

    @contextmanager
    def _s3_errors(self, url: str) -> Iterator[None]:
        from botocore import exceptions  # type: ignore[import-untyped]

        try:
            yield
        except exceptions.ClientError as exc:
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
            message = error.get("Message") or code
            if code in _NOT_FOUND or status == 404:
                what = "no such bucket" if code == "NoSuchBucket" else "no such object"
                raise NotFound(f"{url}: {what}") from exc
            if code in _UNAUTHORIZED:
                raise Unauthorized(f"{url}: the credentials were refused ({code})") from exc
            if code in _TEMPORARY or status >= 500 or status == 429:
                raise ObjectStoreUnavailable(f"{url}: the object store is unavailable ({code}: {message})") from exc
            if code == "AccessDenied" or status == 403:
                raise PermanentError(f"{url}: access denied ({code}: {message})") from exc
            raise PermanentError(f"{url}: {code}: {message}") from exc
        except exceptions.NoCredentialsError as exc:
            raise Unauthorized(f"{url}: no AWS credentials found (environment, config or role)") from exc
        except (exceptions.ConnectionError, exceptions.HTTPClientError) as exc:
            raise ObjectStoreUnavailable(f"{url}: the object store is unavailable ({exc})") from exc
        except exceptions.BotoCoreError as exc:
            raise PermanentError(f"{url}: {exc}") from exc


@contextmanager
def _local_errors(url: str) -> Iterator[None]:
    try:
        yield
    except FileNotFoundError as exc:
        raise NotFound(f"{url}: no such file") from exc
    except IsADirectoryError as exc:
        raise InvalidInput(f"{url}: is a directory, not a file") from exc
    except PermissionError as exc:
        raise PermanentError(f"{url}: permission denied") from exc
    except OSError as exc:
        raise PermanentError(f"{url}: {exc.strerror or exc}") from exc


def _local_path(url: str) -> Path:
    return Path(url.removeprefix("file://"))


@contextmanager
def _local_writer(url: str) -> Iterator[BinaryIO]:
    path = _local_path(url)
    if not path.parent.is_dir():
        raise NotFound(f"{url}: folder {path.parent} does not exist")
    with _local_errors(url):
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                os.fchmod(out.fileno(), 0o644)  # mkstemp's 0600 would hide an export from its readers
                yield out
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
