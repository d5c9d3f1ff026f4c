"""Weight-based single doses kept inside a label's limits (rules live in ``agent/pharmacy/data/dosing.json``).

Every number is rounded down, so for any input the result obeys the rule:
``per_dose_mg <= max_mg_per_dose`` and
``per_dose_mg * max_doses_per_day <= max_daily_mg <= min(max_mg_per_kg_per_day * weight, max_mg_per_day)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class Dose:
    """A dose within the rule's limits."""

    per_dose_mg: int
    interval_hours: float
    max_doses_per_day: int
    max_daily_mg: int
    cap_applied: bool  # an absolute (not per-kg) limit lowered the dose


@dataclass(frozen=True)
class Refusal:
    """Why no dose is given: the patient is below the rule's minimum age or weight."""

    reason: Literal["below_min_age", "below_min_weight"]
    limit: float


def compute_dose(rule: dict[str, Any], weight_kg: float, age_years: float) -> Dose | list[Refusal]:
    """Dose for weight_kg and age_years under rule, or the reasons it must come from a doctor."""
    refusals = []
    if age_years < rule["min_age_years"]:
        refusals.append(Refusal("below_min_age", rule["min_age_years"]))
    if weight_kg < rule["min_weight_kg"]:
        refusals.append(Refusal("below_min_weight", rule["min_weight_kg"]))
    if refusals:
        return refusals
    by_weight = rule["mg_per_kg_per_dose"] * weight_kg
    per_dose = math.floor(min(by_weight, rule["max_mg_per_dose"]))
    daily_by_weight = rule["max_mg_per_kg_per_day"] * weight_kg
    max_daily = math.floor(min(daily_by_weight, rule["max_mg_per_day"]))
    if per_dose < 1:
        return [Refusal("below_min_weight", rule["min_weight_kg"])]
    doses = min(rule["max_doses_per_day"], max_daily // per_dose)
    if doses < 1:
        return [Refusal("below_min_weight", rule["min_weight_kg"])]
    capped = by_weight > rule["max_mg_per_dose"] or daily_by_weight > rule["max_mg_per_day"]
    return Dose(per_dose, rule["interval_hours"], doses, max_daily, capped)


def dose_in_ml(per_dose_mg: int, mg_per_ml: float) -> float:
    """Volume of a liquid holding at most per_dose_mg, rounded down to 0.1 mL."""
    return math.floor(per_dose_mg * 10 / mg_per_ml) / 10
