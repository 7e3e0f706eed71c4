"""The README's screenshots are current: docs/images/screenshots.json records the sha256 of the
inputs they were made from (tests/screenshots.py says which) and of the PNGs, and both still match."""

from __future__ import annotations

from tests import screenshots


def _changed(recorded: dict[str, str], now: dict[str, str]) -> list[str]:
    return sorted(path for path in recorded.keys() | now.keys() if recorded.get(path) != now.get(path))


def test_the_screenshots_were_made_from_the_current_inputs() -> None:
    assert screenshots.RECORD.is_file(), "docs/images/screenshots.json is missing: run make screenshots"
    changed = _changed(screenshots.recorded()["inputs"], screenshots.inputs())
    assert changed == [], f"the screenshots predate a change to {', '.join(changed)}: run make screenshots"


def test_the_checked_in_pngs_are_those_recorded() -> None:
    now = screenshots.current()["screenshots"]
    assert sorted(now) == [f"docs/images/{name}" for name in sorted(screenshots.SHOTS)], (
        "a screenshot is missing under docs/images/: run make screenshots"
    )
    changed = _changed(screenshots.recorded()["screenshots"], now)
    assert changed == [], f"{', '.join(changed)} changed since it was recorded: run make screenshots"


def test_a_changed_input_is_named() -> None:
    recorded = {"ui/dist/extension-finops.js": "0" * 64, "sandbox/demo/policy.yaml": "1" * 64}
    now = {"ui/dist/extension-finops.js": "2" * 64, "sandbox/demo/scenario.yaml": "3" * 64}
    assert _changed(recorded, now) == [
        "sandbox/demo/policy.yaml",
        "sandbox/demo/scenario.yaml",
        "ui/dist/extension-finops.js",
    ]
