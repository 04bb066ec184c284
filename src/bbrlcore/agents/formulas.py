r"""Formulas of the OPPS-DS strategy spaces: tokens, RPN evaluation, formula sets.

A *formula* is a list of tokens in reverse Polish notation (RPN) over the variables
``X0 X1 X2`` (for formula agents: QMean, QSelf, QUniform) and the operators

======  =====  ==============================  =========================
symbol  arity  value (``a b OP``: b on top)     undefined (failure)
======  =====  ==============================  =========================
ABS     1      abs(a)                          never
LN      1      log(a)                          a <= 0
SQRT    1      sqrt(a)                         a < 0 (sqrt(-0.0) = -0.0)
INV     1      1 / a                           a == 0
OPP     1      -a                              never
SUB     2      a - b                           never
DIV     2      a / b                           b == 0
ADD2    2      a + b                           never
MUL2    2      a * b                           never
MIN2    2      b unless a < b                  never
MAX2    2      b unless a > b                  never
======  =====  ==============================  =========================

Internally a formula is an integer array of token codes
(:data:`SYMBOLS` gives the code of each symbol) that numba kernels evaluate with
:func:`eval_rpn`; :func:`infix` renders it readably (``max(Q0, Q2)``).

**Formula sets** (the paper's F2...F6). All valid RPN sequences of size
1..``max_size`` are enumerated by increasing size, each size in odometer order over the
reference's alphabet order ``MAX2 MIN2 MUL2 ADD2 DIV SUB OPP INV SQRT LN ABS X2 X1 X0``.
Each candidate is evaluated at ``n_points`` random points of [lo, hi]^3; a candidate that is
undefined at any point is discarded; the others are grouped by their *key*, the stable
argsort of their values at the points, and the first formula met in generation order
represents its group. The set is the representatives sorted by key (lexicographically);
the index in that order is the arm index of OPPS-DS.

The enumeration runs depth-first inside one numba kernel with incremental evaluation (a
prefix's stack values are computed once and shared by all its completions, and a prefix
that is undefined at a point prunes its whole subtree, whose formulas would all be
discarded). Keys are deduplicated through a 64-bit hash table with full-key comparison.

Points come from ``numpy.random.default_rng(seed)`` (uniform, point-major). With
``reference_rng=True`` they come from glibc ``rand()`` through ctypes exactly as the C++
reference draws them, so ``seed=1`` reproduces the reference files
byte for byte.

References
----------
Castronovo, Maes, Fonteneau and Ernst, "Learning exploration/exploitation strategies for
single trajectory reinforcement learning", EWRL 2012 (the formula spaces of OPPS-DS).
Castronovo et al., "Benchmarking for Bayesian Reinforcement Learning", PLOS ONE 2016.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from numba import njit

from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts

# ---------------------------------------------------------------------------------------
# Tokens

#: Token symbols; the index is the token code used in RPN arrays.
SYMBOLS: tuple[str, ...] = (
    "X0", "X1", "X2", "ABS", "LN", "SQRT", "INV", "OPP",
    "SUB", "DIV", "ADD2", "MUL2", "MIN2", "MAX2",
)  # fmt: skip
CODE: dict[str, int] = {s: i for i, s in enumerate(SYMBOLS)}
#: Number of operands of each token code.
ARITY = np.array([0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2], dtype=np.int64)
N_VARIABLES = 3
#: The reference's generation alphabet order, as token codes:
#: MAX2 MIN2 MUL2 ADD2 DIV SUB OPP INV SQRT LN ABS X2 X1 X0.
ALPHABET = np.array([13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0], dtype=np.int64)

_X0, _X1, _X2, _ABS, _LN, _SQRT, _INV, _OPP = 0, 1, 2, 3, 4, 5, 6, 7
_SUB, _DIV, _ADD2, _MUL2, _MIN2, _MAX2 = 8, 9, 10, 11, 12, 13

#: Default settings of formula-set generation and the default seed of the
#: named sets (``formula_set=F3`` is ``generate(3, seed=DEFAULT_SEED)``).
DEFAULT_N_POINTS = 1000
DEFAULT_RANGE = (-100.0, 100.0)
DEFAULT_SEED = 1
#: Version of the generation algorithm (part of the cache file name).
GENERATOR_VERSION = 1


@njit(cache=True)
def apply_unary(t, a):
    """Apply unary token ``t`` to ``a``; returns ``(value, ok)``."""
    if t == _ABS:
        return abs(a), True
    if t == _LN:
        if a <= 0.0:
            return np.nan, False
        return np.log(a), True
    if t == _SQRT:
        if a < 0.0:
            return np.nan, False
        return np.sqrt(a), True
    if t == _INV:
        if a == 0.0:
            return np.nan, False
        return 1.0 / a, True
    # OPP
    return -a, True


@njit(cache=True)
def apply_binary(t, a, b):
    """Apply binary token ``t`` to ``a`` (pushed first) and ``b`` (top): ``(value, ok)``."""
    if t == _SUB:
        return a - b, True
    if t == _DIV:
        if b == 0.0:
            return np.nan, False
        return a / b, True
    if t == _ADD2:
        return a + b, True
    if t == _MUL2:
        return a * b, True
    if t == _MIN2:
        return (a if a < b else b), True
    # MAX2
    return (a if a > b else b), True


@njit(cache=True)
def eval_rpn(codes, n, x0, x1, x2, stack):
    """Evaluate the RPN formula ``codes[:n]`` at (x0, x1, x2).

    ``stack`` is a scratch float64 array of length >= n. Returns ``(value, ok)``; ``ok`` is
    False when a token is undefined.
    """
    d = 0
    for i in range(n):
        t = codes[i]
        if t <= _X2:
            if t == _X0:
                stack[d] = x0
            elif t == _X1:
                stack[d] = x1
            else:
                stack[d] = x2
            d += 1
        elif t <= _OPP:
            v, ok = apply_unary(t, stack[d - 1])
            if not ok:
                return np.nan, False
            stack[d - 1] = v
        else:
            v, ok = apply_binary(t, stack[d - 2], stack[d - 1])
            if not ok:
                return np.nan, False
            d -= 1
            stack[d - 1] = v
    return stack[0], True


# ---------------------------------------------------------------------------------------
# Formula objects: parsing, validity, rendering


def parse(text: str, where: str = "formula") -> np.ndarray:
    """Token codes (int64 array) of an RPN string such as ``"X1 X0 MAX2"``.

    Raises :class:`BBRLError` for unknown symbols or invalid RPN.
    """
    symbols = text.split()
    codes = []
    for s in symbols:
        if s not in CODE:
            known = " ".join(SYMBOLS)
            raise BBRLError(f"{where}: unknown token {s!r} in {text!r} (known: {known})")
        codes.append(CODE[s])
    arr = np.array(codes, dtype=np.int64)
    if not is_valid(arr):
        raise BBRLError(f"{where}: {text!r} is not a valid RPN formula")
    return arr


def is_valid(codes: np.ndarray) -> bool:
    """Standard RPN well-formedness: every prefix leaves >= 1 value, the whole exactly 1."""
    d = 0
    if len(codes) == 0:
        return False
    for t in codes:
        a = int(ARITY[t])
        if d < a:
            return False
        d += 1 - a
    return d == 1


def to_rpn(codes: np.ndarray) -> str:
    """RPN text of token codes (symbols joined by single spaces)."""
    return " ".join(SYMBOLS[int(t)] for t in codes)


_PREC_ATOM, _PREC_NEG, _PREC_MUL, _PREC_ADD = 100, 3, 2, 1


def infix(codes: np.ndarray | str, names: tuple[str, ...] = ("Q0", "Q1", "Q2")) -> str:
    """Readable infix rendering, e.g. ``max(Q0, Q2)`` or ``Q1 - 1 / Q0``.

    The rendering is also a Python expression with the same value (functions ``abs``,
    ``ln``, ``sqrt``, ``min``, ``max``; parentheses keep the evaluation order exact).
    """
    if isinstance(codes, str):
        codes = parse(codes)
    stack: list[tuple[str, int]] = []

    def wrap(item: tuple[str, int], need: int, strict: bool) -> str:
        s, p = item
        if p < need or (strict and p == need):
            return f"({s})"
        return s

    for t in codes:
        t = int(t)
        sym = SYMBOLS[t]
        if t <= _X2:
            stack.append((names[t], _PREC_ATOM))
        elif ARITY[t] == 1:
            a = stack.pop()
            if t == _OPP:
                stack.append((f"-{wrap(a, _PREC_NEG, False)}", _PREC_NEG))
            elif t == _INV:
                stack.append((f"1 / {wrap(a, _PREC_MUL, True)}", _PREC_MUL))
            else:
                stack.append((f"{sym.lower()}({a[0]})", _PREC_ATOM))
        else:
            b = stack.pop()
            a = stack.pop()
            if t in (_MIN2, _MAX2):
                stack.append((f"{sym[:3].lower()}({a[0]}, {b[0]})", _PREC_ATOM))
            else:
                op, prec = {
                    _SUB: ("-", _PREC_ADD),
                    _ADD2: ("+", _PREC_ADD),
                    _DIV: ("/", _PREC_MUL),
                    _MUL2: ("*", _PREC_MUL),
                }[t]
                s = f"{wrap(a, prec, False)} {op} {wrap(b, prec, True)}"
                stack.append((s, prec))
    return stack[0][0]


def variables_used(codes: np.ndarray) -> np.ndarray:
    """Boolean array of length 3: which of X0, X1, X2 the formula reads."""
    used = np.zeros(N_VARIABLES, dtype=np.bool_)
    for t in codes:
        if int(t) < N_VARIABLES:
            used[int(t)] = True
    return used


def evaluate(codes: np.ndarray | str, x: tuple[float, float, float]) -> float:
    """Value of a formula at ``x`` (NaN when undefined); convenience for Python callers."""
    if isinstance(codes, str):
        codes = parse(codes)
    codes = np.asarray(codes, dtype=np.int64)
    v, ok = eval_rpn(codes, len(codes), float(x[0]), float(x[1]), float(x[2]),
                     np.empty(max(len(codes), 1)))
    return float(v) if ok else math.nan


# ---------------------------------------------------------------------------------------
# Formulas as people write them: the paper's notation or RPN tokens

#: Variable names accepted in the paper's notation, as token codes (case-insensitive;
#: ``Q_2(x, u)`` and ``Q2(x,u)`` are ``Q2``).
_VARIABLE_NAMES = {"q0": _X0, "q1": _X1, "q2": _X2, "x0": _X0, "x1": _X1, "x2": _X2,
                   "qmean": _X0, "qself": _X1, "quniform": _X2}
_FUNCTIONS = {"abs": (_ABS, 1), "ln": (_LN, 1), "sqrt": (_SQRT, 1), "inv": (_INV, 1),
              "opp": (_OPP, 1), "min": (_MIN2, 2), "max": (_MAX2, 2)}
_LEXEME = re.compile(r"\s*(?:(?P<name>\\?[A-Za-z_][A-Za-z_0-9]*)|(?P<num>\d+(?:\.\d*)?)"
                     r"|(?P<op>[-+*/(),|]))")
# the literal 1 of ``1 / a`` (the INV token) is held as [-position] until that division


def _is_one(codes: list[int]) -> bool:
    return len(codes) == 1 and codes[0] < 0


class _Infix:
    """Recursive-descent parser of the paper's notation into token codes (RPN order)."""

    def __init__(self, text: str, where: str) -> None:
        self.text, self.where = text, where
        self.toks: list[tuple[str, str, int]] = []  # (kind, lexeme, 1-based position)
        body = text.replace("$", " ")
        i = 0
        while i < len(body):
            if body[i:].strip() == "":
                break
            m = _LEXEME.match(body, i)
            if m is None or m.end() == i:
                j = len(body) - len(body[i:].lstrip())
                self.fail(body[j], j + 1, "not part of a formula")
            kind = m.lastgroup or "op"
            self.toks.append((kind, m.group(kind), m.start(kind) + 1))
            i = m.end()
        self.k = 0

    def fail(self, tok: str, pos: int, why: str) -> None:
        at = f"at the end (position {pos})" if tok == "" else f"{tok!r} at position {pos}"
        raise BBRLError(f"{self.where}={self.text!r}: {at}: {why}")

    def peek(self) -> tuple[str, str, int]:
        return self.toks[self.k] if self.k < len(self.toks) else ("end", "", len(self.text) + 1)

    def take(self, lexeme: str, why: str) -> None:
        kind, lx, pos = self.peek()
        if lx != lexeme:
            self.fail(lx, pos, why)
        self.k += 1

    def parse(self) -> list[int]:
        out = self.expr()
        kind, lx, pos = self.peek()
        if kind != "end":
            self.fail(lx, pos, "unexpected after a complete formula (missing operator?)")
        if _is_one(out):
            self.fail("1", -out[0], "a constant is not a formula (only 1 / a, the INV token)")
        return out

    def expr(self) -> list[int]:
        out = self.term()
        while self.peek()[1] in ("+", "-"):
            _, op, pos = self.peek()
            self.k += 1
            rhs = self.term()
            out = self.operand(out, pos) + self.operand(rhs, pos) + [_ADD2 if op == "+"
                                                                     else _SUB]
        return out

    def term(self) -> list[int]:
        out = self.unary()
        while self.peek()[1] in ("*", "/"):
            _, op, pos = self.peek()
            self.k += 1
            rhs = self.unary()
            if op == "/" and _is_one(out):
                out = self.operand(rhs, pos) + [_INV]
            else:
                out = self.operand(out, pos) + self.operand(rhs, pos) + [
                    _MUL2 if op == "*" else _DIV]
        return out

    def operand(self, codes: list[int], pos: int) -> list[int]:
        if _is_one(codes):
            self.fail("1", -codes[0], "a constant is not a formula token (only 1 / a, the INV "
                      "token, may use one)")
        return codes

    def unary(self) -> list[int]:
        _, lx, pos = self.peek()
        if lx == "-":
            self.k += 1
            return self.operand(self.unary(), pos) + [_OPP]
        if lx == "+":
            self.k += 1
            return self.unary()
        return self.primary()

    def primary(self) -> list[int]:
        kind, lx, pos = self.peek()
        if kind == "end":
            self.fail("", pos, "expected a variable (Q0, Q1, Q2), a function "
                      "or '('")
        self.k += 1
        if kind == "num":
            if float(lx) != 1.0:
                self.fail(lx, pos, "a constant is not a formula token (only 1 / a, the INV "
                          "token)")
            return [-pos]
        if lx == "(":
            out = self.expr()
            self.take(")", "expected ')'")
            return out
        if lx == "|":
            out = self.operand(self.expr(), pos)
            self.take("|", "expected '|' closing the absolute value")
            return out + [_ABS]
        if kind == "name":
            name = lx.lstrip("\\").lower()
            if name.replace("_", "") in _VARIABLE_NAMES:
                name = name.replace("_", "")
                self.arguments_xu()
                return [_VARIABLE_NAMES[name]]
            if name in _FUNCTIONS:
                code, arity = _FUNCTIONS[name]
                self.take("(", f"expected '(' after {name}")
                out = self.operand(self.expr(), pos)
                for _ in range(arity - 1):
                    self.take(",", f"{name} takes {arity} arguments: expected ','")
                    out += self.operand(self.expr(), pos)
                self.take(")", f"expected ')' closing {name}(...)")
                return out + [code]
            known = ", ".join([*_FUNCTIONS, "Q0", "Q1", "Q2"])
            self.fail(lx, pos, f"unknown name (known: {known})")
        self.fail(lx, pos, "expected a variable (Q0, Q1, Q2), a function or '('")
        return []  # unreachable

    def arguments_xu(self) -> None:
        """Skip the ``(x, u)`` of the paper's ``Q_2(x, u)``."""
        want = ["(", "x", ",", "u", ")"]
        got = [t[1].lower() for t in self.toks[self.k:self.k + 5]]
        if got == want:
            self.k += 5


