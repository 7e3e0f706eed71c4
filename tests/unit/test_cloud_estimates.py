"""We test these aspects of reading Infracost's JSON (``finops.cloud_estimates``) and of the body
guard's larger limit for the push route (``functions.body_guard.LARGE_BODIES``):

- amounts are exact: parsed from their text, every digit kept; null stays unknown (never 0);
  JSON numbers, exponents, signs and oversized figures are refused naming the field;
- subresources are flattened recursively with their path; the total adds top-level resources
  only (a resource's cost already includes its subresources'); a stated total that disagrees is
  a warning; too many rows is refused;
- the digest follows the content, not the bytes;
- the body guard allows 10 MiB on the push route only (method and path), 64 KiB elsewhere, and
  refuses a second large body at once beyond the route's own count.
"""

from __future__ import annotations

import copy
import io
import json
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from finops import cloud_estimates
from finops.cloud_estimates import amount, parse_infracost
from finops.errors import InvalidInput
from functions.body_guard import CLOUD_ESTIMATE_BODY, LARGE_BODIES, BodyGuard
from functions.edge import MAX_BODY_BYTES

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "infracost" / "breakdown.json"


def document() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(FIXTURE.read_text())
    return loaded


def test_the_fixture_is_read_exactly() -> None:
    estimate = parse_infracost(document())
    assert estimate.monthly == Decimal("1107.56") == estimate.stated_monthly
    assert (estimate.currency, estimate.tool_version, estimate.top_level, estimate.unpriced) == ("USD", "0.2", 5, 2)
    assert [r.path for r in estimate.resources] == [
        ("aws_instance.web_app",),
        ("aws_instance.web_app", "root_block_device"),
        ("aws_instance.web_app", "ebs_block_device[0]"),
        ("aws_db_instance.orders",),
        ("aws_lambda_function.resize",),
        ("aws_autoscaling_group.workers",),
        ("aws_autoscaling_group.workers", "aws_launch_template.workers"),
        ("aws_autoscaling_group.workers", "aws_launch_template.workers", "block_device_mapping[0]"),
        ("aws_s3_bucket.assets",),
        ("aws_s3_bucket.assets", "Standard"),
    ]
    assert estimate.resources[0].hourly_cost == Decimal("1.017315068493150679")
    assert estimate.resources[4].monthly_cost is None and estimate.resources[4].components[0].monthly_cost is None
    assert [p.monthly for p in estimate.projects] == [Decimal("964.20"), Decimal("143.36")]
    assert estimate.warnings == ()


def test_the_total_adds_top_level_resources_only() -> None:
    raw = document()
    raw["projects"] = raw["projects"][:1]
    sub = raw["projects"][0]["breakdown"]["resources"][0]["subresources"][1]
    sub["monthlyCost"] = "1000000"  # a subresource never adds to the total on its own
    raw["projects"][0]["breakdown"]["resources"][3:] = []
    raw["projects"][0]["breakdown"]["resources"][1]["monthlyCost"] = "0.000001"
    estimate = parse_infracost(raw)
    assert estimate.monthly == Decimal("742.640001")
    assert "but its resources add up to 742.640001" in estimate.warnings[0]


@pytest.mark.parametrize(
    ("value", "expected"),
    [("742.64", Decimal("742.64")), ("0", Decimal(0)), ("0.0000166667", Decimal("0.0000166667")), (None, None)],
)
def test_amounts(value: object, expected: Decimal | None) -> None:
    assert amount(value, "x") == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (742.64, 'x: must be a decimal string such as "742.64" or null, got a JSON number'),
        (742, "got a JSON number"),
        (True, "got a boolean"),
        ("-1", "x: '-1' is negative"),
        ("1e3", "x: '1e3' is not a plain decimal"),
        ("1.", "is not a plain decimal"),
        (" 1", "is not a plain decimal"),
        ("NaN", "is not a plain decimal"),
        ("1" * 13, "more than 12 integer digits"),
        ("0." + "1" * 31, "more than 30 decimal places"),
    ],
)
def test_amounts_refused(value: object, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        amount(value, "x")
    assert message in caught.value.message


def test_too_many_rows_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cloud_estimates, "MAX_ROWS", 9)
    with pytest.raises(InvalidInput, match=r"projects\[1\].breakdown.resources\[1\].subresources\[0\]: more than 9"):
        parse_infracost(document())


