"""Derives the Winograd F(m x m, 3 x 3) transforms from their interpolation points and writes
transforms_1d.inc (straight-line 1-D transforms, generic over a vector type through macros).

    python flexdelegate/native/kernels/winograd/gen_transforms.py   # rewrites transforms_1d.inc

Construction (Toom-Cook with a point at infinity), points p_0..p_{n-2} finite, n = m + 2:
    A^T[i][j] = p_j^i (j < n-1),  A^T[i][n-1] = [i == m-1]
    G[j][k]   = p_j^k (j < n-1),  G[n-1][k]   = [k == 2]
and B^T is solved exactly (rational arithmetic) from the defining identity of 1-D correlation
    sum_j A^T[i][j] G[j][k] B^T[j][l] = [l == i + k]   for all i < m, k < 3, l < n,
then each B^T row is scaled to coprime integers (the scale moves into the matching G row), so
the input transform has small integer coefficients. The identity is re-checked exactly.

Points (chosen by measured float32 error of the full 2-D pipeline on random data, C = 512):
    F(4,3): 0, +-1, +-2, inf            (max rel. error ~5e-6; +-1/2 variants are equal or worse)
    F(6,3): 0, +-1, +-2, +-1/2, inf     (~1.7e-5; 0,+-1,+-2,+-3 gives ~2e-3, +-1/4 sets ~1e-4)
Symmetric pairs +-p let the generated code share even/odd partial sums: B^T rows of a pair are
E + O and E - O, and A^T columns of a pair are combined as m_+ + m_- and m_+ - m_-."""
from fractions import Fraction as Fr
from math import gcd, lcm
import pathlib

POINTS = {
    4: [Fr(0), Fr(1), Fr(-1), Fr(2), Fr(-2)],
    6: [Fr(0), Fr(1), Fr(-1), Fr(2), Fr(-2), Fr(1, 2), Fr(-1, 2)],
}
R = 3


def _solve(mat, rhs):
    """Exact solution of a consistent (possibly overdetermined) linear system."""
    rows = [list(r) + [b] for r, b in zip(mat, rhs)]
    ncol = len(mat[0])
    piv, r0 = [], 0
    for c in range(ncol):
        p = next((i for i in range(r0, len(rows)) if rows[i][c] != 0), None)
        if p is None:
            continue
        rows[r0], rows[p] = rows[p], rows[r0]
        pv = rows[r0][c]
        rows[r0] = [v / pv for v in rows[r0]]
        for i in range(len(rows)):
            if i != r0 and rows[i][c] != 0:
                f = rows[i][c]
                rows[i] = [a - f * b for a, b in zip(rows[i], rows[r0])]
        piv.append(c)
        r0 += 1
    if r0 < ncol or any(rows[i][-1] != 0 for i in range(r0, len(rows))):
        raise ValueError("no unique solution")
    x = [Fr(0)] * ncol
    for i, c in enumerate(piv):
        x[c] = rows[i][-1]
    return x


def derive(m):
    pts = POINTS[m]
    n = m + R - 1
    at = [[pts[j] ** i for j in range(n - 1)] + [Fr(int(i == m - 1))] for i in range(m)]
    g = [[pts[j] ** k for k in range(R)] for j in range(n - 1)] + [[Fr(int(k == R - 1)) for k in range(R)]]
    bt = [[Fr(0)] * n for _ in range(n)]
    for l in range(n):
        mat, rhs = [], []
        for i in range(m):
            for k in range(R):
                mat.append([at[i][j] * g[j][k] for j in range(n)])
                rhs.append(Fr(int(l == i + k)))
        for j, v in enumerate(_solve(mat, rhs)):
            bt[j][l] = v
    for j in range(n):
        den = 1
        for v in bt[j]:
            den = lcm(den, v.denominator)
        num = 0
        for v in bt[j]:
            num = gcd(num, abs(int(v * den)))
        s = Fr(den, num)
        bt[j] = [v * s for v in bt[j]]
        g[j] = [v / s for v in g[j]]
    for i in range(m):
        for k in range(R):
            for l in range(n):
                assert sum(at[i][j] * g[j][k] * bt[j][l] for j in range(n)) == int(l == i + k)
    return at, g, bt


def _c(v):
    return f"{float(v)!r}f" if v.denominator == 1 or abs(v.denominator) in (2, 4, 8, 16, 32, 64) else None


