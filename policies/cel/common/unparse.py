"""CEL text of a checked sub-expression: `unparse` and `source_span`.

Why: messages quote or point at a sub-expression (a costly call, the operand an advisory is
about), and the checked tree only records one position per node. Rendering keeps the author's
text when the source spells the same tokens, and otherwise prints cel-go's canonical form;
comprehensions are printed as the macro call the author wrote, recognised from the expansion's
shape because cel-expr-python records no macro calls. It is apart from the node model because
only message-building code renders.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from .ast import CheckedAst, Constant, ConstKind, Node, NodeKind

__all__ = ["source_span", "unparse"]

_BINARY = {
    "_||_": ("||", 7), "_&&_": ("&&", 6),
    "_==_": ("==", 5), "_!=_": ("!=", 5), "_<_": ("<", 5), "_<=_": ("<=", 5),
    "_>_": (">", 5), "_>=_": (">=", 5), "@in": ("in", 5),
    "_+_": ("+", 4), "_-_": ("-", 4),
    "_*_": ("*", 3), "_/_": ("/", 3), "_%_": ("%", 3),
}
_UNARY = {"!_": "!", "-_": "-"}
_CONDITIONAL = "_?_:_"
_INDEX = "_[_]"
_OPT_INDEX = "_[?_]"
_OPT_SELECT = "_?._"


def _precedence(n: Node) -> int:
    """cel-go operator precedence (lower binds tighter); 0 for non-operators."""
    if n.kind is not NodeKind.CALL or n.target is not None:
        return 0
    if n.function == _CONDITIONAL:
        return 8
    if n.function in _BINARY:
        return _BINARY[n.function][1]
    if n.function in _UNARY:
        return 2
    return 0


def unparse(node: Node, ast: CheckedAst | None = None) -> str:
    """Render a sub-expression as CEL text.

    Comprehensions produced by macros are printed as the macro call the author wrote
    (`l.all(x, p)`, `cel.bind(v, i, e)`, ...): from the macro-call records when present, else
    recognised from the expansion's shape (cel-expr-python does not record macro calls). When
    `ast` is given and the original source spells the same tokens, the source text itself is
    returned (keeping the author's spacing and quotes); otherwise a canonical rendering in the
    style of cel-go's unparser is returned.
    """
    text = _Unparser(ast).render(node)
    if ast is not None:
        span = _source_span(ast, node, text)
        if span is not None:
            return ast.expression[span[0]:span[1]]
    return text


def source_span(node: Node, ast: CheckedAst) -> tuple[int, int] | None:
    """Code-point [start, end) of the source text that spells `node`, when it can be found.

    cel-go records one position per node (the operator or `.` for selects and calls), not a
    range; messages that quote or point at a sub-expression want where it *starts*.
    """
    return _source_span(ast, node, _Unparser(ast).render(node))


_ACCUMULATORS = ("@result", "__result__")


def _is_ident(n: Node | None, name: str) -> bool:
    return n is not None and n.kind is NodeKind.IDENT and n.name == name


def _is_const(n: Node | None, kind: ConstKind, value: object) -> bool:
    return (n is not None and n.kind is NodeKind.CONST and n.const is not None
            and n.const.kind is kind and n.const.value == value and
            type(n.const.value) is type(value))


def _is_call(n: Node | None, function: str, nargs: int) -> bool:
    return (n is not None and n.kind is NodeKind.CALL and n.target is None
            and n.function == function and len(n.args) == nargs)


class _Unparser:
    def __init__(self, ast: CheckedAst | None) -> None:
        self.ast = ast

    def _resolve(self, n: Node) -> Node:
        """Macro-call arguments may be id-only placeholders: find the node they stand for."""
        if n.kind is not NodeKind.NOT_SET or self.ast is None:
            return n
        if n.id in self.ast.macro_calls:
            return self.ast.macro_calls[n.id]
        if self.ast.has_node(n.id):
            return self.ast.node(n.id)
        return n

    def render(self, n: Node) -> str:
        n = self._resolve(n)
        if self.ast is not None and n.id in self.ast.macro_calls:
            call = self.ast.macro_calls[n.id]
            if call.kind is NodeKind.CALL:
                return self._call(call)
        k = n.kind
        if k is NodeKind.CONST:
            return _const(n.const)
        if k is NodeKind.IDENT:
            return n.name
        if k is NodeKind.SELECT:
            assert n.operand is not None
            inner = f"{self._nested(n.operand)}.{n.field}"
            return f"has({inner})" if n.test_only else inner
        if k is NodeKind.CALL:
            return self._call(n)
        if k is NodeKind.LIST:
            opt = set(n.optional_indices)
            items = [("?" if i in opt else "") + self.render(e) for i, e in enumerate(n.elements)]
            return "[" + ", ".join(items) + "]"
        if k is NodeKind.STRUCT:
            parts = []
            for e in n.entries:
                key = e.field if e.key is None else self.render(e.key)
                parts.append(("?" if e.optional_entry else "") + f"{key}: {self.render(e.value)}")
            return f"{n.message_name}{{" + ", ".join(parts) + "}"
        if k is NodeKind.COMPREHENSION:
            macro = self._macro(n)
            if macro is not None:
                return macro
            pieces = [n.iter_var] + ([n.iter_var2] if n.iter_var2 else []) + [n.accu_var]
            pieces += [self.render(x) if x is not None else "" for x in
                       (n.iter_range, n.accu_init, n.loop_condition, n.loop_step, n.result)]
            return "__comprehension__(" + ", ".join(pieces) + ")"
        return f"<expr #{n.id}>"

    # --- macro recognition -------------------------------------------------------------------

    def _written_name(self, n: Node) -> str:
        """Identifier just before the macro's `(` in the source (macros are positioned there)."""
        if self.ast is None:
            return ""
        pos = self.ast.source_info.positions.get(n.id)
        text = self.ast.expression
        if pos is None or not 0 <= pos < len(text) or text[pos] != "(":
            return ""
        end = pos
        while end > 0 and text[end - 1].isspace():
            end -= 1
        start = end
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
            start -= 1
        return text[start:end]

    def _macro(self, n: Node) -> str | None:
        """Print a comprehension as the macro call that produces its exact layout, if any."""
        rng, init, step, res = n.iter_range, n.accu_init, n.loop_step, n.result
        if rng is None or init is None or step is None or res is None:
            return None
        acc = n.accu_var
        if (rng.kind is NodeKind.LIST and not rng.elements
                and _is_const(n.loop_condition, ConstKind.BOOL, False)
                and acc not in _ACCUMULATORS and _is_ident(step, acc)):
            return self._bind_like(acc, init, res)
        if acc not in _ACCUMULATORS or (not _is_ident(res, acc)
                                        and not _is_call(res, "_==_", 2)):
            return None
        target = self._nested(rng)
        ivars = n.iter_var + (f", {n.iter_var2}" if n.iter_var2 else "")
        written = self._written_name(n)
        if _is_ident(res, acc):
            simple = self._simple_macro(n, acc, init, step, ivars, written)
            if simple is not None:
                return f"{target}.{simple}"
            return None
        # exists_one: p ? acc + 1 : acc, result acc == 1
        if (_is_call(res, "_==_", 2) and _is_ident(res.args[0], acc)
                and _is_const(res.args[1], ConstKind.INT, 1)
                and _is_const(init, ConstKind.INT, 0) and _is_call(step, _CONDITIONAL, 3)
                and _is_call(step.args[1], "_+_", 2) and _is_ident(step.args[2], acc)):
            name = written if written in ("exists_one", "existsOne") else (
                "existsOne" if n.iter_var2 else "exists_one")
            return f"{target}.{name}({ivars}, {self.render(step.args[0])})"
        return None

    def _simple_macro(self, n: Node, acc: str, init: Node, step: Node, ivars: str,
                      written: str) -> str | None:
        if _is_call(step, "_&&_", 2) and _is_ident(step.args[0], acc) and _is_const(
                init, ConstKind.BOOL, True):
            return f"all({ivars}, {self.render(step.args[1])})"
        if _is_call(step, "_||_", 2) and _is_ident(step.args[0], acc) and _is_const(
                init, ConstKind.BOOL, False):
            return f"exists({ivars}, {self.render(step.args[1])})"
        pred: Node | None = None
        body = step
        if _is_call(step, _CONDITIONAL, 3) and _is_ident(step.args[2], acc):
            pred, body = step.args[0], step.args[1]
        pred_text = f"{self.render(pred)}, " if pred is not None else ""
        if init.kind is NodeKind.LIST and not init.elements:
            if not (_is_call(body, "_+_", 2) and _is_ident(body.args[0], acc)
                    and body.args[1].kind is NodeKind.LIST and len(body.args[1].elements) == 1):
                return None
            elem = body.args[1].elements[0]
            if n.iter_var2:
                return f"transformList({ivars}, {pred_text}{self.render(elem)})"
            if pred is not None and _is_ident(elem, n.iter_var) and written != "map":
                return f"filter({ivars}, {pred_text.rstrip(', ')})"
            return f"map({ivars}, {pred_text}{self.render(elem)})"
        if init.kind is NodeKind.STRUCT and not init.entries and not init.message_name:
            if not (body.kind is NodeKind.CALL and body.function == "cel.@mapInsert"
                    and body.args and _is_ident(body.args[0], acc)):
                return None
            if len(body.args) == 3:
                return f"transformMap({ivars}, {pred_text}{self.render(body.args[2])})"
            if len(body.args) == 2:
                return f"transformMapEntry({ivars}, {pred_text}{self.render(body.args[1])})"
        return None

    def _bind_like(self, var: str, init: Node, res: Node) -> str:
        """`cel.bind(v, init, expr)`, or `l.sortBy(x, key)` whose expansion is a bind."""
        if (var == "@__sortBy_input__" and res.kind is NodeKind.CALL
                and res.function == "@sortByAssociatedKeys" and len(res.args) == 1
                and res.args[0].kind is NodeKind.COMPREHENSION):
            mapping = res.args[0]
            step = mapping.loop_step
            if (_is_call(step, "_+_", 2) and step is not None
                    and step.args[1].kind is NodeKind.LIST and len(step.args[1].elements) == 1):
                key = step.args[1].elements[0]
                return f"{self._nested(init)}.sortBy({mapping.iter_var}, {self.render(key)})"
        return f"cel.bind({var}, {self.render(init)}, {self.render(res)})"

    # --- calls -------------------------------------------------------------------------------

    def _nested(self, n: Node) -> str:
        """Operand of a select/index/member call: parenthesize any operator expression."""
        r = self._resolve(n)
        text = self.render(r)
        return f"({text})" if _precedence(r) > 1 else text

    def _call(self, n: Node) -> str:
        f = n.function
        args = [self._resolve(a) for a in n.args]
        if n.target is None:
            if f in _BINARY and len(args) == 2:
                op, prec = _BINARY[f]
                left_assoc = f not in ("_&&_", "_||_")
                lhs, rhs = args
                lp = _precedence(lhs) > prec
                rp = _precedence(rhs) > prec or (left_assoc and _precedence(rhs) == prec)
                return f"{self._paren(lhs, lp)} {op} {self._paren(rhs, rp)}"
            if f in _UNARY and len(args) == 1:
                return _UNARY[f] + self._paren(args[0], _precedence(args[0]) > 2)
            if f == _CONDITIONAL and len(args) == 3:
                c, t, e = args
                return (f"{self._paren(c, _precedence(c) >= 8)} ? "
                        f"{self._paren(t, _precedence(t) >= 8)} : {self.render(e)}")
            if f in (_INDEX, _OPT_INDEX) and len(args) == 2:
                q = "?" if f == _OPT_INDEX else ""
                return f"{self._nested(args[0])}[{q}{self.render(args[1])}]"
            if f == _OPT_SELECT and len(args) == 2:
                fld = args[1]
                name = (fld.const.value if fld.const is not None
                        and fld.const.kind is ConstKind.STRING else self.render(fld))
                return f"{self._nested(args[0])}.?{name}"
            return f"{f}(" + ", ".join(self.render(a) for a in args) + ")"
        return (f"{self._nested(n.target)}.{f}("
                + ", ".join(self.render(a) for a in args) + ")")

    def _paren(self, n: Node, wrap: bool) -> str:
        text = self.render(n)
        return f"({text})" if wrap else text


def _const(c: Constant | None) -> str:
    if c is None:
        return "<const>"
    k, v = c.kind, c.value
    if k is ConstKind.NULL:
        return "null"
    if k is ConstKind.BOOL:
        return "true" if v else "false"
    if k is ConstKind.INT:
        return str(v)
    if k is ConstKind.UINT:
        return f"{v}u"
    if k is ConstKind.DOUBLE:
        assert isinstance(v, float)
        if math.isinf(v) or math.isnan(v):
            return f'double("{"NaN" if math.isnan(v) else ("-" if v < 0 else "") + "Infinity"}")'
        text = repr(v)
        return text if any(ch in text for ch in ".eE") else text + ".0"
    if k is ConstKind.STRING:
        assert isinstance(v, str)
        return _quote(v)
    if k is ConstKind.BYTES:
        assert isinstance(v, bytes)
        return "b" + _quote_bytes(v)
    if k in (ConstKind.DURATION, ConstKind.TIMESTAMP):
        assert isinstance(v, tuple)
        fn = "duration" if k is ConstKind.DURATION else "timestamp"
        return f"{fn}({v[0]})"
    return "<const>"


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\a": "\\a",
            "\b": "\\b", "\f": "\\f", "\v": "\\v"}


