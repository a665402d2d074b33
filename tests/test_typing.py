"""The public API's types, checked by mypy --strict as part of the suite."""

from __future__ import annotations

from pathlib import Path

from mypy import api

HERE = Path(__file__).parent


def test_the_typing_checks_pass_under_mypy_strict() -> None:
    out, err, status = api.run(
        [
            "--strict",
            "--no-incremental",
            "--config-file=",
            str(HERE / "typing" / "check_public_api.py"),
        ]
    )
    assert status == 0, out + err
    assert "Success: no issues found in 1 source file" in out


def test_a_broken_expectation_fails(tmp_path: Path) -> None:
    # The check can fail: an expected error that does not occur is reported.
    probe = tmp_path / "probe.py"
    probe.write_text('import interaction\nx: str = "fine"  # type: ignore[assignment]\n')
    out, _, status = api.run(["--strict", "--no-incremental", "--config-file=", str(probe)])
    assert status == 1
    assert 'Unused "type: ignore" comment' in out