def parse_formula(text: str, where: str = "formula") -> np.ndarray:
    r"""Token codes of a formula written in the paper's notation or as RPN tokens.

    The paper's notation (the tables of §5.3): variables ``Q0 Q1 Q2`` (QMean, QSelf,
    QUniform; also ``Q_2(x, u)``, ``X2``, ``QUniform``), ``+ - * /``, unary ``-``, ``1 / a``
    (the INV token), ``|a|``, ``abs ln sqrt inv opp min max`` and parentheses; ``$`` and
    ``\`` of LaTeX are ignored. The usual precedences: unary minus, then ``* /``, then
    ``+ -``, left to right. RPN: the tokens of :data:`SYMBOLS` separated by spaces or
    ``_`` (``X2 X0 DIV``, the canonical ``X2_X0_DIV``). Constants other than the ``1`` of
    ``1 / a`` are not tokens. A malformed formula is one :class:`BBRLError` naming the
    token and its position.

    Examples
    --------
    >>> to_rpn(parse_formula("Q2/Q0")), to_rpn(parse_formula("max(Q0, Q2)"))
    ('X2 X0 DIV', 'X0 X2 MAX2')
    >>> to_rpn(parse_formula(r"$\max(Q_0(x, u), Q_1(x, u))$"))
    'X0 X1 MAX2'
    >>> to_rpn(parse_formula("1 / -Q0")), to_rpn(parse_formula("|Q1| - sqrt(Q2)"))
    ('X0 OPP INV', 'X1 ABS X2 SQRT SUB')
    >>> to_rpn(parse_formula("X1_X2_ADD2"))
    'X1 X2 ADD2'
    >>> parse_formula("Q2 // Q0")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bbrlcore.errors.BBRLError: formula='Q2 // Q0': '/' at position 5: expected a variable...
    """
    if not isinstance(text, str) or not text.strip():
        raise BBRLError(f"{where}={text!r}: empty formula")
    words = text.split()
    parts = re.split(r"[\s_]+", text.strip())
    # RPN: words of letters and digits only, some of them RPN tokens, and more than one
    # (a lone word such as Q0 or X0 reads the same in both notations)
    rpn_like = bool(re.fullmatch(r"[A-Za-z0-9_\s]+", text)) and (
        (len(words) > 1 and any(p.upper() in CODE for p in parts))
        or (len(parts) > 1 and all(p.upper() in CODE for p in parts)))
    if not rpn_like:
        return np.array(_Infix(text, where).parse(), dtype=np.int64)
    codes: list[int] = []
    depth = 0
    pos = 0
    for p in parts:
        pos = text.index(p, pos) + 1
        sym = p.upper()
        if sym not in CODE:
            raise BBRLError(f"{where}={text!r}: {p!r} at position {pos}: unknown RPN token "
                            f"(known: {' '.join(SYMBOLS)})")
        c = CODE[sym]
        a = int(ARITY[c])
        if depth < a:
            raise BBRLError(f"{where}={text!r}: {p!r} at position {pos}: needs {a} operands, "
                            f"has {depth}")
        depth += 1 - a
        codes.append(c)
        pos += len(p) - 1
    if depth != 1:
        raise BBRLError(f"{where}={text!r}: leaves {depth} values on the stack (an operator "
                        f"is missing after {parts[-1]!r})")
    return np.array(codes, dtype=np.int64)


