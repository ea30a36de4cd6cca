"""gateway.detect.config: the compiled, immutable detection settings the detectors read."""

from __future__ import annotations

import dataclasses

import pytest

from gateway.detect.config import DetectConfig, FormConfig, Limits, UrlConfig


def test_the_defaults_are_the_documented_limits() -> None:
    limits = Limits()
    assert limits.max_bytes == 65_536
    assert limits.decode_depth == 2
    assert limits.slow_decision_ms == 50.0
    assert UrlConfig().schemes == frozenset({"https"})
    assert FormConfig().card_context_required is True


def test_settings_are_frozen_and_hashable() -> None:
    cfg = DetectConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.limits = Limits(max_bytes=1)  # type: ignore[misc]
    # detectors cache per configuration (lexicon_for, the brand index): equal settings hash alike
    assert hash(FormConfig(allow_terms=frozenset({"a"}))) == hash(
        FormConfig(allow_terms=frozenset({"a"}))
    )
    assert {DetectConfig(), DetectConfig()} == {DetectConfig()}


def test_replacing_one_part_keeps_the_others() -> None:
    base = DetectConfig(form=FormConfig(card_context_required=False))
    changed = dataclasses.replace(base, url=UrlConfig(dev_loopback_http=False))
    assert changed.url.dev_loopback_http is False
    assert changed.form == base.form
    assert changed.limits == base.limits
    assert changed != base
