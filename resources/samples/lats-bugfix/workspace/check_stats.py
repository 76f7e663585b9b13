"""The sample's tests: python check_stats.py exits 0 when they pass."""

from stats import mean, median

assert mean([1, 2, 3]) == 2, f"mean([1, 2, 3]) is {mean([1, 2, 3])}, expected 2"
assert mean([5]) == 5, f"mean([5]) is {mean([5])}, expected 5"
assert median([3, 1, 2]) == 2
assert median([4, 1, 3, 2]) == 2.5
print("ok")