def canonical(codes: np.ndarray | str) -> str:
    """The canonical text of a formula: its RPN tokens joined by ``_`` (safe in file names,
    agent ids and Snakemake wildcards); a string is parsed first (:func:`parse_formula`).

    Examples
    --------
    >>> canonical("max(Q0, Q2)"), canonical("Q0 + Q2"), canonical("X1 X0 DIV")
    ('X0_X2_MAX2', 'X0_X2_ADD2', 'X1_X0_DIV')
    """
    if isinstance(codes, str):
        codes = parse_formula(codes)
    return "_".join(SYMBOLS[int(t)] for t in codes)


def swapped_operands(formula: str) -> str | None:
    """The formula with the two operands of its last operator exchanged, when that
    operator is not commutative (DIV, SUB), in canonical form; else None.

    The tables' notation (``Q2/Q0``) does not say in which order the original printed the
    operands of an RPN formula; ``X2 X0 DIV`` is X2/X0, and the swapped
    reading is the other candidate.

    Examples
    --------
    >>> swapped_operands("Q2/Q0"), swapped_operands("Q1 - max(Q0, Q2)")
    ('X0_X2_DIV', 'X0_X2_MAX2_X1_SUB')
    >>> swapped_operands("Q0 + Q2") is None
    True
    """
    codes = [int(c) for c in parse_formula(formula)]
    if SYMBOLS[codes[-1]] not in ("DIV", "SUB"):
        return None
    need, start = 1, len(codes) - 1
    for j in range(len(codes) - 2, -1, -1):  # the top operand ends just before the operator
        need += int(ARITY[codes[j]]) - 1
        if need == 0:
            start = j
            break
    a, b = codes[:start], codes[start:-1]
    return canonical(np.array(b + a + codes[-1:], dtype=np.int64))


