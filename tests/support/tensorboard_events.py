"""Event files read back with TensorBoard's own reader (EventAccumulator), on its TensorFlow-free path.

TensorBoard reads event files through TensorFlow when it can import it (the extra `tf` installs it: ~10 s of
imports); `tensorboard.compat.notf` present makes it take its own stub, as its no-TensorFlow build does.
"""

from __future__ import annotations

import sys
import types


def accumulator(folder):
    """The folder's events, loaded (scalars kept whole: size_guidance 0)."""
    sys.modules.setdefault("tensorboard.compat.notf", types.ModuleType("tensorboard.compat.notf"))
    from tensorboard.backend.event_processing.event_accumulator import SCALARS, TENSORS, EventAccumulator

    events = EventAccumulator(str(folder), size_guidance={SCALARS: 0, TENSORS: 0})
    events.Reload()
    return events


def scalars(folder) -> dict[str, list[tuple[int, float, float]]]:
    """{tag: [(step, value, wall time), ...]} of the folder's run."""
    events = accumulator(folder)
    return {tag: [(e.step, e.value, e.wall_time) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}
