"""An import split into parts that run side by side (the batch's workers), then join into one.

Every part imports the model itself; its animations are shared out. Only animations that animate
bones alone are shared: building one adds actions and nothing else the join would have to carry
over (the rotation modes of the bones it keys are the same in every part: the shared builder decides
them from all of a scene's animations, and J3D's joint animations key every joint alike). Every
other animation changes the model it goes onto (material nodes, texture switches, the animation
lists of materials and objects) and is built by part 0, whose file the others' actions join
(operators/batch.py ``join_parts``). An animation keeps its place among the import's animations in
whichever part builds it, so the joined import is the unsplit one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Part:
    """Part ``number`` (0 … ``count`` − 1) of an import split ``count`` ways; part 0 takes ``first`` of
    the work (the others share the rest evenly): more than 1 / ``count`` when its worker would otherwise
    wait for the others (they go on to the batch's other jobs meanwhile)."""

    number: int
    count: int
    first: float | None = None  # None: 1 / count

    def __post_init__(self):
        if not 0 <= self.number < self.count:
            raise ValueError(f"part {self.number} of {self.count}")
        if self.first is not None and not 0 < self.first <= 1:
            raise ValueError(f"part 0's share {self.first}")

    def built(self, shared: list[bool]) -> list[int]:
        """The places (in an import's animations, in order) this part builds, ``shared`` telling per
        animation whether it may go to any part: its share of those, in order; for part 0 also every
        other. The others take about half as long to build as a shared one (they key a few material or
        object channels, not every bone), so part 0's share of the shared is smaller by half their
        number, and rounded up: it has the first (the one the import plays)."""
        places = [i for i, s in enumerate(shared) if s]
        others = len(shared) - len(places)
        work = len(places) + others / 2  # in shared animations
        first = 1 / self.count if self.first is None else self.first

        def end(number: int) -> int:  # where the shares of parts 0 … number end among the shared
            if number == self.count - 1:
                return len(places)
            done = work * (first + number * (1 - first) / (self.count - 1)) - others / 2
            return min(len(places), max(math.ceil(round(done, 9)), min(len(places), 1)))

        start = end(self.number - 1) if self.number else 0
        mine = set(places[start : end(self.number)])
        return [i for i, s in enumerate(shared) if i in mine or (not s and self.number == 0)]
