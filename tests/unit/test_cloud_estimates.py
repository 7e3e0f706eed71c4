"""We test these aspects of reading Infracost's JSON (``finops.cloud_estimates``) and of the push
route's larger body limit (``usecases.cost_api.cloud_estimates.CLOUD_ESTIMATE_BODY``):

- amounts are exact: parsed from their text, every digit kept; null stays unknown (never 0);
  JSON numbers, exponents, signs and oversized figures are refused naming the field;
- subresources are flattened recursively with their path; the total adds top-level resources
  only (a resource's cost already includes its subresources'); a stated total that disagrees is
  a warning; too many rows is refused;
- the digest follows the content, not the bytes;
- every field read is stored where it was read (components, project totals, timestamps); every
  refusal names its field by its full path; limits (digits, places, projects, text length, the
  10^12 total) hold exactly at their boundary;
- the push reads up to 10 MiB, every other body 64 KiB, and a push beyond the route's own count
  of large bodies at once is refused at once.
"""

from __future__ import annotations

import copy
import json
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import flask
import pytest
from werkzeug.test import EnvironBuilder

from finops import cloud_estimates
from finops.cloud_estimates import amount, parse_infracost
from finops.errors import InvalidInput
from functions.cost_api import estimates
from functions.cost_api.estimates import LARGE_AT_ONCE, LargeBodiesBusy
from functions.edge import MAX_BODY_BYTES, PayloadTooLarge, read_json
from usecases.cost_api.cloud_estimates import CLOUD_ESTIMATE_BODY

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


def _push(size: int) -> flask.Request:
    body = b'"' + b"x" * (size - 2) + b'"'  # a JSON string of ``size`` bytes
    env = EnvironBuilder(method="POST", data=body, content_type="application/json").get_environ()
    return flask.Request(env)


def test_the_push_alone_reads_10_mib() -> None:
    assert CLOUD_ESTIMATE_BODY == 10 * 1024 * 1024
    assert estimates._read_document(_push(MAX_BODY_BYTES + 1))
    assert estimates._read_document(_push(CLOUD_ESTIMATE_BODY))
    with pytest.raises(PayloadTooLarge):
        estimates._read_document(_push(CLOUD_ESTIMATE_BODY + 1))
    with pytest.raises(PayloadTooLarge):  # every other body: 64 KiB
        read_json(_push(MAX_BODY_BYTES + 1))


def test_large_bodies_beyond_their_count_are_503_at_once() -> None:
    entered, release = threading.Event(), threading.Event()

    class Slow(flask.Request):
        def get_data(self, *args: Any, **kwargs: Any) -> Any:
            entered.set()
            release.wait(10)
            return super().get_data(*args, **kwargs)

    def slow_push() -> flask.Request:
        return Slow(_push(100).environ)

    holders = []
    results: list[object] = []
    for _ in range(LARGE_AT_ONCE):
        entered.clear()
        holder = threading.Thread(target=lambda: results.append(estimates._read_document(slow_push())))
        holder.start()
        assert entered.wait(10)
        holders.append(holder)
    with pytest.raises(LargeBodiesBusy) as refused:
        estimates._read_document(_push(100))
    assert refused.value.http_status == 503
    assert read_json(_push(100))  # small bodies are not held up
    release.set()
    for holder in holders:
        holder.join(10)
    assert len(results) == LARGE_AT_ONCE


# --- every field read lands where it is stored, and every refusal names its field ------------


def small() -> dict[str, Any]:
    """One project, one resource with one component and one subresource; every field set."""
    return {
        "version": "0.2",
        "currency": "EUR",
        "timeGenerated": "2026-11-30T08:12:40Z",
        "totalMonthlyCost": "12.5",
        "projects": [
            {
                "name": "shop/prod",
                "breakdown": {
                    "totalMonthlyCost": "12.5",
                    "resources": [
                        {
                            "name": "aws_instance.web",
                            "monthlyCost": "12.5",
                            "hourlyCost": "0.017",
                            "costComponents": [
                                {
                                    "name": "Instance",
                                    "unit": "hours",
                                    "monthlyQuantity": "730",
                                    "price": "0.01",
                                    "monthlyCost": "7.3",
                                },
                            ],
                            "subresources": [{"name": "disk", "monthlyCost": "5.2", "hourlyCost": None}],
                        }
                    ],
                },
            }
        ],
    }


def test_every_field_is_stored_where_it_was_read() -> None:
    from datetime import UTC, datetime

    from finops.cloud_estimates import Component, Estimate, Project, Resource

    component = Component("Instance", "hours", Decimal("730"), Decimal("0.01"), Decimal("7.3"))
    assert parse_infracost(small()) == Estimate(
        "infracost",
        "EUR",
        "0.2",
        datetime(2026, 11, 30, 8, 12, 40, tzinfo=UTC),
        Decimal("12.5"),
        (Project("shop/prod", Decimal("12.5"), Decimal("12.5"), 1),),
        (
            Resource("shop/prod", ("aws_instance.web",), Decimal("12.5"), Decimal("0.017"), (component,)),
            Resource("shop/prod", ("aws_instance.web", "disk"), Decimal("5.2"), None, ()),
        ),
    )
    assert component.document() == {
        "name": "Instance",
        "unit": "hours",
        "monthlyQuantity": "730",
        "price": "0.01",
        "monthlyCost": "7.3",
    }
    assert parse_infracost(small()).projects_document() == [
        {"name": "shop/prod", "monthly": "12.5", "statedMonthly": "12.5", "resources": 1}
    ]