def _quote(s: str) -> str:
    out = []
    for ch in s:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _quote_bytes(b: bytes) -> str:
    out = []
    for byte in b:
        ch = chr(byte)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\x{byte:02x}")
    return '"' + "".join(out) + '"'


def _subtree_ids(ast: CheckedAst, n: Node) -> Iterator[int]:
    stack = [n]
    while stack:
        cur = stack.pop()
        yield cur.id
        if cur.id in ast.macro_calls:
            call = ast.macro_calls[cur.id]
            yield call.id
            for c in call.children():
                stack.append(_resolve_placeholder(ast, c))
        stack.extend(cur.children())


def _resolve_placeholder(ast: CheckedAst, n: Node) -> Node:
    if n.kind is NodeKind.NOT_SET:
        if n.id in ast.macro_calls:
            return ast.macro_calls[n.id]
        if ast.has_node(n.id):
            return ast.node(n.id)
    return n


def _source_span(ast: CheckedAst, node: Node, canonical: str) -> tuple[int, int] | None:
    """Return the span of source text spelling exactly `canonical`'s tokens, if there is one.

    The sub-expression starts at or before the smallest recorded position in its subtree
    (parenthesized operands may start earlier); we scan from a few candidate starts and accept
    the first slice whose non-blank characters equal the canonical rendering's.
    """
    positions = ast.source_info.positions
    offsets = [positions[i] for i in _subtree_ids(ast, node) if i in positions]
    if not offsets:
        return None
    text = ast.expression
    want = "".join(canonical.split())
    if not want:
        return None
    first = min(offsets)
    # The macro/receiver may begin before the node's own offset (e.g. `a.b` is positioned at the
    # dot in some parsers); try starts from the earliest plausible place forward.
    for start in range(first, max(-1, first - 64), -1):
        if text[start:start + 1].isspace():
            continue
        end = _match_tokens(text, start, want)
        if end is not None:
            return start, end
    return None


def _match_tokens(text: str, start: int, want: str) -> int | None:
    i, j = start, 0
    while j < len(want):
        if i >= len(text):
            return None
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch != want[j] and not (ch == "'" and want[j] == '"'):
            return None
        i += 1
        j += 1
    return i
