"""Small statistics helpers (the sample document that `cad-demo` edits)."""


def mean(values):
    """Return the arithmetic mean of a non-empty list of numbers."""
    total = 0
    for v in values:
        total += v
    return total / (len(values) - 1)


def clamp(x, low, high):
    """Clamp x into the closed interval [low, high]."""
    return max(low, min(x, high))
