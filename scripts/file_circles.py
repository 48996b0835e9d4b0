"""Import circles between the files of one crate, read from the Rust source (no compiler).

A file "uses" another when its code names an item through a path that lands in that file:
`use crate::a::B`, `super::c::d()`, `child::E` for a module it declares. A path through a
re-export (`pub use x::Y`) is followed to the file that defines the name, and a re-export is
a hand-on, not a use. Test modules (`#[cfg(test)] mod …`) are left out: a test may reach
anywhere. Two or more files that use each other in a loop are a circle."""

import os
import re

ITEM = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+|unsafe\s+|const\s+|extern\s+\"C\"\s+)*"
    r"(?:fn|struct|enum|trait|type|const|static|union|mod)\s+(\w+)", re.M)
MACRO = re.compile(r"macro_rules!\s*(\w+)")
MOD_DECL = re.compile(
    r"((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")
USE = re.compile(r"\b((?:pub(?:\([^)]*\))?\s+)?)use\s+([^;]+);")
PATH = re.compile(r"(?<![\w:])((?:crate|super|self|[a-z_][a-z0-9_]*)(?:\s*::\s*(?:\w+|\*))+)")
TEST_MOD = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{")


def strip(text):
    """The code without comments, string and char literals, and test modules."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            out.append('""')
            i = n if end < 0 else end + 1 + len(hashes)
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            out.append('""')
            i += 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]) or c == "'" and text.startswith("'\\", i):
            end = text.find("'", i + 2)
            out.append("' '")
            i = end + 1
        else:
            out.append(c)
            i += 1
    code = "".join(out)
    # Drop every `#[cfg(test)] mod name { … }` block, braces matched.
    while True:
        m = TEST_MOD.search(code)
        if not m:
            return code
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        code = code[:m.start()] + code[j:]


def expand(tree):
    """`a::{b, c::{d, e}}` as whole paths: a::b, a::c::d, a::c::e."""
    tree = re.sub(r"\s+as\s+", "@as@", tree)  # an alias, kept apart from names holding "as"
    tree = re.sub(r"\s+", "", tree)
    m = re.search(r"\{", tree)
    if not m:
        return [tree]
    head, body = tree[:m.start()], tree[m.end():-1]
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    parts.append(cur)
    return [p for part in parts if part for p in expand(head + part)]


class Crate:
    """The module tree of one crate root and what each file defines, uses and re-exports."""

    def __init__(self, root):
        self.files = {}  # file -> module path (tuple)
        self.children = {}  # module path -> {name: module path}
        self.code = {}
        self._load(os.path.abspath(root), ())

    def _load(self, path, module):
        if path in self.files or not os.path.exists(path):
            return
        self.files[path] = module
        code = strip(open(path, encoding="utf-8").read())
        self.code[path] = code
        self.children[module] = {}
        base = os.path.dirname(path)
        stem = os.path.splitext(os.path.basename(path))[0]
        here = base if stem in ("lib", "main", "mod") or not module else os.path.join(base, stem)
        for m in MOD_DECL.finditer(code):
            attrs, name = m.group(1), m.group(2)
            if "cfg(test)" in attrs:
                continue
            given = re.search(r'path\s*=\s*""', attrs)
            if given:  # a #[path] module: strings are emptied, so read the attribute again
                continue
            child = module + (name,)
            self.children[module][name] = child
            for cand in (os.path.join(here, name + ".rs"), os.path.join(here, name, "mod.rs")):
                if os.path.exists(cand):
                    self._load(cand, child)
                    break

    def file_of(self, module):
        for f, m in self.files.items():
            if m == module:
                return f
        return None

    def defines(self, module, name):
        code = self.code.get(self.file_of(module), "")
        return any(n == name for n in ITEM.findall(code)) or name in MACRO.findall(code)

    def reexports(self, module):
        """(visible name, absolute path) of each `pub use` in the module's file; the path is
        None for a name handed on from another crate."""
        out = []
        for m in USE.finditer(self.code.get(self.file_of(module), "")):
            if not m.group(1):
                continue
            for p in expand(m.group(2)):
                alias = re.match(r"(.*)@as@(\w+)$", p)
                target, name = (alias.group(1), alias.group(2)) if alias else (p, p.split("::")[-1])
                absolute = self.absolute(module, target.split("::"))
                out.append((name, absolute or None))
        return out

    def absolute(self, module, segs):
        """A path as written in `module`, made absolute; None when it leaves the crate."""
        segs = [s for s in segs if s]
        if not segs:
            return None
        if segs[0] == "crate":
            return list(segs[1:])
        if segs[0] in ("self", "super"):
            at = list(module)
            while segs and segs[0] in ("self", "super"):
                if segs.pop(0) == "super":
                    if not at:
                        return None
                    at.pop()
            return at + segs
        if segs[0] in self.children.get(module, {}):
            return list(module) + segs
        return None

    def landing(self, segs, depth=0):
        """The file that defines what an absolute path names, following re-exports, the
        name, and whether the definition was found (else the file is the module named)."""
        module = ()
        while segs and segs[0] in self.children.get(module, {}):
            module = self.children[module][segs[0]]
            segs = segs[1:]
        if not segs or segs[0] == "*" or depth > 6:
            return self.file_of(module), None, True
        name = segs[0]
        if self.defines(module, name):
            return self.file_of(module), name, True
        for shown, target in self.reexports(module):
            if shown == name:
                if target is None:
                    return None, name, True  # another crate's: no file of this one
                return self.landing(target + segs[1:], depth + 1)
            if shown == "*" and target is not None:
                f, n, found = self.landing(target[:-1] + [name], depth + 1)
                if found:
                    return f, n, found
        return self.file_of(module), name, False

    def uses(self):
        """file -> {used file: names}."""
        edges = {}
        for path, module in self.files.items():
            code = self.code[path]
            found = []
            for m in USE.finditer(code):
                if m.group(1):
                    continue  # a re-export hands a name on
                found += [re.sub(r"@as@\w+$", "", p).split("::") for p in expand(m.group(2))]
            body = USE.sub("", code)
            found += [re.sub(r"\s+", "", p.group(1)).split("::") for p in PATH.finditer(body)]
            for segs in found:
                absolute = self.absolute(module, segs)
                if absolute is None:
                    continue
                target, name, _ = self.landing(absolute)
                if target and target != path:
                    edges.setdefault(path, {}).setdefault(target, set()).add(name or "(module)")
        return edges


def circles(edges):
    """The strongly connected groups of two or more files (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def crate_circles(root, relative_to):
    """Each circle of one crate root as (files relative to `relative_to`, tying lines)."""
    crate = Crate(root)
    edges = crate.uses()
    found = []
    for group in circles(edges):
        ties = [f"{os.path.relpath(a, relative_to)} -> {os.path.relpath(b, relative_to)}: "
                f"{', '.join(sorted(edges[a][b]))}"
                for a in group for b in group if b in edges.get(a, {})]
        found.append(([os.path.relpath(f, relative_to) for f in group], ties))
    return found