# ---------------------------------------------------------------------------------------
# Generation and reduction (numba)


@njit(cache=True)
def _order_hash(v):
    """64-bit hash of the bits (v[p] <= v[p+1]), p = 0..n-2 (a function of the key)."""
    h = np.uint64(1469598103934665603)
    prime = np.uint64(1099511628211)
    n = v.shape[0]
    word = np.uint64(0)
    nb = 0
    for p in range(n - 1):
        word = (word << np.uint64(1)) | np.uint64(1 if v[p] <= v[p + 1] else 0)
        nb += 1
        if nb == 64:
            h = (h ^ word) * prime
            word = np.uint64(0)
            nb = 0
    h = (h ^ word) * prime
    h = (h ^ np.uint64(n)) * prime
    return h


@njit(cache=True)
def _ordered_along(v, key):
    """True iff ``key`` is the stable argsort of ``v``."""
    n = v.shape[0]
    for k in range(n - 1):
        p = np.int64(key[k])
        q = np.int64(key[k + 1])
        a = v[p]
        b = v[q]
        if a < b or (a == b and p < q):
            continue
        return False
    return True


@njit(cache=True)
def stable_argsort(v, bits, tmp_bits, idx, tmp_idx, count):
    """Stable argsort of float64 ``v`` into ``idx`` (LSD radix sort on 8-bit digits).

    Values are mapped to order-preserving unsigned integers (``-0.0`` counts as ``0.0``,
    so equal values keep their index order exactly like a stable comparison sort).
    ``bits``/``tmp_bits`` (uint64), ``tmp_idx`` (int64) and ``count`` (int64, 256) are
    scratch arrays of the right lengths.
    """
    n = v.shape[0]
    sign = np.uint64(0x8000000000000000)
    fv = tmp_bits.view(np.float64)
    for i in range(n):
        fv[i] = v[i] + 0.0  # -0.0 -> +0.0
    for i in range(n):
        b = tmp_bits[i]
        if b & sign:
            b = ~b
        else:
            b = b | sign
        bits[i] = b
        idx[i] = i
    for shift in range(0, 64, 8):
        sh = np.uint64(shift)
        count[:] = 0
        for i in range(n):
            count[np.int64((bits[i] >> sh) & np.uint64(255))] += 1
        if count.max() == n:
            continue  # all digits equal: the pass would not move anything
        tot = 0
        for d in range(256):
            c = count[d]
            count[d] = tot
            tot += c
        for i in range(n):
            d = np.int64((bits[i] >> sh) & np.uint64(255))
            j = count[d]
            count[d] = j + 1
            tmp_bits[j] = bits[i]
            tmp_idx[j] = idx[i]
        for i in range(n):
            bits[i] = tmp_bits[i]
            idx[i] = tmp_idx[i]


