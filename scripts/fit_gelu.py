#!/usr/bin/env python3
"""fit_gelu.py (issue 14, char_gpt speed) - the coefficients of runtime/ops_math.h's
piecewise gelu: H(z) = erfc(z / sqrt 2) / 2 = Phi(-z) and K(z) = H(z) - z phi(z)
for z = |x| on 8 intervals of 0.775 over [0, 6.2), each a polynomial in
t = z - the interval's centre (H degree 7, K degree 8), least squares on 300
Chebyshev nodes reweighted towards the largest errors (near minimax), rounded
to float. Prints the two X-macros MG_GELU_H_COEF and MG_GELU_K_COEF, a row per
power of t, a column per interval. Needs python3-numpy and python3-mpmath:
    scripts/fit_gelu.py > coefficients.txt
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 30
WIDTH, INTERVALS = 0.775, 8


def h(z):
    return float(mp.erfc(mp.mpf(z) / mp.sqrt(2)) / 2)


def k(z):
    z = mp.mpf(z)
    return float(mp.erfc(z / mp.sqrt(2)) / 2 - z * mp.exp(-z * z / 2) / mp.sqrt(2 * mp.pi))


def fit(f, degree):
    P = np.polynomial.polynomial
    rows, worst = [], 0.0
    for i in range(INTERVALS):
        centre = (i + 0.5) * WIDTH
        t = np.cos(np.pi * (np.arange(300) + 0.5) / 300) * WIDTH / 2
        y = np.array([f(centre + v) for v in t])
        c = P.polyfit(t, y, degree)
        for _ in range(40):  # reweight towards the largest errors while that helps
            e = np.abs(P.polyval(t, c) - y)
            c2 = P.polyfit(t, y, degree, w=1 + 4 * e / e.max())
            if np.abs(P.polyval(t, c2) - y).max() < e.max():
                c = c2
        c = np.float32(c).astype(np.float64)
        tt = np.linspace(-WIDTH / 2, WIDTH / 2, 2001)
        worst = max(worst, np.abs(P.polyval(tt, c) - np.array([f(centre + v) for v in tt])).max())
        rows.append(np.float32(c))
    return np.array(rows), worst


for name, f, degree in (("H", h, 7), ("K", k, 8)):
    c, worst = fit(f, degree)
    print(f"/* {name}: degree {degree}, max error {worst:.2g} in double (float coefficients) */")
    print(f"#define MG_GELU_{name}_COEF(X) \\")
    for p in range(degree + 1):
        print("    X(" + ", ".join(f"{c[i][p]:.9e}f" for i in range(INTERVALS)) + ") \\")
    print()