def _lin(terms):
    """C expression for sum c * x over (c, x) with c != 0, using ADD/SUB/MUL/FMA macros."""
    terms = [(c, x) for c, x in terms if c != 0]
    assert terms
    base = next((t for t in terms if t[0] == 1), None) or next((t for t in terms if abs(t[0]) != 1), None) \
        or terms[0]
    rest = [t for t in terms if t is not base]
    c, x = base
    expr = x if c == 1 else f"WG_MUL({x}, {_c(c)})"
    for c, x in rest:
        if c == 1:
            expr = f"WG_ADD({expr}, {x})"
        elif c == -1:
            expr = f"WG_SUB({expr}, {x})"
        else:
            expr = f"WG_FMA({x}, {_c(c)}, {expr})"
    return expr


def gen_bt(m, bt):
    n = m + 2
    out = [f"/* out = B^T d for F({m},3): {n} inputs, {n} outputs. */",
           f"WG_FN void WG_NAME(bt{n})(WG_V *o, const WG_V *d) {{"]
    done = set()
    for a in range(n):
        if a in done:
            continue
        pair = None
        for b in range(a + 1, n):
            if b in done:
                continue
            for s in (1, -1):
                if any(bt[a][l] != 0 for l in range(1, n, 2)) and all(
                        bt[b][l] == s * (bt[a][l] if l % 2 == 0 else -bt[a][l]) for l in range(n)):
                    pair = (b, s)
                    break
            if pair:
                break
        if pair:
            b, s = pair
            ev = _lin([(bt[a][l], f"d[{l}]") for l in range(0, n, 2)])
            od = _lin([(bt[a][l], f"d[{l}]") for l in range(1, n, 2)])
            out.append(f"  {{ const WG_V e = {ev}, q = {od};")
            out.append(f"    o[{a}] = WG_ADD(e, q); o[{b}] = {'WG_SUB(e, q)' if s == 1 else 'WG_SUB(q, e)'}; }}")
            done |= {a, b}
        else:
            out.append(f"  o[{a}] = {_lin([(bt[a][l], f'd[{l}]') for l in range(n)])};")
            done.add(a)
    out.append("}")
    return out


def gen_at(m, at):
    n = m + 2
    out = [f"/* out = A^T t for F({m},3): {n} inputs, {m} outputs. */",
           f"WG_FN void WG_NAME(at{n})(WG_V *o, const WG_V *t) {{"]
    pairs, single = [], []
    used = set()
    for a in range(n):
        if a in used:
            continue
        b = next((b for b in range(a + 1, n) if b not in used and all(
            at[i][b] == (at[i][a] if i % 2 == 0 else -at[i][a]) for i in range(m))
            and any(at[i][a] != 0 for i in range(1, m, 2))), None)
        if b is None:
            single.append(a)
            used.add(a)
        else:
            pairs.append((a, b))
            used |= {a, b}
    for k, (a, b) in enumerate(pairs):
        out.append(f"  const WG_V s{k} = WG_ADD(t[{a}], t[{b}]), d{k} = WG_SUB(t[{a}], t[{b}]);")
    for i in range(m):
        terms = [(at[i][j], f"t[{j}]") for j in single]
        terms += [(at[i][a], f"{'s' if i % 2 == 0 else 'd'}{k}") for k, (a, b) in enumerate(pairs)]
        out.append(f"  o[{i}] = {_lin(terms)};")
    out.append("}")
    return out


def gen_g(m, g):
    n = m + 2
    def num(v):
        return f"{v.numerator}.0" if v.denominator == 1 else f"{v.numerator}.0 / {v.denominator}.0"
    rows = [("    {" + ", ".join(num(v) for v in r) + "},") for r in g]
    return [f"/* G for F({m},3): U = G g G^T. */", f"static const double wg_g{n}[{n}][3] = {{"] + rows + ["};"]


def main():
    lines = ["/* Generated by gen_transforms.py (do not edit): Winograd F(4,3) and F(6,3) transforms.",
             " * Points: F(4,3) 0,+-1,+-2,inf; F(6,3) 0,+-1,+-2,+-1/2,inf.",
             " * With WG_WANT_G: the filter transforms G as double tables wg_g6 / wg_g8.",
             " * Otherwise: the 1-D input (B^T) and output (A^T) transforms; the includer defines",
             " * WG_V (vector type), WG_FN (function prefix), WG_NAME(x) (name mangling), WG_ADD(a,b),",
             " * WG_SUB(a,b), WG_MUL(a,k) = a*k and WG_FMA(a,k,c) = a*k + c, k a float constant. */",
             "#ifdef WG_WANT_G"]
    for m in (4, 6):
        lines += gen_g(m, derive(m)[1])
    lines += ["#else"]
    for m in (4, 6):
        at, g, bt = derive(m)
        lines += [""] + gen_bt(m, bt) + [""] + gen_at(m, at)
    lines += ["#endif", ""]
    path = pathlib.Path(__file__).resolve().parent / "transforms_1d.inc"
    path.write_text("\n".join(lines))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
