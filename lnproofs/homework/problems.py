"""The homework topics: every problem kind, in the order they appear on a problem set.

The kinds live with their ideas: the geometry of LayerNorm (:mod:`.topics_geometry`), attention
(:mod:`.topics_attention`), norms and the secular equation (:mod:`.topics_norms`), attention heads
(:mod:`.topics_heads`), what a LayerNorm lets a query do (:mod:`.topics_support`) and the vocabulary (:mod:`.vocabulary`); :mod:`.problem_base` says what
every kind has.  Keys and tokens are numbered from 1, as a student reads them on the sheet.
"""

from __future__ import annotations

from ..kernel import InputError, require
from .problem_base import STATUSES, Claim
from .solution import Solution
from .topics_attention import SelectabilityProblem, ThresholdProblem, UniformProblem
from .topics_geometry import EllipsoidProblem, ProjectionProblem, SphereProblem
from .topics_heads import CausalProblem, RotaryProblem
from .topics_norms import InterlacingProblem, RMSNormProblem
from .topics_support import CentredProblem, SoftmaxBallProblem, SupportProblem
from .vocabulary import VocabProblem

__all__ = [
    "TOPICS",
    "STATUSES",
    "Claim",
    "Solution",
    "ProjectionProblem",
    "SphereProblem",
    "EllipsoidProblem",
    "SelectabilityProblem",
    "UniformProblem",
    "ThresholdProblem",
    "VocabProblem",
    "RMSNormProblem",
    "InterlacingProblem",
    "SoftmaxBallProblem",
    "CausalProblem",
    "RotaryProblem",
    "SupportProblem",
    "CentredProblem",
    "PROBLEM_CLASSES",
    "problem_from_json",
]

PROBLEM_CLASSES = {
    cls.topic: cls
    for cls in (
        ProjectionProblem,
        SphereProblem,
        EllipsoidProblem,
        SelectabilityProblem,
        UniformProblem,
        ThresholdProblem,
        VocabProblem,
        RMSNormProblem,
        InterlacingProblem,
        SoftmaxBallProblem,
        CausalProblem,
        RotaryProblem,
        SupportProblem,
        CentredProblem,
    )
}
#: the topics, in the order they appear on a problem set
TOPICS = tuple(PROBLEM_CLASSES)


def problem_from_json(data):
    """A problem object from its JSON form (as stored in ``problems.json``)."""
    require(isinstance(data, dict), InputError, f"a problem must be a JSON object, not {type(data).__name__}")
    topic = data.get("topic")
    cls = PROBLEM_CLASSES.get(topic)
    require(cls is not None, InputError, f"unknown problem topic {topic!r}; accepted: {', '.join(TOPICS)}")
    return cls.from_json(data)
