"""tools/fig9_allreduce_bound.py's search, on models whose best fit is worked out by hand."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import fig9_allreduce_bound as fb  # noqa: E402


def test_an_exact_model_is_found_with_its_figures():
    # Times s * bw + h * lat + o with s = 2, h = 0.5, o = 10: 2*50 + 0.5*20 + 10 = 120,
    # 2*80 + 0.5*40 + 10 = 190, 2*30 + 0.5*100 + 10 = 120. Three points, three unknowns, one
    # solution, with no error.
    model = {1: (50.0, 20.0), 2: (80.0, 40.0), 3: (30.0, 100.0)}
    paper = {1: 120.0, 2: 190.0, 3: 120.0}
    error, s, h, o = fb.best_fit(model, paper)
    assert error < 1e-6
    assert abs(s - 2) < 1e-3 and abs(h - 0.5) < 1e-3 and abs(o - 10) < 1e-2


def test_two_slices_the_model_cannot_tell_apart():
    # Both slices have the same model time t, whatever the figures; the paper has 100 and 300.
    # The worst error max(|t - 100| / 100, |t - 300| / 300) is least where they are equal:
    # t / 100 - 1 = 1 - t / 300, t = 150, error 0.5.
    model = {1: (10.0, 1.0), 2: (10.0, 1.0)}
    paper = {1: 100.0, 2: 300.0}
    error, s, h, o = fb.best_fit(model, paper)
    assert abs(error - 0.5) < 1e-6
    assert abs(s * 10 + h * 1 + o - 150) < 1e-3


def test_the_overhead_cannot_go_negative():
    # Times 100 s + o and 150 s + o against the paper's 100 and 200: s = 2, o = -100 would fit
    # exactly, but o >= 0 (and no latency part) keeps the second at most 1.5x the first, and a
    # positive o only brings the ratio toward 1. So o = 0, and the errors |s - 1| and
    # |0.75 s - 1| are equal at s = 8 / 7: error 1 / 7.
    model = {1: (100.0, 0.0), 2: (150.0, 0.0)}
    paper = {1: 100.0, 2: 200.0}
    error, s, _, o = fb.best_fit(model, paper)
    assert abs(error - 1 / 7) < 1e-6
    assert abs(s - 8 / 7) < 1e-4 and o < 1e-6