@njit(cache=True)
def _apply_vec(t, a, b, out):
    """Apply token ``t`` elementwise (``b`` ignored for unary tokens); False on failure."""
    n = out.shape[0]
    if t == _ABS:
        for p in range(n):
            out[p] = abs(a[p])
    elif t == _LN:
        for p in range(n):
            if a[p] <= 0.0:
                return False
        for p in range(n):
            out[p] = np.log(a[p])
    elif t == _SQRT:
        for p in range(n):
            if a[p] < 0.0:
                return False
        for p in range(n):
            out[p] = np.sqrt(a[p])
    elif t == _INV:
        for p in range(n):
            if a[p] == 0.0:
                return False
        for p in range(n):
            out[p] = 1.0 / a[p]
    elif t == _OPP:
        for p in range(n):
            out[p] = -a[p]
    elif t == _SUB:
        for p in range(n):
            out[p] = a[p] - b[p]
    elif t == _DIV:
        for p in range(n):
            if b[p] == 0.0:
                return False
        for p in range(n):
            out[p] = a[p] / b[p]
    elif t == _ADD2:
        for p in range(n):
            out[p] = a[p] + b[p]
    elif t == _MUL2:
        for p in range(n):
            out[p] = a[p] * b[p]
    elif t == _MIN2:
        for p in range(n):
            out[p] = a[p] if a[p] < b[p] else b[p]
    else:
        for p in range(n):
            out[p] = a[p] if a[p] > b[p] else b[p]
    return True


