"""We test these aspects of the cloud estimates CI pushes to ``cost_api``, over real HTTP against a
served function (functions-framework under gunicorn, the body guard in front, as in Knative):

- a real-shaped Infracost JSON (two projects, an instance with EBS subresources, an RDS instance,
  usage-based resources with null costs, a subresource of a subresource) is stored exactly: one
  row per resource and subresource with its path, numeric amounts as sent, the total of the
  top-level resources; it is listed by ``GET .../cloud-estimate`` and summarised in ``/actual``
  (``cloudEstimates``, with its age, stale after 7 days);
- a replay leaves identical rows (only ``received_at`` moves; ``changed`` is false); a new push
  replaces the key's rows whole;
- refusals, each changing nothing: a declared ``Content-Length`` above 10 MiB (413 at once), a
  chunked body above 10 MiB (413, counted while read), malformed JSON (400), a wrong shape (400
  naming the path, e.g. ``projects[0].breakdown.resources[2].monthlyCost``), a body that is not
  JSON (415); every other route keeps the 64 KiB limit;
- authorization: only ``Authorization: Bearer $CI_TOKEN`` (read from ``SECRETS_DIR`` too, so it
  rotates in a warm process); a wrong or missing token is 401, the
  proxy's headers alone are refused, and without ``CI_TOKEN`` the route is 404 naming it; reads
  need the proxy's identity as every app view does.
"""

from __future__ import annotations

import copy
import json
import socket
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from infra.postgres import Database
from sandbox.localstack import Stack, serve_function
from tests.e2e.test_cost_api_apps import PROXY, add_record

CI = "test-ci-token"
LIMIT = 10 * 1024 * 1024
FIXTURE = Path(__file__).resolve().parents[1] / "data" / "infracost" / "breakdown.json"
PUSH = "/api/v1/apps/argocd/web/cloud-estimate"


@pytest.fixture(scope="module")
def api(stack: Stack) -> Iterator[str]:
    with serve_function(stack, "cost_api", PROXY_TOKEN=PROXY, CI_TOKEN=CI, THREADS="8") as url:
        yield url


@pytest.fixture(scope="module")
def api_without_ci(stack: Stack) -> Iterator[str]:
    with serve_function(stack, "cost_api", PROXY_TOKEN=PROXY, CI_TOKEN="", THREADS="4") as url:
        yield url


def infracost() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(FIXTURE.read_text())
    return document


def push(url: str, body: Any, *, token: str | None = CI, path: str = PUSH, **headers: str) -> httpx.Response:
    sent = {"Content-Type": "application/json", **headers}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(url + path, content=content, headers=sent, timeout=60)


def read(url: str, path: str, app: str = "argocd:web") -> httpx.Response:
    return httpx.get(url + path, headers={"X-Finops-Proxy-Token": PROXY, "Argocd-Application-Name": app})


def stored(db: Database) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    with db.connection() as conn:
        estimates = conn.execute("SELECT * FROM cloud_estimates ORDER BY 1, 2, 3, 4").fetchall()
        resources = conn.execute("SELECT * FROM cloud_estimate_resources ORDER BY 1, 2, 3, 4, 5").fetchall()
    return estimates, resources