def test_optional_fields_absent() -> None:
    raw = small()
    del raw["timeGenerated"], raw["totalMonthlyCost"]
    del raw["projects"][0]["breakdown"]["totalMonthlyCost"]
    raw["projects"][0]["name"] = ""  # a project may be unnamed; a resource may not
    raw["projects"][0]["breakdown"]["resources"][0]["costComponents"] = [{}, {"name": "", "unit": ""}]
    estimate = parse_infracost(raw)
    assert (estimate.generated_at, estimate.stated_monthly, estimate.warnings) == (None, None, ())
    assert estimate.projects[0].name == "" and estimate.projects[0].stated_monthly is None
    assert [c.document() for c in estimate.resources[0].components] == [
        {"name": "", "unit": "", "monthlyQuantity": None, "price": None, "monthlyCost": None}
    ] * 2
    assert estimate.projects_document()[0]["statedMonthly"] is None


def test_stated_totals_that_disagree_are_warnings() -> None:
    raw = small()
    raw["totalMonthlyCost"] = "13"
    raw["projects"][0]["breakdown"]["totalMonthlyCost"] = "12.4"
    assert parse_infracost(raw).warnings == (
        "projects[0].breakdown.totalMonthlyCost is 12.4 but its resources add up to 12.5; the resources' sum is shown",
        "totalMonthlyCost is 13 but the projects' totals add up to 12.4",
    )
    del raw["projects"][0]["breakdown"]["totalMonthlyCost"]  # a project without a total: nothing to compare
    assert parse_infracost(raw).warnings == ()


def test_totals_at_the_digit_limit() -> None:
    raw = small()
    second = copy.deepcopy(raw["projects"][0])
    raw["projects"].append(second)
    raw["projects"][0]["breakdown"]["resources"][0]["monthlyCost"] = "499999999999"
    second["breakdown"]["resources"][0]["monthlyCost"] = "500000000000"
    for project in raw["projects"]:
        del project["breakdown"]["totalMonthlyCost"]
    assert parse_infracost(raw).monthly == Decimal("999999999999")  # one below 10^12 is kept
    second["breakdown"]["resources"][0]["monthlyCost"] = "500000000001"
    with pytest.raises(InvalidInput) as caught:
        parse_infracost(raw)
    assert caught.value.message == "projects: 1000000000000 is beyond 12 integer digits"
    resources = raw["projects"][0]["breakdown"]["resources"]
    resources.append({**resources[0], "monthlyCost": "500000000001"})
    with pytest.raises(InvalidInput) as caught:
        parse_infracost(raw)
    assert caught.value.message == "projects[0].breakdown.resources: 1000000000000 is beyond 12 integer digits"


def test_the_project_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cloud_estimates, "MAX_PROJECTS", 2)
    assert len(parse_infracost(document()).projects) == 2
    raw = document()
    raw["projects"].append(raw["projects"][0])
    with pytest.raises(InvalidInput) as caught:
        parse_infracost(raw)
    assert caught.value.message == "projects: more than 2"


def test_text_at_its_length_limit() -> None:
    raw = small()
    raw["projects"][0]["breakdown"]["resources"][0]["name"] = "r" * cloud_estimates.MAX_TEXT
    assert parse_infracost(raw).resources[0].path == ("r" * cloud_estimates.MAX_TEXT,)


def _set(path: str, value: object) -> dict[str, Any]:
    """``small()`` with the field at dotted ``path`` (``[i]`` for list items) set to ``value``, or
    removed when ``value`` is ``_GONE``."""
    raw: Any = small()
    keys = path.replace("[", ".").replace("]", "").split(".")
    parent = raw
    for key in keys[:-1]:
        parent = parent[int(key)] if isinstance(parent, list) else parent[key]
    last: Any = int(keys[-1]) if isinstance(parent, list) else keys[-1]
    if value is _GONE:
        del parent[last]
    else:
        parent[last] = value
    return dict(raw)


