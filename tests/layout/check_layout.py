#!/usr/bin/env python3
"""Layout checks of the source tree, run by CTest (tests/layout/).

usage: check_layout.py SOURCE_DIR boundaries|cycles|folders|keys|langs
       check_layout.py SOURCE_DIR keys-selftest
       check_layout.py --self-test folders

boundaries  No service compiles or includes another's files. A file in a
            service folder (SERVICES) may include only headers of its own
            folder, of services/ and of proto/; a file in services/ only
            headers of services/ and proto/. A service's CMakeLists.txt names
            no path inside another service's folder.
cycles      No two files include each other, directly or round a longer
            circle: checked between files and between modules (x.c and
            x.h count as one module x), and reported by folder. Folders
            are not compared here: a folder's main.c may use its
            subfolders while they use the folder's shared header (the
            worker's); the gateway's folders are the next check's.
folders     A service whose folders are libraries of their own (FOLDERED:
            the gateway) declares in its CMakeLists.txt which folders each
            folder uses ("kb_gw_folder(core base store http)"; "." is
            the service's own top folder, its programs). A file of one
            folder may include a header of another only when its folder
            declares that one, and names it by its path from the service's
            folder ("http/rules.h"), the only include directory. The
            declarations name known folders, cover every folder that
            holds sources, and make no circle. --self-test folders runs
            the check on small made-up trees (one of each fault, and one
            without) and fails unless it finds exactly their faults.
keys        The Redis key schema is written once, in services/kb_keys.h:
            no other C file and no Lua script (tests/ aside: the suites
            spell keys out to check the schema from outside) has a
            string literal holding a "kb:<name>" key. C builds keys
            from the KB_KEY_* formats; Lua from the prelude that the
            build makes of them (cmake/lua_keys.cmake: K.sub(id) for
            KB_KEY_SUB), and every K.<name> or K_PATTERN.<name> a
            script names must be a KB_KEY_<NAME> of the header. Lua
            text in C strings is allow-listed.
keys-selftest
            Runs the keys check on the fixture tree tests/layout/data/keys
            (its own kb_keys.h, no allow list) and passes when it reports
            exactly the lines that end in the comment "layout: expect"
            there, so that the check is seen to fail where it must.
langs       The task languages are listed once, in services/kb_lang.c:
            no other C file of the services (tests/ aside) has a string
            literal that is a language's name ("c", "cu", "hip", "py")
            or its own extension (".cu", ".hip", ".py"); code asks
            kb_lang.h instead.

`#include "name"` resolves as the compiler's quote form does for us: the
includer's own folder first, else the one file of the tree whose path
ends in /name (CMake puts each library's folder on the include path; the
gateway's one include directory is its own folder, so that its files
name another folder's header by its path, "http/rules.h"). Generated
protobuf-c headers (*.pb-c.h) belong to proto/. An include that names no
file of the tree (or several: task.h of the problem folders, which is
staged beside the submission at run time; a bare internal.h outside the
folders that have one) is no edge.

Known violations, each with its reason and the work that removes it, are
listed in tests/layout/allow.txt; an entry that no longer matches anything
is reported, so that it can be deleted. Exit status 0 when nothing outside
that list is found, 1 otherwise, 2 on bad usage.
"""
import collections
import fnmatch
import os
import re
import subprocess
import sys

