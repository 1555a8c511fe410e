"""bpe-openai's private binding: loaded within the tested range, and every way it can go missing is said out loud."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimi_cli.context import tokens


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_told", set())


def fake_package(root: Path, binding: bytes | None) -> None:
    """A `bpe_openai` package that shadows the real one: without its binding, or with a broken one."""
    package = root / "bpe_openai"
    package.mkdir()
    (package / "__init__.py").write_text("")
    if binding is not None:
        (package / "_bindings.abi3.so").write_bytes(binding)


def test_the_installed_version_is_in_the_tested_range_and_counts_exactly(capsys: pytest.CaptureFixture[str]) -> None:
    version = tokens.bpe_version()
    assert version is not None and tokens.TESTED_BPE[0] <= version < tokens.TESTED_BPE[1]
    counter = tokens.TokenCounter()
    assert counter.exact and counter.raw("hello world") == 2
    assert capsys.readouterr().err == ""


def test_a_version_outside_the_range_is_named_on_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(tokens, "bpe_version", lambda: (0, 3, 0))
    assert tokens._load_tokenizer() is not None
    err = capsys.readouterr().err
    assert "kimi: warning: bpe-openai 0.3.0 is outside the tested range >=0.1.4,<0.2" in err


def test_a_binding_that_moved_falls_back_to_an_estimate_and_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_package(tmp_path, binding=None)
    monkeypatch.syspath_prepend(str(tmp_path))
    counter = tokens.TokenCounter()
    assert not counter.exact and counter.raw("x" * 40) == 10
    assert tokens._load_tokenizer() is None
    err = capsys.readouterr().err
    assert err.count("kimi: warning: bpe-openai's tokenizer binding (_bindings*.so) is not where it was") == 1
    assert "characters/4" in err


def test_a_binding_that_cannot_be_loaded_is_reported_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_package(tmp_path, binding=b"not an ELF file")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert tokens._load_tokenizer() is None
    assert "did not give the o200k_base tokenizer" in capsys.readouterr().err
