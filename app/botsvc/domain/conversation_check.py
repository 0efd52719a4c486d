"""The exported module's syntax tree, checked before the module is handed
out (``conversation_pytest.render``): the docstring, the helpers' import,
``TIMEOUT``, the files' base64 and the one test function whose statements
are the helpers' calls (``user.say(...)``) with literal arguments, places
(``bot_message(2)``) and the files' names, and nothing else. Whatever a
chat said, a module that holds more is refused: nothing from a
conversation ever becomes code.
"""
from __future__ import annotations

import ast
import re

HELPERS_MODULE = "botsvc.testkit.conversation"
# What the module may call on ``user``: the simulated user's steps.
USER_STEPS = frozenset({"start", "stop", "block", "say", "click", "send_file", "expect_message",
                        "expect_edit", "expect_deleted", "expect_answer", "skip_reactions",
                        "done"})
_BLOB_NAME = re.compile(r"[A-Z]+_[0-9]+\Z")
BASE64 = re.compile(r"[A-Za-z0-9+/=]*\Z")
_LITERALS = (ast.Constant, ast.List, ast.Dict, ast.Tuple)


def check_module(source: str) -> None:
    """Refuse (ValueError) a module whose syntax tree holds anything but the
    docstring, the helpers' import, TIMEOUT, the files' base64 and the one
    test function of the helpers' calls, each argument a literal, a place or
    a file's name."""
    tree = ast.parse(source)
    blobs: set[str] = set()
    for node in tree.body:
        if _is_docstring(node) or _is_helpers_import(node):
            continue
        if isinstance(node, ast.Assign) and _assigns_constant(node, blobs):
            continue
        if isinstance(node, ast.FunctionDef) and _is_test(node, blobs):
            continue
        raise ValueError(f"the exported module holds more than the helpers' calls (line"
                         f" {node.lineno})")


def _is_docstring(node: ast.stmt) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str))


def _is_helpers_import(node: ast.stmt) -> bool:
    return (isinstance(node, ast.ImportFrom) and node.module == HELPERS_MODULE
            and node.level == 0 and all(a.asname is None for a in node.names)
            and {a.name for a in node.names} <= {"bot_message", "conversation", "user_message"})


def _assigns_constant(node: ast.Assign, blobs: set[str]) -> bool:
    """``TIMEOUT = <int>``, or ``NAME_1 = "<base64>"``."""
    if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
        return False
    name, value = node.targets[0].id, node.value
    if not isinstance(value, ast.Constant):
        return False
    if name == "TIMEOUT":
        return type(value.value) in (int, float)
    if _BLOB_NAME.match(name) and isinstance(value.value, str) and BASE64.match(value.value):
        blobs.add(name)
        return True
    return False


def _is_test(node: ast.FunctionDef, blobs: set[str]) -> bool:
    args = node.args
    if (node.name != "test_conversation" or node.decorator_list or node.returns
            or args.posonlyargs or args.kwonlyargs or args.vararg or args.kwarg
            or args.defaults or [a.arg for a in args.args] != [
                "bot_under_test", "botsvc", "botsvc_bot"]):
        return False
    first, *steps = node.body
    return _is_user_made(first) and all(_is_step(step, blobs) for step in steps)


def _is_user_made(node: ast.stmt) -> bool:
    """``user = conversation(botsvc, botsvc_bot, timeout=TIMEOUT)``"""
    return ast.dump(node) == ast.dump(ast.parse(
        "user = conversation(botsvc, botsvc_bot, timeout=TIMEOUT)").body[0])


def _is_step(node: ast.stmt, blobs: set[str]) -> bool:
    """``user.<step>(<argument>, ..., <name>=<argument>, ...)``"""
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return False
    call = node.value
    func = call.func
    return (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            and func.value.id == "user" and func.attr in USER_STEPS
            and all(_is_argument(a, blobs) for a in call.args)
            and all(k.arg is not None and _is_argument(k.value, blobs) for k in call.keywords))


def _is_argument(node: ast.expr, blobs: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in blobs
    if isinstance(node, ast.Call):   # a place: bot_message(2)
        return (isinstance(node.func, ast.Name) and node.func.id in ("bot_message", "user_message")
                and not node.keywords and len(node.args) == 1
                and isinstance(node.args[0], ast.Constant) and type(node.args[0].value) is int)
    return _is_literal(node)


def _is_literal(node: ast.expr) -> bool:
    """Constants, and lists, tuples and dicts of them (keyboards, cards);
    walked with a list: a kept card may nest deep."""
    waiting = [node]
    while waiting:
        item = waiting.pop()
        if not isinstance(item, _LITERALS):
            return False
        if isinstance(item, ast.Constant):
            if not (item.value is None or type(item.value) in (str, int, float, bool)):
                return False
        elif isinstance(item, ast.Dict):
            if any(k is None for k in item.keys):
                return False
            waiting += [*item.keys, *item.values]
        else:
            waiting += item.elts
    return True