SERVICES = ("gateway", "worker", "ranker", "client", "devbroker")
SHARED = ("services", "proto")
SOURCE = re.compile(r"\.(c|h|cu|cuh|cc|cpp|hpp)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def tree_files(root):
    """Tracked files and untracked ones git does not ignore; without git,
    every file outside build folders."""
    try:
        out = subprocess.run(
            ["git", "-C", root, "ls-files", "--cached", "--others",
             "--exclude-standard"],
            check=True, capture_output=True, text=True).stdout
        files = [f for f in out.splitlines()
                 if os.path.exists(os.path.join(root, f))]
        if files:
            return sorted(set(files))
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for d, subdirs, names in os.walk(root):
        subdirs[:] = [s for s in subdirs
                      if not s.startswith(("build", ".git"))]
        files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(files)


def include_edges(root, files):
    """(includer, included) pairs over the tree's source files."""
    srcs = [f for f in files if SOURCE.search(f)]
    known = set(srcs)
    by_suffix = collections.defaultdict(list)
    for f in srcs:
        parts = f.split("/")
        for i in range(len(parts)):
            by_suffix["/".join(parts[i:])].append(f)
    edges = []
    for f in srcs:
        with open(os.path.join(root, f), errors="replace") as fh:
            for line in fh:
                m = INCLUDE.match(line)
                if not m:
                    continue
                name = m.group(1)
                here = os.path.normpath(os.path.join(os.path.dirname(f), name))
                if here in known:
                    edges.append((f, here))
                elif name.endswith(".pb-c.h"):
                    edges.append((f, "proto/" + os.path.basename(name)))
                elif len(by_suffix.get(name, ())) == 1:
                    edges.append((f, by_suffix[name][0]))
    return srcs, edges


def top(path):
    return path.split("/", 1)[0]


class Allow:
    """tests/layout/allow.txt: 'RULE FROM -> TO' lines (fnmatch patterns);
    '#' starts a comment."""

    def __init__(self, path):
        self.entries = []
        self.path = path
        if path is None:  # no exceptions
            return
        with open(path) as fh:
            for n, line in enumerate(fh, 1):
                line = line.split("#", 1)[0].strip()
                if not line:
                    continue
                m = re.fullmatch(r"(\S+)\s+(\S+)\s*->\s*(\S+)", line)
                if not m:
                    sys.exit("%s:%d: not 'RULE FROM -> TO'" % (path, n))
                self.entries.append([m.group(1), m.group(2), m.group(3), n, 0])

    def allows(self, rule, a, b):
        for e in self.entries:
            if e[0] == rule and fnmatch.fnmatch(a, e[1]) and \
                    fnmatch.fnmatch(b, e[2]):
                e[4] += 1
                return True
        return False

    def report_unused(self, rules):
        for rule, a, b, n, used in self.entries:
            if rule in rules and not used:
                print("note: %s:%d: '%s %s -> %s' matches nothing any more: "
                      "delete it" % (self.path, n, rule, a, b))


def check_boundaries(root, files, allow):
    bad = []
    _, edges = include_edges(root, files)
    for a, b in edges:
        ta, tb = top(a), top(b)
        if ta in SERVICES:
            ok = tb == ta or tb in SHARED
        elif ta == "services":
            ok = tb in SHARED
        else:
            continue
        if not ok and not allow.allows("include", a, b):
            bad.append("%s includes %s (another service's header)" % (a, b))
    # CMake: a path into another service's folder ("${CMAKE_SOURCE_DIR}/
    # worker/report.c", "../ranker/embed.cmake").
    ref = re.compile(r"(?:\$\{CMAKE_SOURCE_DIR\}|\$\{PROJECT_SOURCE_DIR\}|"
                     r"\.\.)/(%s)(?:/([^\s)\"]*))?(?=[\s)\"]|$)"
                     % "|".join(SERVICES))
    for f in files:
        if os.path.basename(f) != "CMakeLists.txt" or top(f) not in \
                SERVICES + ("services",):
            continue
        with open(os.path.join(root, f)) as fh:
            for n, line in enumerate(fh, 1):
                for m in ref.finditer(line.split("#", 1)[0]):
                    target = m.group(1) + ("/" + m.group(2)
                                           if m.group(2) else "")
                    if m.group(1) != top(f) and \
                            not allow.allows("cmake", f, target):
                        bad.append("%s:%d names %s (another service's file)"
                                   % (f, n, target))
    allow.report_unused(("include", "cmake"))
    return bad


def cycles(nodes, edges):
    """Strongly connected components with more than one node, or a node
    with an edge to itself (Tarjan, iterative)."""
    adj = collections.defaultdict(set)
    for a, b in edges:
        adj[a].add(b)
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(adj[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(adj[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in adj[v]:
                    out.append(sorted(comp))
    return out


def check_cycles(root, files, allow):
    srcs, edges = include_edges(root, files)
    module = lambda f: SOURCE.sub("", f)
    levels = [
        ("file", srcs, edges),
        ("module", sorted({module(f) for f in srcs}),
         [(module(a), module(b)) for a, b in edges if module(a) != module(b)]),
    ]
    bad = []
    for level, nodes, level_edges in levels:
        for comp in cycles(nodes, level_edges):
            # One entry names two members of the circle, either way round.
            if allow.allows("cycle", comp[0], comp[-1]) or \
                    allow.allows("cycle", comp[-1], comp[0]):
                continue
            bad.append("%ss include each other: %s (folder %s)"
                       % (level, " <-> ".join(comp),
                          os.path.dirname(comp[0]) or "."))
    allow.report_unused(("cycle",))
    return bad


# Services whose folders are libraries of their own, each declaring the
# folders it uses: service -> (its CMakeLists.txt, the declaring call).
FOLDERED = {"gateway": ("gateway/CMakeLists.txt", "kb_gw_folder")}


def declared_folders(root, cmake, call):
    """{folder: set of folders it uses} from the `call(folder dep...)`
    lines of cmake (comments dropped), with the line of each."""
    uses, lines = {}, {}
    with open(os.path.join(root, cmake)) as fh:
        for n, line in enumerate(fh, 1):
            m = re.match(r"\s*%s\(([^)]*)\)" % re.escape(call),
                         line.split("#", 1)[0])
            if m and m.group(1).split():
                words = m.group(1).split()
                uses[words[0]] = set(words[1:])
                lines[words[0]] = n
    return uses, lines


def folder_of(service, path):
    """The folder of a file of service: its first directory below the
    service's, or "." for the service's own files."""
    parts = path[len(service) + 1:].split("/")
    return parts[0] if len(parts) > 1 else "."


def check_folders(root, files, allow):
    bad = []
    srcs, edges = include_edges(root, files)
    for service, (cmake, call) in sorted(FOLDERED.items()):
        uses, lines = declared_folders(root, cmake, call)
        where = lambda f: "%s:%d" % (cmake, lines[f])
        if not uses:
            bad.append("%s declares no folder (%s(...) lines)" % (cmake, call))
            continue
        # The declarations: known folders, no circle, every folder.
        for f in sorted(uses):
            for d in sorted(uses[f] - set(uses)):
                bad.append("%s: folder %s uses %s, which is not declared"
                           % (where(f), f, d))
        for comp in cycles(sorted(uses), [(f, d) for f in uses
                                          for d in uses[f] if d in uses]):
            bad.append("%s: folders use each other: %s"
                       % (cmake, " <-> ".join(comp)))
        held = {folder_of(service, f) for f in srcs
                if f.startswith(service + "/")}
        for f in sorted(held - set(uses)):
            bad.append("%s: folder %s/%s holds sources but is not declared "
                       "(%s(%s ...))" % (cmake, service, f, call, f))
        # The includes: declared, and by path.
        for a, b in edges:
            if not (a.startswith(service + "/") and
                    b.startswith(service + "/")):
                continue
            fa, fb = folder_of(service, a), folder_of(service, b)
            if fa == fb:
                continue
            if fb not in uses.get(fa, ()) and \
                    not allow.allows("folder", a, b):
                bad.append("%s includes %s, but folder %s does not use %s "
                           "(%s)" % (a, b, fa, fb, cmake))
            with open(os.path.join(root, a), errors="replace") as fh:
                names = [m.group(1) for m in map(INCLUDE.match, fh) if m]
            path = b[len(service) + 1:]
            if path not in names:
                bad.append("%s includes %s by its name: write \"%s\""
                           % (a, b, path))
    allow.report_unused(("folder",))
    return bad


def self_test_folders():
    """Runs check_folders on made-up trees: each must give exactly its
    faults. Returns the failures (empty: the check works)."""
    import tempfile
    cmake = ("kb_gw_folder(base)  # the bottom\n"
             "kb_gw_folder(http base)\n"
             "kb_gw_folder(core base http)\n"
             "kb_gw_folder(. base http core)\n")
    good = {
        "gateway/CMakeLists.txt": cmake,
        "gateway/main.c": '#include "core/core.h"\n#include "main.h"\n',
        "gateway/main.h": "",
        "gateway/base/base.h": "",
        "gateway/http/http.h": '#include "base/base.h"\n',
        "gateway/core/core.h": '#include "http/http.h"\n',
        "gateway/core/core.c": '#include "core.h"\n#include "base/base.h"\n',
    }
    cases = [
        ("a tree that keeps its declarations", {}, []),
        ("an include the folder does not declare",
         {"gateway/http/http.c": '#include "core/core.h"\n'},
         ["gateway/http/http.c includes gateway/core/core.h, but folder "
          "http does not use core"]),
        ("a header of another folder named by its name",
         {"gateway/core/core.c": '#include "core.h"\n#include "base.h"\n'},
         ["gateway/core/core.c includes gateway/base/base.h by its name"]),
        ("declarations in a circle",
         {"gateway/CMakeLists.txt": cmake + "kb_gw_folder(base core)\n"},
         ["folders use each other: base <-> core <-> http"]),
        ("a folder declared to use an unknown one",
         {"gateway/CMakeLists.txt": cmake.replace("(http base)",
                                                  "(http base web)")},
         ["folder http uses web, which is not declared"]),
        ("a folder of sources not declared",
         {"gateway/web/web.c": '#include "base/base.h"\n'},
         ["folder gateway/web holds sources but is not declared",
          "gateway/web/web.c includes gateway/base/base.h, but folder web "
          "does not use base"]),
    ]
    failures = []
    for what, change, expect in cases:
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "tests/layout"))
            open(os.path.join(tmp, "tests/layout/allow.txt"), "w").close()
            tree = dict(good, **change)
            for path, text in tree.items():
                os.makedirs(os.path.dirname(os.path.join(tmp, path)),
                            exist_ok=True)
                with open(os.path.join(tmp, path), "w") as fh:
                    fh.write(text)
            got = check_folders(tmp, sorted(tree), Allow(os.path.join(
                tmp, "tests/layout/allow.txt")))
        missed = [e for e in expect if not any(e in g for g in got)]
        extra = [g for g in got if not any(e in g for e in expect)]
        if missed or extra:
            failures.append("%s: expected %s, got %s" % (what, expect, got))
        else:
            print("ok: %s (%d fault(s) found)" % (what, len(got)))
    return failures


KEY_SCHEMA = "services/kb_keys.h"
C_SOURCE = re.compile(r"\.(c|h)$")
C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
C_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
KEY = re.compile(r"\bkb:[a-z_]+")
# Lua: long comments, line comments, long strings, quoted strings (each
# from its first character, so that one kind inside another is not seen).
LUA_TOKEN = re.compile(r"--\[(=*)\[.*?\]\1\]|--[^\n]*|\[(=*)\[.*?\]\2\]|"
                       r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"", re.S)
LUA_KEY_USE = re.compile(r"(?<![\w.])(K|K_PATTERN)\.(\w+)")
KEY_DEFINE = re.compile(r"^\s*#\s*define\s+KB_KEY_([A-Z0-9_]+)\b", re.M)


def check_lua_keys(root, f, names, allow):
    """A Lua script: "kb:" keys in string literals, and K.<name> uses that
    the schema does not define."""
    bad = []
    with open(os.path.join(root, f), errors="replace") as fh:
        text = fh.read()
    line = lambda pos: text.count("\n", 0, pos) + 1
    code, last = [], 0
    for m in LUA_TOKEN.finditer(text):
        code.append((last, text[last:m.start()]))
        last = m.end()
        if m.group(0).startswith("--"):
            continue
        for k in KEY.findall(m.group(0)):
            if not allow.allows("key", f, k):
                bad.append("%s:%d writes the Redis key %s by hand (use K.* "
                           "of the prelude made from %s)"
                           % (f, line(m.start()), k, KEY_SCHEMA))
    code.append((last, text[last:]))
    for start, chunk in code:
        for m in LUA_KEY_USE.finditer(chunk):
            if m.group(2).upper() not in names:
                bad.append("%s:%d uses %s.%s, which %s does not define "
                           "(KB_KEY_%s)" % (f, line(start + m.start()),
                                            m.group(1), m.group(2),
                                            KEY_SCHEMA, m.group(2).upper()))
    return bad


def check_keys(root, files, allow):
    bad = []
    try:
        with open(os.path.join(root, KEY_SCHEMA)) as fh:
            names = set(KEY_DEFINE.findall(fh.read()))
    except OSError:
        names = set()
    for f in files:
        if f.endswith(".lua") and top(f) != "tests":
            bad += check_lua_keys(root, f, names, allow)
            continue
        if not C_SOURCE.search(f) or f == KEY_SCHEMA or \
                top(f) == "tests":
            continue
        with open(os.path.join(root, f), errors="replace") as fh:
            text = fh.read()
        # Comments out, their lines kept, so that line numbers hold.
        text = C_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
        for m in C_STRING.finditer(text):
            for k in KEY.findall(m.group(0)):
                if not allow.allows("key", f, k):
                    bad.append("%s:%d writes the Redis key %s by hand "
                               "(use %s)" % (f, text.count("\n", 0,
                                             m.start()) + 1, k, KEY_SCHEMA))
    allow.report_unused(("key",))
    return bad


LANG_TABLE = "services/kb_lang.c"
LANG_LITERAL = re.compile(r'^"\.?(c|cu|hip|py)"$')


def check_langs(root, files, allow):
    bad = []
    for f in files:
        if not C_SOURCE.search(f) or f == LANG_TABLE or \
                top(f) not in SERVICES + SHARED:
            continue
        with open(os.path.join(root, f), errors="replace") as fh:
            text = fh.read()
        text = C_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
        for m in C_STRING.finditer(text):
            lit = m.group(0)
            if LANG_LITERAL.match(lit) and lit != '".c"' and \
                    not allow.allows("lang", f, lit.strip('"')):
                bad.append("%s:%d spells the language literal %s (use %s)"
                           % (f, text.count("\n", 0, m.start()) + 1, lit,
                              "services/kb_lang.h"))
    allow.report_unused(("lang",))
    return bad


KEYS_FIXTURE = "tests/layout/data/keys"
EXPECT = re.compile(r"layout: expect\s*(\*/)?\s*$")


def keys_selftest(root):
    """The keys check on its fixture tree must report exactly the lines
    that end in the comment "layout: expect" (one problem each)."""
    fixture = os.path.join(root, KEYS_FIXTURE)
    files = [os.path.relpath(os.path.join(d, n), fixture)
             for d, _, names in os.walk(fixture) for n in names]
    expected = set()
    for f in files:
        with open(os.path.join(fixture, f), errors="replace") as fh:
            expected |= {"%s:%d" % (f, n) for n, l in enumerate(fh, 1)
                         if EXPECT.search(l)}
    reported = check_keys(fixture, sorted(files), Allow(None))
    for r in reported:
        print("reported: " + r)
    got = [r.split(" ", 1)[0] for r in reported]
    bad = ["%s: marked, not reported" % e for e in sorted(expected - set(got))]
    bad += ["%s: reported, not marked" % g for g in sorted(set(got) - expected)]
    bad += ["%s: reported %d times" % (g, got.count(g))
            for g in sorted(set(got)) if got.count(g) > 1]
    for b in bad:
        print("FAIL: " + b)
    print("layout keys-selftest: %d expected, %d reported, %d problem(s)"
          % (len(expected), len(reported), len(bad)))
    return 1 if bad or not expected else 0


def main(argv):
    if argv[1:] == ["--self-test", "folders"]:
        failures = self_test_folders()
        for f in failures:
            print("FAIL: " + f)
        return 1 if failures else 0
    if len(argv) != 3 or argv[2] not in ("boundaries", "cycles", "folders",
                                         "keys", "langs", "keys-selftest"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    root = os.path.abspath(argv[1])
    if argv[2] == "keys-selftest":
        return keys_selftest(root)
    allow = Allow(os.path.join(root, "tests/layout/allow.txt"))
    files = tree_files(root)
    check = {"boundaries": check_boundaries, "cycles": check_cycles,
             "folders": check_folders, "keys": check_keys,
             "langs": check_langs}[argv[2]]
    bad = check(root, files, allow)
    for b in bad:
        print("FAIL: " + b)
    print("layout %s: %d source files, %d problem(s)"
          % (argv[2], sum(1 for f in files if SOURCE.search(f)), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