def test_a_real_infracost_breakdown_is_stored_exactly_and_served(api: str, db: Database) -> None:
    answer = push(api, infracost())
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["monthly"] == {"amount": "1107.56", "micros": 1_107_560_000, "exact": "1107.56"}
    assert (body["resources"], body["rows"], body["unpriced"], body["changed"]) == (5, 10, 2, True)
    assert body["warnings"] == [] and body["currency"] == "USD"
    estimates, resources = stored(db)
    assert [(e["app_namespace"], e["app_name"], e["source"]) for e in estimates] == [("argocd", "web", "infracost")]
    assert estimates[0]["monthly"] == Decimal("1107.56") and estimates[0]["stated_monthly"] == Decimal("1107.56")
    by_path = {tuple(r["path"]): r for r in resources}
    instance = by_path[("aws_instance.web_app",)]
    assert instance["hourly_cost"] == Decimal("1.017315068493150679")  # every digit, as sent
    assert by_path[("aws_instance.web_app", "ebs_block_device[0]")]["monthly_cost"] == Decimal("177")
    deepest = by_path[("aws_autoscaling_group.workers", "aws_launch_template.workers", "block_device_mapping[0]")]
    assert (deepest["depth"], deepest["monthly_cost"], deepest["project"]) == (
        2,
        Decimal("3.2"),
        "example/shop-infra/shared",
    )
    assert by_path[("aws_lambda_function.resize",)]["monthly_cost"] is None  # unknown, never 0
    components = by_path[("aws_instance.web_app", "ebs_block_device[0]")]["components"]
    assert [c["monthlyCost"] for c in components] == ["125", "52"]

    listing = read(api, PUSH)
    assert listing.status_code == 200, listing.text
    (estimate,) = listing.json()["estimates"]
    assert estimate["monthly"]["amount"] == "1107.56" and estimate["stale"] is False
    assert [i["path"] for i in estimate["items"]][:3] == [
        ["aws_instance.web_app"],
        ["aws_instance.web_app", "root_block_device"],
        ["aws_instance.web_app", "ebs_block_device[0]"],
    ]
    assert estimate["items"][3]["monthly"] == {"amount": "221.56", "micros": 221_560_000, "exact": "221.56"}

    add_record(db, "argocd", "web", 150_000_000)
    actual = read(api, "/api/v1/apps/argocd/web/actual").json()
    (summary,) = actual["cloudEstimates"]
    assert (summary["source"], summary["currency"], summary["resources"]) == ("infracost", "USD", 5)
    assert summary["monthly"]["micros"] == 1_107_560_000 and summary["stale"] is False
    assert 0 <= summary["ageSeconds"] < 7 * 24 * 3600
    assert summary["generatedAt"].startswith("2026-11-30T08:14:02")


def test_an_estimate_older_than_seven_days_is_stale(api: str, db: Database) -> None:
    assert push(api, infracost()).status_code == 200
    with db.connection() as conn:
        conn.execute("UPDATE cloud_estimates SET received_at = now() - interval '7 days 1 hour'")
    add_record(db, "argocd", "web", 150_000_000)
    (summary,) = read(api, "/api/v1/apps/argocd/web/actual").json()["cloudEstimates"]
    assert summary["stale"] is True and summary["ageSeconds"] >= 7 * 24 * 3600 + 3600
    assert push(api, infracost()).json()["changed"] is False  # same content: confirmed, fresh again
    (summary,) = read(api, "/api/v1/apps/argocd/web/actual").json()["cloudEstimates"]
    assert summary["stale"] is False


def test_a_replay_leaves_the_same_rows_and_a_new_push_replaces_them_whole(api: str, db: Database) -> None:
    assert push(api, infracost()).status_code == 200
    first_estimates, first_resources = stored(db)
    again = push(api, json.dumps(infracost(), indent=4).encode())  # other whitespace, same content
    assert again.status_code == 200 and again.json()["changed"] is False
    estimates, resources = stored(db)
    assert resources == first_resources
    moved = {"received_at"}
    assert [{k: v for k, v in e.items() if k not in moved} for e in estimates] == [
        {k: v for k, v in e.items() if k not in moved} for e in first_estimates
    ]

    smaller = infracost()
    smaller["projects"] = smaller["projects"][1:]
    smaller["totalMonthlyCost"] = "143.36"
    answer = push(api, smaller)
    assert answer.status_code == 200 and answer.json()["changed"] is True
    estimates, resources = stored(db)
    assert {r["project"] for r in resources} == {"example/shop-infra/shared"} and len(resources) == 5
    assert estimates[0]["monthly"] == Decimal("143.36") and estimates[0]["changed_at"] == estimates[0]["received_at"]


def test_totals_that_disagree_are_kept_and_warned_about(api: str, db: Database) -> None:
    document = infracost()
    document["projects"][0]["breakdown"]["totalMonthlyCost"] = "964.21"
    body = push(api, document).json()
    assert body["monthly"]["exact"] == "1107.56"  # the resources' sum is what is shown
    assert body["warnings"] and "projects[0].breakdown.totalMonthlyCost is 964.21" in body["warnings"][0]


