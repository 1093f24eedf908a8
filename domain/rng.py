"""A keyed deterministic RNG: every draw is a pure function of (episode seed, seq, purpose).

No draw depends on the order of other draws, on global `random`, on time or on dict order, so
the same seed and the same actions give the same log, and adding a new kind of draw elsewhere
never shifts an existing one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")
_SCALE = 2.0**-64


class KeyedRNG:
    __slots__ = ("_keyed", "_prefix")

    def __init__(self, seed: int, scope: str = "") -> None:
        self._prefix = (f"{scope}|{seed}|" if scope else f"{seed}|").encode()
        # The hash of the key, kept part-way: each draw copies it and hashes on from there,
        # which gives the very digest of hashing key and draw together (a draw 1.5 -> 1.0 us).
        self._keyed = hashlib.blake2b(self._prefix, digest_size=8)

    def __getstate__(self) -> dict[str, object]:
        # A hash object does not pickle: the key does, and the hash is made again from it.
        return {
            name: getattr(self, name)
            for cls in type(self).__mro__
            for name in getattr(cls, "__slots__", ())
            if name != "_keyed" and hasattr(self, name)
        }

    def __setstate__(self, state: dict[str, object]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        self._keyed = hashlib.blake2b(self._prefix, digest_size=8)

    def _bits(self, seq: int, purpose: str) -> int:
        h = self._keyed.copy()
        h.update(f"{seq}|{purpose}".encode())
        return int.from_bytes(h.digest(), "big")

    def uniform(self, seq: int, purpose: str) -> float:
        """A float in [0, 1)."""
        return self._bits(seq, purpose) * _SCALE

    def chance(self, seq: int, purpose: str, p: float) -> bool:
        return p > 0.0 and self.uniform(seq, purpose) < p

    def randint(self, seq: int, purpose: str, lo: int, hi: int) -> int:
        """An int in [lo, hi], both ends included."""
        if hi <= lo:
            return lo
        return lo + self._bits(seq, purpose) % (hi - lo + 1)

    def choice(self, seq: int, purpose: str, options: Sequence[T]) -> T:
        return options[self._bits(seq, purpose) % len(options)]

    def sample(self, seq: int, purpose: str, options: Sequence[T], k: int) -> list[T]:
        """``k`` distinct options, order by keyed score (stable, independent draws)."""
        ranked = sorted(range(len(options)), key=lambda i: self._bits(seq, f"{purpose}#{i}"))
        return [options[i] for i in ranked[:k]]


def episode_rng(seed: int, scenario: str, difficulty: int) -> KeyedRNG:
    """The dice of an episode's play (transient faults, approvers' delays and rejections),
    keyed by its instance, not its seed alone: the same seed in two families or at two levels
    draws independently, and one level's faults are not a subset of the next one's."""
    return KeyedRNG(seed, f"{scenario}:d{difficulty}")


class AdversarialRNG(KeyedRNG):
    """Every draw goes against the player: chance events happen (up to their caps), ranges give
    their top. Used to find an instance's worst case, never to play."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(0)

    def uniform(self, seq: int, purpose: str) -> float:
        return 0.0

    def randint(self, seq: int, purpose: str, lo: int, hi: int) -> int:
        return max(lo, hi)


class PlacedFaults(AdversarialRNG):
    """The adversary of `AdversarialRNG`, except that transient faults strike wherever a second
    keyed draw says (``rate`` of the faultable calls, up to the episode's cap), not only first.
    Used to check that a step budget holds wherever faults strike, never to play."""

    __slots__ = ("_placement", "_rate")

    def __init__(self, seed: int, rate: float) -> None:
        super().__init__()
        self._placement = KeyedRNG(seed)
        self._rate = rate

    def uniform(self, seq: int, purpose: str) -> float:
        if purpose == "fault":
            return 0.0 if self._placement.uniform(seq, purpose) < self._rate else 1.0
        return 0.0
