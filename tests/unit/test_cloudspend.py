"""We test these aspects of parsing cloud cost reports (``finops.cloudspend``):

- the format is told from the header (FOCUS or AWS CUR 2.0); an unknown header or a missing
  required column is refused by name, extra columns are ignored;
- amounts are exact decimals (exponents too) rounded half-even to micros once; credits are kept;
  an empty effective cost is unknown, and the billed cost is used for it;
- timestamps are UTC (``Z``, offsets converted, no offset read as UTC), periods half-open, a
  charge at a moment allowed;
- the documented tag keys give the owner and cost centre (``team``, ``user:team``, ``user_team``,
  ``cost-center``...); untagged rows have None; disagreeing keys are refused;
- a bad row is refused naming its row number and column, whatever is wrong with it;
- FOCUS's bare ``NULL`` token is null in every nullable column (the FinOps Foundation's FOCUS 1.0
  sample data writes it), and "required" in a column that must have a value; in CUR 2.0 it is text;
- the specification's own sample data: a FOCUS 1.3 bill (``ServiceProviderName`` instead of
  ``ProviderName``) imports as the same bill written in 1.2's columns does; the 1.2 sample, written
  with currency signs and US dates, is refused naming the first bad field.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from finops.cloudspend import CloudCost, CloudFormat, detect_format, parse_cloud_costs
from finops.errors import InvalidInput
from tests.bills import RESERVATION_ARN, SAVINGS_PLAN_ARN, BillLine, cur2_csv, focus_csv

DATA = Path(__file__).resolve().parents[1] / "data" / "cloud"
FOCUS_HEADER = "ChargePeriodStart,ChargePeriodEnd,BilledCost,EffectiveCost,BillingCurrency,ServiceName,ResourceId,"
FOCUS_HEADER += "SubAccountId,Tags"
GOOD = '2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,1.00,0.90,EUR,Amazon S3,bucket-a,111,"{""team"": ""payments""}"'


def parse_text(text: str) -> tuple[CloudFormat, list[CloudCost]]:
    reader = csv.DictReader(io.StringIO(text))
    assert reader.fieldnames is not None
    return parse_cloud_costs(reader.fieldnames, reader)


def parse_file(name: str) -> tuple[CloudFormat, list[CloudCost]]:
    return parse_text((DATA / name).read_text())


def test_a_focus_report() -> None:
    fmt, costs = parse_file("focus-2026-10.csv")
    assert fmt is CloudFormat.FOCUS
    assert len(costs) == 8
    rds = costs[0]
    assert (rds.row, rds.billed_micros, rds.effective_micros, rds.cost_micros) == (
        1,
        310_000_000,
        280_500_000,
        280_500_000,
    )
    assert (rds.currency, rds.service, rds.account) == ("EUR", "Amazon Relational Database Service", "111111111111")
    assert rds.resource_id == "arn:aws:rds:eu-west-1:111111111111:db:orders"
    assert (rds.team, rds.cost_center) == ("payments", "cc-100")
    assert (rds.start, rds.end) == (datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC))
    assert costs[1].billed_micros == 12_345_678
    assert (costs[2].team, costs[2].cost_center, costs[2].resource_id) == (None, None, None)
    assert costs[4].billed_micros == -5_000_000  # a credit stays negative
    assert (costs[5].team, costs[5].cost_center) == ("search", "cc-300")  # user: prefixed keys
    assert (costs[7].effective_micros, costs[7].cost_micros, costs[7].tags) == (None, 400_000, {})


def test_an_aws_cur_2_report() -> None:
    fmt, costs = parse_file("cur2-2026-10.csv")
    assert fmt is CloudFormat.CUR2
    owners = [("payments", "cc-100"), ("catalog", None), (None, None), (None, None)]
    assert [(c.team, c.cost_center) for c in costs] == owners
    assert [(c.billed_micros, c.effective_micros) for c in costs] == [
        (10_000_000, 9_000_000),
        (240_000, None),  # 2.4E-1, exactly
        (3_333_333, 3_333_333),  # 3.3333334999 rounded half-even to micros, once
        (1_500_000, 1_500_000),
    ]
    assert costs[0].service == "AmazonRDS"
    assert costs[0].start == datetime(2026, 10, 3, tzinfo=UTC)
    assert costs[3].start == costs[3].end  # a one-time charge at a moment


@pytest.mark.parametrize(
    ("amount", "micros"),
    [("0.0000005", 0), ("0.0000015", 2), ("0.0000025", 2), ("-0.0000015", -2), ("1E+3", 1_000_000_000)],
)
def test_amounts_are_rounded_half_even_to_micros(amount: str, micros: int) -> None:
    _, costs = parse_text(f"{FOCUS_HEADER}\n2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,{amount},,EUR,,,,\n")
    assert costs[0].billed_micros == micros


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        ("2026-10-01T02:00:00+02:00", datetime(2026, 10, 1, tzinfo=UTC)),
        ("2026-10-01 00:00:00", datetime(2026, 10, 1, tzinfo=UTC)),
        ("2026-10-01T00:00:00.000Z", datetime(2026, 10, 1, tzinfo=UTC)),
        ("2026-10-01", datetime(2026, 10, 1, tzinfo=UTC)),
    ],
)
def test_timestamps_are_utc(start: str, expected: datetime) -> None:
    _, costs = parse_text(f"{FOCUS_HEADER}\n{start},2026-10-02T00:00:00Z,1,,EUR,,,,\n")
    assert costs[0].start == expected
    assert costs[0].start.utcoffset() is not None


@pytest.mark.parametrize(
    ("tags", "team", "cost_center"),
    [
        ('{"team": "payments", "cost-center": "cc-1"}', "payments", "cc-1"),
        ('{"user:team": "payments", "user:cost-center": "cc-1"}', "payments", "cc-1"),
        ('{"user_team": "payments", "user_cost_center": "cc-1"}', "payments", "cc-1"),
        ('{"team": "payments", "user_team": "payments", "cost_center": "cc-1"}', "payments", "cc-1"),
        ('{"team": " payments ", "cost-center": ""}', "payments", None),
        ('{"Team": "payments", "owner": "x"}', None, None),  # keys are exactly the documented ones
        ('{"team": null}', None, None),
        ("{}", None, None),
        ("", None, None),
    ],
)
def test_tag_keys(tags: str, team: str | None, cost_center: str | None) -> None:
    quoted = '"' + tags.replace('"', '""') + '"'
    _, costs = parse_text(f"{FOCUS_HEADER}\n2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,1,,EUR,,,,{quoted}\n")
    assert (costs[0].team, costs[0].cost_center) == (team, cost_center)


def row_with(**fields: str) -> str:
    values = dict(zip(FOCUS_HEADER.split(","), next(csv.reader([GOOD])), strict=True))
    values.update(fields)
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(values.values())
    return out.getvalue()


@pytest.mark.parametrize(
    ("fields", "column", "reason"),
    [
        ({"BilledCost": "12,50"}, "BilledCost", "not a decimal amount"),
        ({"BilledCost": "NaN"}, "BilledCost", "not a decimal amount"),
        ({"BilledCost": "Infinity"}, "BilledCost", "not a decimal amount"),
        ({"BilledCost": ""}, "BilledCost", "required"),
        ({"BilledCost": "1e30"}, "BilledCost", "too large"),
        ({"EffectiveCost": "abc"}, "EffectiveCost", "not a decimal amount"),
        ({"ChargePeriodStart": ""}, "ChargePeriodStart", "required"),
        ({"ChargePeriodStart": "yesterday"}, "ChargePeriodStart", "not an ISO 8601 timestamp"),
        ({"ChargePeriodEnd": "2026-09-30T00:00:00Z"}, "ChargePeriodEnd", "before ChargePeriodStart"),
        ({"BillingCurrency": "eur"}, "BillingCurrency", "not a currency code"),
        ({"BillingCurrency": ""}, "BillingCurrency", "not a currency code"),
        ({"Tags": "{team: payments}"}, "Tags", "not JSON"),
        ({"Tags": '["team"]'}, "Tags", "not a JSON object"),
        ({"Tags": '{"team": 7}'}, "Tags", "not a string"),
        ({"Tags": '{"team": "payments", "user:team": "catalog"}'}, "Tags", "tags disagree"),
    ],
)
def test_a_bad_row_is_named_by_row_and_column(fields: dict[str, str], column: str, reason: str) -> None:
    text = f"{FOCUS_HEADER}\n{GOOD}\n{GOOD}\n{row_with(**fields)}\n{GOOD}\n"
    with pytest.raises(InvalidInput, match=rf"^row 3, column {column}: .*{reason}"):
        parse_text(text)


@pytest.mark.parametrize("row", [GOOD + ",extra", "2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,1.00"])
def test_a_row_with_the_wrong_number_of_fields(row: str) -> None:
    with pytest.raises(InvalidInput, match=r"^row 2: has a different number of fields than the header's 9"):
        parse_text(f"{FOCUS_HEADER}\n{GOOD}\n{row}\n")


def test_the_header_tells_the_format() -> None:
    assert detect_format(FOCUS_HEADER.split(",")) is CloudFormat.FOCUS
    assert detect_format(FOCUS_HEADER.replace(",EffectiveCost", "").replace(",Tags", "").split(",")) is (
        CloudFormat.FOCUS
    )
    with pytest.raises(InvalidInput, match=r"neither a FOCUS report .* nor an AWS CUR 2\.0 report"):
        detect_format(["date", "cost"])
    with pytest.raises(InvalidInput, match="column BillingCurrency is missing"):
        detect_format(FOCUS_HEADER.replace(",BillingCurrency", "").split(","))
    with pytest.raises(InvalidInput, match="column line_item_currency_code is missing"):
        detect_format(["line_item_unblended_cost", "line_item_usage_start_date"])


def test_a_file_with_only_a_header_has_no_costs() -> None:
    assert parse_text(FOCUS_HEADER + "\n") == (CloudFormat.FOCUS, [])


# The FinOps Foundation's FOCUS 1.0 sample data: every FOCUS 1.0 column, nulls written ``NULL``.
FOCUS_1_0_HEADER = (
    "AvailabilityZone,BilledCost,BillingAccountId,BillingAccountName,BillingCurrency,BillingPeriodEnd,"
    "BillingPeriodStart,ChargeCategory,ChargeClass,ChargeDescription,ChargeFrequency,ChargePeriodEnd,"
    "ChargePeriodStart,CommitmentDiscountCategory,CommitmentDiscountId,CommitmentDiscountName,"
    "CommitmentDiscountStatus,CommitmentDiscountType,ConsumedQuantity,ConsumedUnit,ContractedCost,"
    "ContractedUnitPrice,EffectiveCost,InvoiceIssuerName,ListCost,ListUnitPrice,PricingCategory,"
    "PricingQuantity,PricingUnit,ProviderName,PublisherName,RegionId,RegionName,ResourceId,ResourceName,"
    "ResourceType,ServiceCategory,ServiceName,SkuId,SkuPriceId,SubAccountId,SubAccountName,Tags"
)
FOCUS_1_0_ROW = (
    "NULL,0.0426,BA-1,Billing Account,USD,2024-10-01 00:00:00,2024-09-01 00:00:00,Usage,NULL,Storage,"
    "Usage-Based,2024-09-02 00:00:00,2024-09-01 00:00:00,NULL,NULL,NULL,NULL,NULL,1.42,GB-Month,0.0426,"
    "0.03,0.0426,Vendor,0.0426,0.03,Standard,1.42,GB-Month,Vendor,Vendor,NULL,NULL,NULL,NULL,NULL,"
    "Storage,Object Storage,SKU-1,NULL,NULL,NULL,NULL"
)


def test_focus_null_tokens_are_null_in_nullable_columns() -> None:
    fmt, (cost,) = parse_text(FOCUS_1_0_HEADER + "\n" + FOCUS_1_0_ROW + "\n")
    assert fmt is CloudFormat.FOCUS
    assert (cost.billed_micros, cost.effective_micros, cost.currency) == (42_600, 42_600, "USD")
    assert (cost.resource_id, cost.account, cost.tags, cost.team) == (None, None, {}, None)
    assert cost.start == datetime(2024, 9, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"EffectiveCost": "NULL"}, None),
        ({"Tags": "NULL", "ResourceId": "NULL", "SubAccountId": "NULL"}, None),
        ({"BilledCost": "NULL"}, "row 1, column BilledCost: required"),
        ({"ChargePeriodStart": "NULL"}, "row 1, column ChargePeriodStart: required"),
        ({"BillingCurrency": "NULL"}, "row 1, column BillingCurrency: ''"),
        ({"Tags": "null"}, "row 1, column Tags: 'null' is not a JSON object"),  # JSON null is not a tag map
    ],
    ids=["effective", "nullable-text", "billed", "start", "currency", "json-null"],
)
def test_focus_null_token_by_column(fields: dict[str, str], reason: str | None) -> None:
    values = dict(zip(FOCUS_HEADER.split(","), next(csv.reader([GOOD])), strict=True)) | fields
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=FOCUS_HEADER.split(","))
    writer.writeheader()
    writer.writerow(values)
    if reason is None:
        (cost,) = parse_text(buffer.getvalue())[1]
        assert cost.billed_micros == 1_000_000
        return
    with pytest.raises(InvalidInput) as caught:
        parse_text(buffer.getvalue())
    assert reason in caught.value.message


def test_null_is_text_in_cur_2() -> None:
    header = "line_item_unblended_cost,line_item_currency_code,line_item_usage_start_date,line_item_usage_end_date,"
    header += "line_item_product_code,line_item_resource_id,line_item_usage_account_id"
    (cost,) = parse_text(header + "\n1.5,USD,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,AmazonS3,NULL,NULL\n")[1]
    assert (cost.resource_id, cost.account) == ("NULL", "NULL")


# FOCUS 1.3 sample data (specification/data/saas_examples/host_based_saas_monitoring_a.csv of the
# FOCUS specification): a SaaS monitoring bill, ServiceProviderName and no ProviderName.
FOCUS_1_3_SAMPLE = """\
BilledCost,BillingAccountId,BillingCurrency,BillingPeriodEnd,BillingPeriodStart,ChargeCategory,ChargeClass,\
ChargeFrequency,ChargePeriodEnd,ChargePeriodStart,ConsumedQuantity,ConsumedUnit,ContractedCost,ContractedUnitPrice,\
EffectiveCost,InvoiceIssuerName,ListCost,ListUnitPrice,PricingCategory,PricingQuantity,PricingUnit,ResourceId,\
ResourceName,ServiceCategory,ServiceName,ServiceProviderName,SkuId,SkuMeter,SkuPriceId,SubAccountId
450.0,account-1,USD,2025-02-01T00:00:00Z,2025-01-01T00:00:00Z,Usage,,Recurring,2025-02-01T00:00:00Z,\
2025-01-01T00:00:00Z,25.0,Hosts,450.0,18.0,450.0,WatchTower,450.0,18.0,Standard,25.0,Hosts,,,\
Management and Governance,Infrastructure Monitoring,WatchTower,infra-pro,Monitored Hosts,\
infra-pro-on-demand,team-platform
360.0,account-1,USD,2025-02-01T00:00:00Z,2025-01-01T00:00:00Z,Usage,,Recurring,2025-02-01T00:00:00Z,\
2025-01-01T00:00:00Z,10.0,Hosts,360.0,36.0,360.0,WatchTower,360.0,36.0,Standard,10.0,Hosts,,,\
Management and Governance,APM,WatchTower,apm-standard,APM Hosts,apm-standard-on-demand,team-platform
15.0,account-1,USD,2025-02-01T00:00:00Z,2025-01-01T00:00:00Z,Usage,,Usage-Based,2025-02-01T00:00:00Z,\
2025-01-01T00:00:00Z,150.0,GB,15.0,0.1,15.0,WatchTower,15.0,0.1,Standard,150.0,GB,,,\
Management and Governance,Log Management,WatchTower,logs-ingestion,Log Ingestion,\
logs-ingestion-on-demand,team-platform
"""
# FOCUS 1.2 sample data (specification/data/saas_examples/simple_agreements/simple_saas_agreements_a2.csv
# at tag v1.2): its first row, amounts written "$50,000.00 ".
FOCUS_1_2_SAMPLE_ROW = (
    ',"$50,000.00 ",12345,AwesomeCorpDemo,USD,5/1/25,4/1/25,,,Purchase,,Upfront payment covering license purchase '
    'for a 12-month period,One-Time,4/1/26,4/1/25,,,,,,,,,,"$50,000.00 ",$100.00 ,"$50,000.00 ",ACMECORP,'
    '"$50,000.00 ",$100.00 ,Standard,500,Count,ACMECORP,ACMECORP,,,,,,Business Applications,ACMECORP Licenses,,'
    "ACL-123,,,ACL-123-0120,,,"
)


def test_the_focus_1_3_sample_imports_as_its_1_2_twin() -> None:
    fmt, costs = parse_text(FOCUS_1_3_SAMPLE)
    assert fmt is CloudFormat.FOCUS
    assert [(c.billed_micros, c.service, c.account, c.team, c.resource_id) for c in costs] == [
        (450_000_000, "Infrastructure Monitoring", "team-platform", None, None),
        (360_000_000, "APM", "team-platform", None, None),
        (15_000_000, "Log Management", "team-platform", None, None),
    ]
    assert {(c.currency, c.start, c.end) for c in costs} == {
        ("USD", datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 2, 1, tzinfo=UTC))
    }
    as_1_2 = FOCUS_1_3_SAMPLE.replace("ServiceProviderName", "ProviderName", 1)
    assert parse_text(as_1_2) == (fmt, costs)


def test_the_focus_1_2_sample_is_refused_by_field() -> None:
    header = (
        "AvailabilityZone,BilledCost,BillingAccountId,BillingAccountName,BillingCurrency,BillingPeriodEnd,"
        "BillingPeriodStart,CapacityReservationId,CapacityReservationStatus,ChargeCategory,ChargeClass,"
        "ChargeDescription,ChargeFrequency,ChargePeriodEnd,ChargePeriodStart,CommitmentDiscountCategory,"
        "CommitmentDiscountId,CommitmentDiscountName,CommitmentDiscountQuantity,CommitmentDiscountStatus,"
        "CommitmentDiscountType,CommitmentDiscountUnit,ConsumedQuantity,ConsumedUnit,ContractedCost,"
        "ContractedUnitPrice,EffectiveCost,InvoiceIssuerName,ListCost,ListUnitPrice,PricingCategory,"
        "PricingQuantity,PricingUnit,ProviderName,PublisherName,RegionId,RegionName,ResourceId,ResourceName,"
        "ResourceType,ServiceCategory,ServiceName,ServiceSubcategory,SkuId,SkuMeter,SkuPriceDetails,SkuPriceId,"
        "SubAccountId,SubAccountName,Tags"
    )
    with pytest.raises(InvalidInput) as caught:
        parse_text(header + "\n" + FOCUS_1_2_SAMPLE_ROW + "\n")
    assert caught.value.message == "row 1, column ChargePeriodStart: '4/1/25' is not an ISO 8601 timestamp"


@pytest.mark.parametrize("fmt", ["focus", "cur2"])
def test_a_line_keeps_the_commitment_it_belongs_to(fmt: str) -> None:
    start = datetime(2026, 11, 1, tzinfo=UTC)
    day = {"start": start, "end": start + timedelta(days=1), "resource_id": "i-0a"}
    lines = [
        BillLine(billed=Decimal("1.00"), **day),
        BillLine(billed=Decimal("2.00"), effective=Decimal("1.50"), kind="SavingsPlanCoveredUsage", **day),
        BillLine(billed=Decimal("3.00"), effective=Decimal("2.00"), kind="DiscountedUsage", **day),
    ]
    text = focus_csv(lines) if fmt == "focus" else cur2_csv(lines)
    reader = csv.DictReader(io.StringIO(text))
    _, costs = parse_cloud_costs(list(reader.fieldnames or []), reader)
    plan, reservation = (arn.format(account="111122223333") for arn in (SAVINGS_PLAN_ARN, RESERVATION_ARN))
    assert [cost.commitment for cost in costs] == [None, plan, reservation]