@njit(cache=True)
def _generate_kernel(max_size, pts):
    """Enumerate, evaluate and reduce; returns (rep_codes, rep_len, rep_keys, valid_per_size).

    ``pts`` has shape (3, n_points). ``valid_per_size[s]`` counts formulas of size s that
    are defined at every point.
    """
    npts = pts.shape[1]
    nA = ALPHABET.shape[0]
    nv = 3
    vals = np.empty((max_size + nv, npts))
    for k in range(nv):
        vals[k, :] = pts[k, :]
    stk = np.zeros((max_size + 1, max_size + 1), dtype=np.int64)
    depth = np.zeros(max_size + 1, dtype=np.int64)
    sym = np.zeros(max_size + 1, dtype=np.int64)
    valid_per_size = np.zeros(max_size + 1, dtype=np.int64)
    bits = np.empty(npts, dtype=np.uint64)
    tmp_bits = np.empty(npts, dtype=np.uint64)
    idx = np.empty(npts, dtype=np.int64)
    tmp_idx = np.empty(npts, dtype=np.int64)
    count = np.zeros(256, dtype=np.int64)
    key = np.empty(npts, dtype=np.uint16)

    cap = 1024
    rep_codes = np.zeros((cap, max_size), dtype=np.int8)
    rep_len = np.zeros(cap, dtype=np.int64)
    rep_keys = np.zeros((cap, npts), dtype=np.uint16)
    rep_hash = np.zeros(cap, dtype=np.uint64)
    n_reps = 0
    tcap = 4096
    table = -np.ones(tcap, dtype=np.int64)

    for s in range(1, max_size + 1):
        i = 0
        sym[0] = -1
        depth[0] = 0
        while i >= 0:
            sym[i] += 1
            if sym[i] >= nA:
                i -= 1
                continue
            t = ALPHABET[sym[i]]
            ar = ARITY[t]
            d0 = depth[i]
            if d0 < ar:
                continue
            d = d0 + 1 - ar
            if d - 1 > s - 1 - i:
                continue
            for k in range(d0 - ar):
                stk[i + 1, k] = stk[i, k]
            if ar == 0:
                stk[i + 1, d - 1] = t
            else:
                row = nv + i
                a_row = stk[i, d0 - ar]
                b_row = stk[i, d0 - 1]
                ok = _apply_vec(t, vals[a_row], vals[b_row], vals[row])
                if not ok:
                    continue
                stk[i + 1, d - 1] = row
            depth[i + 1] = d
            if i < s - 1:
                i += 1
                sym[i] = -1
                continue
            # a complete formula, defined at every point
            valid_per_size[s] += 1
            v = vals[stk[i + 1, 0]]
            # The pattern of (v[p] <= v[p+1]) is fixed by the key (ties keep index order),
            # so it hashes the equivalence class without sorting; a hit is confirmed in
            # O(n) by checking that v is ordered along the representative's key.
            h = _order_hash(v)
            slot = np.int64(h & np.uint64(tcap - 1))
            found = False
            while table[slot] >= 0:
                r = table[slot]
                if rep_hash[r] == h and _ordered_along(v, rep_keys[r]):
                    found = True
                    break
                slot = (slot + 1) & (tcap - 1)
            if not found:
                stable_argsort(v, bits, tmp_bits, idx, tmp_idx, count)
                for p in range(npts):
                    key[p] = idx[p]
            if found:
                continue
            if n_reps == cap:
                cap *= 2
                nc = np.zeros((cap, max_size), dtype=np.int8)
                nc[:n_reps] = rep_codes[:n_reps]
                rep_codes = nc
                nl = np.zeros(cap, dtype=np.int64)
                nl[:n_reps] = rep_len[:n_reps]
                rep_len = nl
                nk = np.zeros((cap, npts), dtype=np.uint16)
                nk[:n_reps] = rep_keys[:n_reps]
                rep_keys = nk
                nh = np.zeros(cap, dtype=np.uint64)
                nh[:n_reps] = rep_hash[:n_reps]
                rep_hash = nh
            for k in range(s):
                rep_codes[n_reps, k] = ALPHABET[sym[k]]
            rep_len[n_reps] = s
            rep_keys[n_reps, :] = key
            rep_hash[n_reps] = h
            table[slot] = n_reps
            n_reps += 1
            if 2 * n_reps > tcap:  # grow and rehash
                tcap *= 2
                table = -np.ones(tcap, dtype=np.int64)
                for r in range(n_reps):
                    sl = np.int64(rep_hash[r] & np.uint64(tcap - 1))
                    while table[sl] >= 0:
                        sl = (sl + 1) & (tcap - 1)
                    table[sl] = r
    return rep_codes[:n_reps], rep_len[:n_reps], rep_keys[:n_reps], valid_per_size