def _set(document: dict[str, Any], path: list[Any], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    node: Any = changed
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return changed


RESOURCES: list[Any] = ["projects", 0, "breakdown", "resources"]
SHAPES: list[tuple[list[Any], Any, str]] = [
    ([*RESOURCES, 2, "monthlyCost"], 12.5, "projects[0].breakdown.resources[2].monthlyCost: must be a decimal string"),
    (
        [*RESOURCES, 1, "monthlyCost"],
        "-221.56",
        "resources[1].monthlyCost: '-221.56' is negative",
    ),
    ([*RESOURCES, 1, "monthlyCost"], "2.2156e2", "resources[1].monthlyCost: '2.2156e2' is not a plain decimal"),
    (
        ["projects", 1, "breakdown", "resources", 0, "subresources", 0, "subresources", 0, "name"],
        KeyError,
        "projects[1].breakdown.resources[0].subresources[0].subresources[0].name: required",
    ),
    (
        [*RESOURCES, 0, "subresources"],
        {"name": "x"},
        "resources[0].subresources: must be an array",
    ),
    (["projects", 0, "breakdown"], KeyError, "projects[0].breakdown: required"),
    (["currency"], "usd", "currency: 'usd' is not an ISO 4217 code"),
    (["projects"], [], "projects: empty"),
    ([*RESOURCES, 0, "name"], "web\u0000app", "projects[0].breakdown.resources[0].name: contains a NUL"),
    (["version"], "2.0", "version: '2.0' is not an Infracost JSON format version"),
]


def test_refusals_name_the_problem_and_change_nothing(api: str, db: Database) -> None:
    assert push(api, infracost()).status_code == 200
    before = stored(db)
    for path, value, expected in SHAPES:
        answer = push(api, _set(infracost(), path, value))
        assert answer.status_code == 400, (path, answer.text)
        assert expected in answer.json()["error"], (expected, answer.json()["error"])
    malformed = push(api, FIXTURE.read_bytes()[:-200])
    assert malformed.status_code == 400 and "body is not valid JSON" in malformed.json()["error"]
    assert push(api, b"").json()["error"].startswith("body: empty")
    not_json = push(api, FIXTURE.read_bytes(), **{"Content-Type": "text/plain"})
    assert not_json.status_code == 415 and "application/json" in not_json.json()["error"]
    assert push(api, infracost(), path="/api/v1/apps/Argo_CD/web/cloud-estimate").status_code == 400
    assert push(api, infracost(), path=PUSH + "?source=kubecost").json()["error"].startswith("source: 'kubecost'")
    assert stored(db) == before


def _raw(url: str, head: str, body: bytes) -> int:
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as conn:
        conn.sendall(head.encode() + body)
        answer = b""
        while b"\r\n" not in answer:
            chunk = conn.recv(4096)
            if not chunk:
                break
            answer += chunk
    return int(answer.split(b" ", 2)[1])


def _head(path: str, extra: str) -> str:
    return (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {CI}\r\n"
        f"Content-Type: application/json\r\n{extra}Connection: close\r\n\r\n"
    )


def test_bodies_above_10_mib_are_refused_and_others_keep_64_kib(api: str, db: Database) -> None:
    assert push(api, infracost()).status_code == 200
    before = stored(db)
    # Declared: answered at once from the headers (one byte sent of the 10 MiB + 1 announced).
    assert _raw(api, _head(PUSH, f"Content-Length: {LIMIT + 1}\r\n"), b"{") == 413
    # Undeclared (chunked): counted while read; refused once it passes the limit.
    payload = b" " * (LIMIT - 1) + b"{}"
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in _pieces(payload, 256 * 1024)) + b"0\r\n\r\n"
    assert _raw(api, _head(PUSH, "Transfer-Encoding: chunked\r\n"), chunks) == 413
    assert stored(db) == before
    # Other routes of the same function keep 64 KiB.
    assert _raw(api, _head("/api/v1/apps/argocd/web/actual", "Content-Length: 70000\r\n"), b"{") == 413


