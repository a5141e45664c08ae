"""The reports' arithmetic and shapes, without a server: percentiles as PostgreSQL's `percentile_cont`
computes them, the period's rules, and the CSV a spreadsheet opens."""

from __future__ import annotations

import csv
import io
import uuid
from datetime import datetime, timedelta, timezone

import msgspec
import pytest

from commands.errors import Invalid
from projections.views.breakdowns import OperatorRow, csv_table, parse_period, percentile

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("values, fraction, expected", [
    ([], 0.5, None),
    ([7.0], 0.5, 7.0),
    ([7.0], 0.9, 7.0),
    ([1.0, 3.0], 0.5, 2.0),
    ([1.0, 2.0, 3.0, 4.0], 0.5, 2.5),
    ([10.0, 20.0, 30.0, 40.0, 50.0], 0.5, 30.0),
    # rank 0.9 * 4 = 3.6: 40 + 0.6 * (50 - 40)
    ([10.0, 20.0, 30.0, 40.0, 50.0], 0.9, 46.0),
    (list(map(float, range(1, 11))), 0.9, 9.1),
    ([5.0, 5.0, 5.0], 0.9, 5.0),
])
def test_percentiles_interpolate_between_the_nearest_ranks(values, fraction, expected):
    found = percentile(values, fraction)
    assert found == (None if expected is None else pytest.approx(expected))


def test_the_period_defaults_to_the_last_30_days_and_refuses_the_impossible():
    assert parse_period({}, NOW).since == NOW - timedelta(days=30) and parse_period({}, NOW).until == NOW
    period = parse_period({"since": "2026-01-01T00:00:00Z", "until": "2026-02-01T00:00:00+01:00"}, NOW)
    assert period.since == datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert period.until == datetime(2026, 1, 31, 23, tzinfo=timezone.utc)
    for params, field in [({"since": "yesterday"}, "since"), ({"until": "2026-01-01T00:00:00"}, "until"),
                          ({"since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"}, "since"),
                          ({"since": "2024-01-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"}, "since"),
                          ({"until": "0001-01-02T00:00:00Z"}, "until")]:
        with pytest.raises(Invalid) as refused:
            parse_period(params, NOW)
        assert refused.value.field == field


def test_the_csv_has_the_json_names_as_header_one_line_per_row_and_no_formulas():
    first, second = uuid.uuid4(), uuid.uuid4()
    rows = [OperatorRow(first, "Ada, \"the\" first", 3, 5, 12.5, 40.0, None, None, 2, 1),
            OperatorRow(second, "=HYPERLINK(\"http://x\")", 0, 0, None, None, 3600.0, 3600.0, 0, 0)]
    table = list(csv.reader(io.StringIO(csv_table(rows, OperatorRow).decode())))
    assert table[0] == ["operatorId", "displayName", "conversations", "replies", "firstResponseMedianSeconds",
                        "firstResponseP90Seconds", "resolutionMedianSeconds", "resolutionP90Seconds", "rated", "happy"]
    assert table[0] == list(msgspec.to_builtins(rows[0]))  # the same names, in the same order, as the JSON
    assert table[1] == [str(first), "Ada, \"the\" first", "3", "5", "12.5", "40.0", "", "", "2", "1"]
    assert table[2][1] == "'=HYPERLINK(\"http://x\")" and table[2][6] == "3600.0"
    assert len(table) == 3
    assert list(csv.reader(io.StringIO(csv_table([], OperatorRow).decode()))) == [table[0]]