def reference_points(n_points: int, lo: float, hi: float, seed: int) -> np.ndarray:
    """The reference's points from glibc ``rand()``; shape (3, n_points).

    Raises :class:`BBRLError` where glibc is not available.
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        srand, rand = libc.srand, libc.rand
    except (OSError, AttributeError, TypeError):
        raise BBRLError("--reference-rng: the C library's rand() is not available") from None
    srand.argtypes = [ctypes.c_uint]
    rand.restype = ctypes.c_int
    rand_max = 2147483647.0
    srand(int(seed) % 2**32)
    v = math.floor((rand() / rand_max) * -2147483648.0)
    srand(int(v) % 2**32)
    flat = np.array([rand() for _ in range(3 * n_points)], dtype=np.float64)
    flat = flat / rand_max * (hi - lo) + lo
    return np.ascontiguousarray(flat.reshape(n_points, 3).T)


def numpy_points(n_points: int, lo: float, hi: float, seed: int) -> np.ndarray:
    """Points from ``numpy.random.default_rng(seed)``, point-major; shape (3, n_points)."""
    rng = np.random.default_rng(seed)
    flat = rng.uniform(lo, hi, size=(n_points, 3))
    return np.ascontiguousarray(flat.T)


# ---------------------------------------------------------------------------------------
# Formula sets


#: The columns of a formula-set artefact: type and meaning (the documentation's column
#: reference is generated from this; a test checks it against a written formula set).
FORMULA_SET_COLUMNS: dict[str, tuple[str, str]] = {
    "arm": ("Int64", "the formula's index: its arm in OPPS-DS's bandit"),
    "rpn": ("String", "the formula in the original's RPN tokens (`X2 X0 DIV`)"),
    "infix": ("String", "the same in the paper's notation (`Q2/Q0`)"),
    "size": ("Int64", "its size: the number of tokens"),
}


@dataclass
class FormulaSet:
    """An ordered set of formulas (the arms of OPPS-DS).

    ``codes`` is an int64 array (n_formulas, max_len) padded with -1, ``lengths`` the sizes.
    ``label`` names the set in agent ids (never a path): ``F3@s1`` for the set generated
    with max size 3 and seed 1 (numpy points), ``F5@ref1`` with the reference RNG, a
    suffix ``-p{n}`` / ``-r{lo}:{hi}`` for non-default points or range, and
    ``F5@dat-{sha8}`` for an imported file (first 8 hex digits of the SHA-256 of its
    formulas).
    """

    rpn: list[str]
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        parsed = [parse(r, self.meta.get("source", "formula set")) for r in self.rpn]
        n = len(parsed)
        width = max((len(p) for p in parsed), default=1)
        self.codes = -np.ones((n, width), dtype=np.int64)
        self.lengths = np.zeros(n, dtype=np.int64)
        for i, p in enumerate(parsed):
            self.codes[i, : len(p)] = p
            self.lengths[i] = len(p)

    def __len__(self) -> int:
        return len(self.rpn)

    @property
    def label(self) -> str:
        return str(self.meta.get("label") or _label(self.meta, self.rpn))

    def to_table(self) -> pl.DataFrame:
        """The formula set's table (columns :data:`FORMULA_SET_COLUMNS`)."""
        return pl.DataFrame(
            {
                "arm": np.arange(len(self.rpn), dtype=np.int64),
                "rpn": self.rpn,
                "infix": [infix(self.codes[i, : self.lengths[i]]) for i in range(len(self))],
                "size": self.lengths.astype(np.int64),
            }
        )

    def to_dat(self) -> str:
        """The reference's text format."""
        lines = ["Serializable", "0", "FormulaVector", "1", str(len(self.rpn)), *self.rpn]
        return "\n".join(lines) + "\n"


def _sha8(rpn: list[str]) -> str:
    return hashlib.sha256("\n".join(rpn).encode()).hexdigest()[:8]


def _fmt(v: float) -> str:
    return format(float(v), ".12g")


def _label(meta: dict[str, Any], rpn: list[str]) -> str:
    ms = meta.get("max_size") or max((len(r.split()) for r in rpn), default=0)
    if meta.get("source") == "generate":
        tag = "ref" if meta.get("reference_rng") else "s"
        out = f"F{ms}@{tag}{meta['seed']}"
        if int(meta.get("n_points", DEFAULT_N_POINTS)) != DEFAULT_N_POINTS:
            out += f"-p{meta['n_points']}"
        lo, hi = meta.get("range", DEFAULT_RANGE)
        if (float(lo), float(hi)) != DEFAULT_RANGE:
            out += f"-r{_fmt(lo)}:{_fmt(hi)}"
        return out
    return f"F{ms}@dat-{_sha8(rpn)}"


#: Largest formula size that can be generated (F8 already holds millions of formulas).
MAX_FORMULA_SIZE = 8


def generate(
    max_size: int,
    *,
    n_points: int = DEFAULT_N_POINTS,
    lo: float = DEFAULT_RANGE[0],
    hi: float = DEFAULT_RANGE[1],
    seed: int = DEFAULT_SEED,
    reference_rng: bool = False,
) -> FormulaSet:
    """Generate and reduce the formula set of formulas of size <= ``max_size``.

    Examples
    --------
    >>> len(generate(2)), len(generate(3, seed=7))
    (12, 43)
    >>> generate(2).rpn[:3]
    ['X2', 'X2 OPP', 'X1 OPP']
    """
    if not 1 <= max_size <= MAX_FORMULA_SIZE:
        raise BBRLError(f"--max-size {max_size}: must be in [1, {MAX_FORMULA_SIZE}] (the number "
                        "of formulas grows exponentially with the size)")
    if isinstance(seed, bool) or not 0 <= seed <= 2**63 - 1:
        raise BBRLError(f"--seed {seed}: must be an integer in [0, 2^63 - 1]")
    if not 1 <= n_points <= 65535:
        raise BBRLError(f"--n-points {n_points}: must be in [1, 65535]")
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise BBRLError(f"--range {lo} {hi}: need finite lo < hi")
    if reference_rng:
        pts = reference_points(n_points, lo, hi, seed)
    else:
        pts = numpy_points(n_points, lo, hi, seed)
    codes, lens, keys, valid = _generate_kernel(int(max_size), pts)
    # sort representatives by key, lexicographically (first point index most significant)
    order = np.lexsort(keys.T[::-1]) if len(keys) else np.zeros(0, dtype=np.int64)
    rpn = [to_rpn(codes[i, : lens[i]]) for i in order]
    meta = {
        "source": "generate",
        "max_size": int(max_size),
        "n_points": int(n_points),
        "range": [float(lo), float(hi)],
        "seed": int(seed),
        "reference_rng": bool(reference_rng),
        "generator_version": GENERATOR_VERSION,
        "valid_per_size": [int(v) for v in valid[1:]],
    }
    fs = FormulaSet(rpn, meta)
    fs.meta["label"] = _label(meta, rpn)
    return fs


