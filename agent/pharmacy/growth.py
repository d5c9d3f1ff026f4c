"""Whether a child's weight is plausible for its age, from WHO weight-for-age medians.

Medians (kg) of the WHO Child Growth Standards (0-5 years, 2006) and the WHO Growth Reference (5-10 years, 2007),
boys and girls. The band is 0.6x the lower (girls') median (below -3 SD) to about +3 SD of the boys (HIGH_RATIO
times their median: 1.4x at 6 months to 2 years, widening to 2x at 10 years, as the WHO LMS tables skew), so a real
child is almost never refused while a weight typed in pounds (24 lb sent as 24 kg at 2 years: review 2 D10), a
temperature read as a weight, or an adult's weight given for a baby is. WHO gives no weight-for-age past 10 years
(BMI instead); from there only the lower bound holds, adults included: an adult "under 19 kg" is an age and a
weight swapped ("20 kg, 5 years" read as 5 kg at 20) or a unit error, never a weight to dose by.
"""

from __future__ import annotations

from bisect import bisect_right

# age in years: (girls' median, boys' median)
WHO_MEDIANS_KG: dict[float, tuple[float, float]] = {
    0.0: (3.2, 3.3),
    1 / 12: (4.2, 4.5),
    2 / 12: (5.1, 5.6),
    3 / 12: (5.8, 6.4),
    4 / 12: (6.4, 7.0),
    5 / 12: (6.9, 7.5),
    0.5: (7.3, 7.9),
    0.75: (8.2, 8.9),
    1.0: (8.9, 9.6),
    1.5: (10.2, 10.9),
    2.0: (11.5, 12.2),
    3.0: (13.9, 14.3),
    4.0: (16.1, 16.3),
    5.0: (18.2, 18.3),
    6.0: (20.2, 20.5),
    7.0: (22.4, 22.9),
    8.0: (25.0, 25.4),
    9.0: (28.1, 28.2),
    10.0: (31.2, 31.9),
}
LOW = 0.6
# age in years: about +3 SD of the boys' weight-for-age as a multiple of their median (WHO LMS: birth 5.0 kg,
# 1 year 13.3 kg, 2 years 17.1 kg)
HIGH_RATIO: dict[float, float] = {0.0: 1.5, 0.5: 1.4, 2.0: 1.41, 3.0: 1.45, 5.0: 1.52, 7.0: 1.7, 10.0: 2.0}
_AGES = sorted(WHO_MEDIANS_KG)


def _ratio(age: float) -> float:
    ages = sorted(HIGH_RATIO)
    age = min(age, ages[-1])
    i = bisect_right(ages, age) - 1
    if i == len(ages) - 1:
        return HIGH_RATIO[ages[i]]
    a, b = ages[i], ages[i + 1]
    return HIGH_RATIO[a] + (HIGH_RATIO[b] - HIGH_RATIO[a]) * (age - a) / (b - a)


def _median(age: float, side: int) -> float:
    age = min(age, _AGES[-1])
    i = bisect_right(_AGES, age) - 1
    if i == len(_AGES) - 1:
        return WHO_MEDIANS_KG[_AGES[i]][side]
    a, b = _AGES[i], _AGES[i + 1]
    lo, hi = WHO_MEDIANS_KG[a][side], WHO_MEDIANS_KG[b][side]
    return lo + (hi - lo) * (age - a) / (b - a)


def weight_band(age_years: float) -> tuple[float, float | None]:
    """(lowest, highest) plausible weight in kg for age_years; highest is None past 10 years."""
    low = round(LOW * _median(age_years, 0), 1)
    high = round(_ratio(age_years) * _median(age_years, 1), 1) if age_years <= _AGES[-1] else None
    return low, high


def implausible(weight_kg: float, age_years: float) -> tuple[float, float | None] | None:
    """The band weight_kg falls outside of for age_years, or None when it is plausible."""
    band = weight_band(age_years)
    low, high = band
    return band if weight_kg < low or (high is not None and weight_kg > high) else None