_GONE = object()
R = "projects.0.breakdown.resources.0"


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("version", _GONE, "body.version: required"),
        ("version", 2, "version: must be a string, got a JSON number"),
        ("version", "1.0", "version: '1.0' is not an Infracost JSON format version this reads (0.x)"),
        ("currency", _GONE, "body.currency: required"),
        ("currency", None, "currency: must be a string, got null"),
        ("currency", "usd", "currency: 'usd' is not an ISO 4217 code such as USD"),
        ("timeGenerated", 1, "timeGenerated: must be a string, got a JSON number"),
        ("timeGenerated", "yesterday", "timeGenerated: 'yesterday' is not an RFC 3339 timestamp"),
        ("totalMonthlyCost", "x", "totalMonthlyCost: 'x' is not a plain decimal (digits, one '.', no exponent)"),
        ("projects", _GONE, "body.projects: required"),
        ("projects", {}, "projects: must be an array, got an object"),
        ("projects", [], "projects: empty; an Infracost breakdown has at least one project"),
        ("projects.0", "p", "projects[0]: must be an object, got a string"),
        ("projects.0.name", _GONE, "projects[0].name: required"),
        ("projects.0.name", [], "projects[0].name: must be a string, got an array"),
        ("projects.0.breakdown", _GONE, "projects[0].breakdown: required"),
        ("projects.0.breakdown", [], "projects[0].breakdown: must be an object, got an array"),
        ("projects.0.breakdown.totalMonthlyCost", 1, "projects[0].breakdown.totalMonthlyCost: must be a decimal"),
        ("projects.0.breakdown.resources", _GONE, "projects[0].breakdown.resources: required"),
        ("projects.0.breakdown.resources", "r", "projects[0].breakdown.resources: must be an array, got a string"),
        (R, None, "projects[0].breakdown.resources[0]: must be an object, got null"),
        (R + ".name", _GONE, "projects[0].breakdown.resources[0].name: required"),
        (R + ".name", "", "projects[0].breakdown.resources[0].name: must not be empty"),
        (R + ".name", "r" * 1025, "projects[0].breakdown.resources[0].name: longer than 1024 characters"),
        (R + ".name", "a\x00b", "projects[0].breakdown.resources[0].name: contains a NUL character"),
        (R + ".monthlyCost", _GONE, "projects[0].breakdown.resources[0].monthlyCost: required"),
        (R + ".monthlyCost", "-1", "projects[0].breakdown.resources[0].monthlyCost: '-1' is negative"),
        (R + ".hourlyCost", "-1", "projects[0].breakdown.resources[0].hourlyCost: '-1' is negative"),
        (R + ".costComponents", {"a": 1}, "projects[0].breakdown.resources[0].costComponents: must be an array"),
        (R + ".costComponents.0", 1, "projects[0].breakdown.resources[0].costComponents[0]: must be an object"),
        (R + ".costComponents.0.name", _GONE, None),  # a component's name and unit may be absent
        (
            R + ".costComponents.0.name",
            1,
            "projects[0].breakdown.resources[0].costComponents[0].name: must be a string",
        ),
        (
            R + ".costComponents.0.unit",
            1,
            "projects[0].breakdown.resources[0].costComponents[0].unit: must be a string",
        ),
        (
            R + ".costComponents.0.monthlyQuantity",
            "-1",
            "projects[0].breakdown.resources[0].costComponents[0].monthlyQuantity: '-1'",
        ),
        (R + ".costComponents.0.price", "-1", "projects[0].breakdown.resources[0].costComponents[0].price: '-1'"),
        (
            R + ".costComponents.0.monthlyCost",
            "-1",
            "projects[0].breakdown.resources[0].costComponents[0].monthlyCost: '-1'",
        ),
        (R + ".subresources", {"a": 1}, "projects[0].breakdown.resources[0].subresources: must be an array"),
        (R + ".subresources.0.name", 1, "projects[0].breakdown.resources[0].subresources[0].name: must be a string"),
    ],
)
def test_a_bad_field_is_named(path: str, value: object, message: str | None) -> None:
    raw = _set(path, value)
    if message is None:
        parse_infracost(raw)
        return
    with pytest.raises(InvalidInput) as caught:
        parse_infracost(raw)
    assert caught.value.message.startswith(message)


@pytest.mark.parametrize(
    ("document_", "message"),
    [([], "body: must be an object, got an array"), ("{}", "body: must be an object, got a string")],
)
def test_a_body_that_is_not_an_object(document_: object, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_infracost(document_)
    assert caught.value.message == message


def test_amounts_at_their_digit_limits() -> None:
    assert amount("9" * 12 + "." + "9" * 30, "x") == Decimal("9" * 12 + "." + "9" * 30)
    assert amount("000" + "9" * 12, "x") == Decimal("9" * 12)  # leading zeros are not digits of the amount
    with pytest.raises(InvalidInput) as caught:
        amount({1}, "x")
    assert caught.value.message == 'x: must be a decimal string such as "742.64" or null, got set'


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("version", "0." + "9" * 30, f"version: {'0.' + '9' * 18!r} is not an Infracost JSON format version"),
        ("currency", "U" * 30, "currency: 'UUUUUUUUUUUUUUUUUUUU' is not an ISO 4217 code such as USD"),
        ("totalMonthlyCost", "x" * 50, f"totalMonthlyCost: {'x' * 40!r} is not a plain decimal"),
        ("totalMonthlyCost", "9" * 50, f"totalMonthlyCost: {'9' * 40!r} has more than 12 integer digits"),
        ("totalMonthlyCost", "0." + "9" * 50, f"totalMonthlyCost: {'0.' + '9' * 38!r} has more than 30 decimal places"),
    ],
)
def test_a_long_bad_value_is_shown_cut_short(path: str, value: str, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_infracost(_set(path, value))
    assert caught.value.message.startswith(message)
