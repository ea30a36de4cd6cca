"""Many fixed strings searched at once: an Aho-Corasick automaton (``pyahocorasick``).

The lexicon looks for tens of thousands of folded terms and stems inside text. One RE2
alternation of all of them (about 200,000 characters once every language had its terms) no
longer fits RE2's DFA memory and falls back to its slow NFA (measured in docs/architecture.md);
an Aho-Corasick automaton is built for exactly this problem: linear in the text whatever the
number of strings, and a few megabytes for all of them.

``Substrings`` answers the two questions the lexicon asks, with the semantics the alternation had:
whether any string occurs (``occurs_in``), and, per owner, its leftmost occurrence — the longest
one at that position (``first_per_owner``).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

import ahocorasick

Owner = TypeVar("Owner", bound=Hashable)


class _Strings:
    """An Aho-Corasick automaton over fixed strings (built by the subclasses)."""

    _automaton: ahocorasick.Automaton
    _empty: bool

    def _finish(self) -> None:
        self._empty = len(self._automaton) == 0
        if not self._empty:
            self._automaton.make_automaton()

    def __len__(self) -> int:
        return len(self._automaton)

    def occurs_in(self, text: str) -> bool:
        """Whether any of the strings occurs in ``text``."""
        if self._empty:
            return False
        for _ in self._automaton.iter(text):
            return True
        return False


class Substrings(_Strings, Generic[Owner]):
    """Fixed strings, each with the owners (e.g. lexicon bags) it belongs to."""

    def __init__(self, entries: Iterable[tuple[str, Owner]]) -> None:
        owners: dict[str, set[Owner]] = {}
        for text, owner in entries:
            if text:
                owners.setdefault(text, set()).add(owner)
        self._automaton = ahocorasick.Automaton()
        for text, who in owners.items():
            self._automaton.add_word(text, (len(text), text, frozenset(who)))
        self._finish()

    def first_per_owner(self, text: str) -> dict[Owner, str]:
        """For each owner with a string in ``text``: its leftmost occurrence (the longest of
        those starting there)."""
        return {owner: found for owner, (found, _) in self.occurrences(text).items()}

    def occurrences(self, text: str) -> dict[Owner, tuple[str, list[int]]]:
        """For each owner with a string in ``text``: its leftmost occurrence (the longest of
        those starting there, as :meth:`first_per_owner`), and where each occurrence starts."""
        best: dict[Owner, tuple[int, int, str]] = {}
        starts: dict[Owner, list[int]] = {}
        if self._empty:
            return {}
        for end, (length, found, who) in self._automaton.iter(text):
            start = end - length + 1
            for owner in who:
                starts.setdefault(owner, []).append(start)
                have = best.get(owner)
                if have is None or (start, -length) < (have[0], -have[1]):
                    best[owner] = (start, length, found)
        return {owner: (found, starts[owner]) for owner, (_, _, found) in best.items()}


class AnyOf(_Strings):
    """Fixed strings with no owners, only asked whether any occurs: the automaton stores
    lengths alone (no value per string), which halves its build time."""

    def __init__(self, strings: Iterable[str]) -> None:
        self._automaton = ahocorasick.Automaton(ahocorasick.STORE_LENGTH)
        for text in strings:
            if text:
                self._automaton.add_word(text)
        self._finish()