def test_a_stranger_cannot_make_a_replica_read_a_large_body(api: str, db: Database) -> None:
    # 5 MiB announced, one byte sent: refused from the headers (401), not read until the deadline.
    stranger = _head(PUSH, f"Content-Length: {5 * 1024 * 1024}\r\n").replace(f"Authorization: Bearer {CI}\r\n", "")
    assert _raw(api, stranger, b"{") == 401
    wrong = _head(PUSH, f"Content-Length: {5 * 1024 * 1024}\r\n").replace(CI, "guess")
    assert _raw(api, wrong, b"{") == 401
    assert stored(db) == ([], [])


def _pieces(data: bytes, size: int) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def test_a_large_estimate_under_10_mib_is_accepted(api: str, db: Database) -> None:
    document = infracost()
    template = document["projects"][0]["breakdown"]["resources"][1]
    many = [dict(template, name=f"aws_db_instance.shard_{i:05d}") for i in range(15_000)]
    document["projects"][0]["breakdown"]["resources"] = many
    document["projects"][0]["breakdown"]["totalMonthlyCost"] = str(Decimal("221.56") * 15_000)
    document["totalMonthlyCost"] = str(Decimal("221.56") * 15_000 + Decimal("143.36"))
    raw = json.dumps(document).encode()
    assert 64 * 1024 < len(raw) < LIMIT
    answer = push(api, raw)
    assert answer.status_code == 200, answer.text
    assert answer.json()["monthly"]["exact"] == str(Decimal("221.56") * 15_000 + Decimal("143.36"))
    assert answer.json()["warnings"] == []
    assert len(stored(db)[1]) == 15_000 + 5


@pytest.mark.parametrize(
    ("headers", "token"),
    [
        ({}, None),
        ({}, "guess"),
        ({"X-Finops-Proxy-Token": PROXY, "Argocd-Application-Name": "argocd:web"}, None),  # the proxy's identity
        ({"X-Finops-Proxy-Token": PROXY, "Argocd-Application-Name": "argocd:web"}, PROXY),  # its token as a bearer
    ],
    ids=["no-token", "wrong-token", "proxy-headers-alone", "proxy-token-as-bearer"],
)
def test_only_the_ci_token_may_push(api: str, db: Database, headers: dict[str, str], token: str | None) -> None:
    answer = push(api, infracost(), token=token, **headers)
    assert answer.status_code == 401 and "bearer" in answer.json()["error"]
    assert stored(db) == ([], [])


def test_reads_need_the_proxy_identity_not_the_ci_token(api: str, db: Database) -> None:
    assert push(api, infracost()).status_code == 200
    with_ci = httpx.get(api + PUSH, headers={"Authorization": f"Bearer {CI}"})
    assert with_ci.status_code == 403 and "742.64" not in with_ci.text
    other = read(api, PUSH, app="team-apps:web")
    assert other.status_code == 403 and "742.64" not in other.text
    assert read(api, "/api/v1/apps/argocd/nope/cloud-estimate", app="argocd:nope").status_code == 404


def test_without_ci_token_the_route_is_404_naming_it(api_without_ci: str, db: Database) -> None:
    answer = push(api_without_ci, infracost())
    assert answer.status_code == 404 and "CI_TOKEN" in answer.json()["error"]
    assert stored(db) == ([], [])


def test_the_ci_token_is_read_from_secrets_dir_and_rotates(stack: Stack, db: Database, tmp_path: Path) -> None:
    (tmp_path / "CI_TOKEN").write_text("first-ci-token\n")
    with serve_function(stack, "cost_api", PROXY_TOKEN=PROXY, SECRETS_DIR=str(tmp_path), THREADS="4") as url:
        assert push(url, infracost(), token="first-ci-token").status_code == 200
        replacement = tmp_path / "CI_TOKEN.new"
        replacement.write_text("second-ci-token\n")
        replacement.replace(tmp_path / "CI_TOKEN")  # as the kubelet swaps a mounted Secret's file
        assert push(url, infracost(), token="first-ci-token").status_code == 401
        assert push(url, infracost(), token="second-ci-token").status_code == 200