def test_the_digest_follows_content_not_bytes() -> None:
    first = parse_infracost(document())
    assert parse_infracost(json.loads(json.dumps(document(), indent=8))).digest == first.digest
    changed = copy.deepcopy(document())
    changed["projects"][1]["breakdown"]["resources"][0]["subresources"][0]["subresources"][0]["monthlyCost"] = "3.3"
    assert parse_infracost(changed).digest != first.digest


def _call(guard: BodyGuard, path: str, size: int, method: str = "POST") -> str:
    env: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "wsgi.input": io.BytesIO(b"x" * size),
        "CONTENT_LENGTH": str(size),
    }
    seen: dict[str, str] = {}

    def start_response(status: str, _headers: list[tuple[str, str]]) -> None:
        seen["status"] = status

    b"".join(guard(env, start_response))
    return seen["status"]


def _ok(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    environ["wsgi.input"].read()
    start_response("200 OK", [])
    return [b""]


def test_the_push_route_alone_gets_10_mib() -> None:
    guard = BodyGuard(_ok, limit=MAX_BODY_BYTES, timeout=5, readers=4, large=LARGE_BODIES["cost_api"])
    push = "/api/v1/apps/argocd/web/cloud-estimate"
    assert CLOUD_ESTIMATE_BODY.limit == 10 * 1024 * 1024
    assert _call(guard, push, MAX_BODY_BYTES + 1).startswith("200")
    assert _call(guard, push, CLOUD_ESTIMATE_BODY.limit).startswith("200")
    assert _call(guard, push, CLOUD_ESTIMATE_BODY.limit + 1).startswith("413")
    assert _call(guard, push, MAX_BODY_BYTES + 1, method="PUT").startswith("413")
    assert _call(guard, "/api/v1/apps/argocd/web/actual", MAX_BODY_BYTES + 1).startswith("413")
    assert _call(guard, push + "/x", MAX_BODY_BYTES + 1).startswith("413")
    plain = BodyGuard(_ok, limit=MAX_BODY_BYTES, timeout=5, readers=4)  # another function: no large route
    assert _call(plain, push, MAX_BODY_BYTES + 1).startswith("413")


def test_large_bodies_beyond_their_count_are_503_at_once() -> None:
    entered, release = threading.Event(), threading.Event()

    class Slow(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            entered.set()
            release.wait(10)
            return super().read(size)

    guard = BodyGuard(_ok, limit=MAX_BODY_BYTES, timeout=30, readers=8, large=LARGE_BODIES["cost_api"])
    path = "/api/v1/apps/argocd/web/cloud-estimate"
    holders = []
    statuses: list[str] = []
    for _ in range(CLOUD_ESTIMATE_BODY.at_once):
        entered.clear()
        env = {"REQUEST_METHOD": "POST", "PATH_INFO": path, "wsgi.input": Slow(b"{}"), "CONTENT_LENGTH": "2"}
        holder = threading.Thread(target=lambda e=env: statuses.append(_status(guard, e)))
        holder.start()
        assert entered.wait(10)
        holders.append(holder)
    assert _call(guard, path, 100).startswith("503")
    assert _call(guard, "/healthz-like", 100).startswith("200")  # small bodies are not held up
    release.set()
    for holder in holders:
        holder.join(10)
    assert statuses == ["200 OK"] * CLOUD_ESTIMATE_BODY.at_once


def _status(guard: BodyGuard, env: dict[str, Any]) -> str:
    seen: dict[str, str] = {}

    def start_response(status: str, _headers: list[tuple[str, str]]) -> None:
        seen["status"] = status

    b"".join(guard(env, start_response))
    return seen["status"]
