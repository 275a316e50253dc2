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

from dataclasses import dataclass


@dataclass(frozen=True)
class Part:
    """Part ``number`` (0 … ``count`` − 1) of an import split ``count`` ways."""

    number: int
    count: int

    def __post_init__(self):
        if not 0 <= self.number < self.count:
            raise ValueError(f"part {self.number} of {self.count}")

    def built(self, shared: list[bool]) -> list[int]:
        """The places (in an import's animations, in order) this part builds, ``shared`` telling per
        animation whether it may go to any part: its even share of those, in order; for part 0 also every
        other. Part 0's share is rounded up, so that it has the first (the one the import plays)."""
        places = [i for i, s in enumerate(shared) if s]
        total = len(places)
        mine = set(
            places[-(-total * self.number // self.count) : -(-total * (self.number + 1) // self.count)]
        )
        return [i for i, s in enumerate(shared) if i in mine or (not s and self.number == 0)]
