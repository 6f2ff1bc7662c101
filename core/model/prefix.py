"""How many leading items two sequences share: what a growing session's next turn has in common with
the one before (its sections, their assembled parts), found in C-speed slice comparisons."""

from __future__ import annotations

from collections.abc import Sequence


def shared_prefix(old: Sequence, new: Sequence) -> int:
    """The length of the longest common prefix of ``old`` and ``new`` (items equal by ``==``; identical
    items compare at once).

    Made for a sequence that grows at its end and changes only near it: the whole common length is
    compared first, then prefixes ending ever further back (16, 64, 256, … items before it) until one
    matches, then the first difference is looked for between the two.
    """
    n = min(len(old), len(new))
    if old[:n] == new[:n]:
        return n
    high, width = n, 16
    low = max(0, n - width)
    while low > 0 and old[:low] != new[:low]:
        high, width = low, width * 4
        low = max(0, n - width)
    while high - low > 1:  # old[:low] == new[:low], old[:high] != new[:high]
        mid = (low + high) // 2
        if old[low:mid] == new[low:mid]:
            low = mid
        else:
            high = mid
    return low