def parse_dat(text: str, source: str) -> FormulaSet:
    """Parse the reference's formula-set text."""
    lines = [ln.strip() for ln in text.splitlines()]
    head = ["Serializable", "0", "FormulaVector", "1"]
    if lines[:4] != head:
        raise BBRLError(f"{source}: not a BBRL FormulaVector file (bad header)")
    try:
        count = int(lines[4])
    except (IndexError, ValueError):
        raise BBRLError(f"{source}: bad formula count on line 5") from None
    body = [ln for ln in lines[5:] if ln]
    if len(body) != count:
        raise BBRLError(f"{source}: header announces {count} formulas, found {len(body)}")
    rpn = [" ".join(ln.split()) for ln in body]
    meta = {
        "source": "import",
        "file": Path(source).name,
        "max_size": max((len(r.split()) for r in rpn), default=0),
        "sha256": hashlib.sha256("\n".join(rpn).encode()).hexdigest(),
    }
    fs = FormulaSet(rpn, meta)
    fs.meta["label"] = _label(meta, rpn)
    return fs


def read_dat(path: str | os.PathLike[str]) -> FormulaSet:
    """Read an original formula-set file, plain or zlib-compressed (``.zz``)."""
    p = Path(path)
    if not p.exists():
        raise BBRLError(f"{p}: no such file")
    raw = p.read_bytes()
    if not raw.startswith(b"Serializable"):
        try:
            raw = zlib.decompress(raw)
        except zlib.error:
            raise BBRLError(f"{p}: neither a BBRL formula-set text nor zlib data") from None
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise BBRLError(f"{p}: not ASCII text") from None
    return parse_dat(text, str(p))


def write_parquet(fs: FormulaSet, path: str | os.PathLike[str]) -> None:
    """Write a formula-set artefact (one row per formula in arm order)."""
    artefacts.write_artefact(path, fs.to_table(), "formula-set", dict(fs.meta))


def read_parquet(path: str | os.PathLike[str]) -> FormulaSet:
    """Read a formula-set artefact written by :func:`write_parquet`."""
    table, meta = artefacts.read_artefact(path, "formula-set")
    regen = artefacts.REGENERATE["formula-set"]
    if "rpn" not in table.columns or "arm" not in table.columns:
        raise BBRLError(f"{path}: formula-set artefact without 'arm'/'rpn' columns; {regen}")
    if table["rpn"].dtype != pl.String or table["rpn"].null_count():
        raise BBRLError(f"{path}: the 'rpn' column must hold formulas as text; {regen}")
    table = table.sort("arm")
    if table["arm"].to_list() != list(range(len(table))):
        raise BBRLError(f"{path}: 'arm' column is not 0..n-1; {regen}")
    label = artefacts.MetaReader(path, meta, "formula-set").str("label", default="")
    if label and not LABEL.fullmatch(label):
        raise BBRLError(f"{path}: metadata 'label' {label!r} is not a formula-set label "
                        f"(like F3@s1); {regen}")
    rpn = table["rpn"].to_list()
    for i, r in enumerate(rpn):
        try:
            parse(r, "formula")
        except BBRLError as exc:
            raise BBRLError(f"{path}: arm {i}: {exc}; {regen}") from None
    return FormulaSet(rpn, meta)


#: What a formula-set label may hold (it appears in agent ids, hence in file names).
LABEL = re.compile(r"F\d+@[A-Za-z0-9_.:+-]+")


_NAME = re.compile(r"^F([2-6])$")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "bbrlcore" / "formula_sets"


def named(name: str) -> FormulaSet:
    """The named set ``F2``...``F6``: generated with the default settings and
    :data:`DEFAULT_SEED`, cached (atomically written) in :func:`cache_dir`."""
    m = _NAME.match(name)
    if not m:
        raise BBRLError(f"formula_set={name!r}: expected F2..F6 or a file")
    size = int(m.group(1))
    path = cache_dir() / f"F{size}-s{DEFAULT_SEED}-g{GENERATOR_VERSION}.parquet"
    if path.exists():
        try:
            fs = read_parquet(path)
            if fs.meta.get("max_size") == size and fs.meta.get("seed") == DEFAULT_SEED:
                return fs
        except BBRLError:
            pass  # corrupt cache: regenerate
    fs = generate(size)
    try:
        write_parquet(fs, path)
    except OSError:
        pass  # a read-only cache is not an error
    return fs


def load(spec: str | os.PathLike[str]) -> FormulaSet:
    """A formula set from a name (``F2``...``F6``), a Parquet artefact or an original file."""
    s = str(spec)
    if _NAME.match(s):
        return named(s)
    p = Path(s)
    if not p.exists():
        raise BBRLError(f"formula_set={s!r}: not F2..F6 and no such file")
    with open(p, "rb") as f:
        magic = f.read(4)
    if magic == b"PAR1":
        return read_parquet(p)
    return read_dat(p)


def label_of(spec: str) -> str:
    """How a ``formula_set`` value appears in agent ids (name and seed, never a path)."""
    s = str(spec)
    if _NAME.match(s):
        return f"{s}@s{DEFAULT_SEED}"
    return load(s).label
