"""Runaway-gen detection stops loops and leaves ordinary repetitive code alone."""
from engine.decode.repetition import MIN_SPAN, repeating_unit


def test_a_line_repeated_over_and_over_is_caught():
    line = [11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 1]   # 13 tokens, one line
    assert repeating_unit([5, 6, 7] + line * 8) == len(line)
    assert repeating_unit([9] * (MIN_SPAN + 3)) == 1


def test_short_or_varied_repetition_is_not_a_loop():
    assert repeating_unit([0] * (MIN_SPAN - 1)) is None            # a short run of zeros
    assert repeating_unit([1, 2, 3] * 7) is None                   # under the span
    rows = [t for i in range(20) for t in (30, 31, 40 + i, 32, 1)]  # similar lines, each different
    assert repeating_unit(rows) is None
    unit = list(range(100, 190))                                    # a long unit, only twice
    assert repeating_unit(unit * 2) is None
