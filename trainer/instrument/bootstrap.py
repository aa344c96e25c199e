"""The fixed program that runs an instrumented copy: it takes the copy before anything of the
agent's can run, then starts the agent's program as a plain `python SCRIPT` would.

Run as `python -I -S -c BOOTSTRAP SOURCE SCRIPT`: isolated (no script folder or current folder
on sys.path, no PYTHON* variables, no user site) and without site, so nothing of the
workspace, the environment or site-packages (.pth files, sitecustomize) runs before the copy
is read and gone. SOURCE "-" is stdin (a pipe the bootstrap drains); otherwise a file it
deletes. Then it does what a plain `python SCRIPT` start does: site (user site included),
PYTHONPATH, the script's folder first on sys.path, PYTHONUNBUFFERED, PYTHONDONTWRITEBYTECODE.
"""

# The interpreter's options: isolated (-I: -E -P -s) and without site (-S).
COMMAND = ("python", "-I", "-S", "-c")

BOOTSTRAP = """\
def _mlagent_run():
    import sys
    loaded = set(sys.modules)
    import ast, os
    source, script = sys.argv[1], sys.argv[2]
    if source == "-":
        chunks = []
        while chunk := os.read(0, 1 << 16):
            chunks.append(chunk)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        head, body = b"".join(chunks).decode("utf-8").split("\\n", 1)
    else:
        with open(source, encoding="utf-8") as fh:
            head, body = fh.read().split("\\n", 1)
        try:
            os.unlink(source)
        except OSError:  # the copy would stay readable: run the original, without markers
            with open(script, "rb") as fh:
                head, body = "", fh.read()
    origin = [int(n) for n in head.split(",")] if head else []
    tree = ast.parse(body, script)
    for node in ast.walk(tree):
        if not origin or getattr(node, "lineno", None) is None:
            continue
        start, end = origin[node.lineno - 1], origin[(node.end_lineno or node.lineno) - 1]
        if start == end and node.lineno != node.end_lineno:
            node.end_col_offset = max(node.end_col_offset or 0, node.col_offset)
        node.lineno, node.end_lineno = start, end
    path = os.path.abspath(script)
    code = compile(tree, path, "exec", dont_inherit=True)
    for name in set(sys.modules) - loaded:  # the program imports its own `ast`, as usual
        del sys.modules[name]
    env = os.environ
    import io, site
    if not env.get("PYTHONNOUSERSITE"):
        site.check_enableusersite = lambda: (
            os.geteuid() == os.getuid() and os.getegid() == os.getgid()
        ) or None
    sys.path[0:0] = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    site.main()
    sys.path.insert(0, os.path.dirname(path))
    sys.dont_write_bytecode = sys.dont_write_bytecode or bool(env.get("PYTHONDONTWRITEBYTECODE"))
    if env.get("PYTHONUNBUFFERED"):
        for name, fd in (("stdout", 1), ("stderr", 2)):
            old = getattr(sys, name)
            raw = io.FileIO(fd, "w", closefd=False)
            raw.name = old.name
            new = io.TextIOWrapper(raw, old.encoding, old.errors, "\\n", old.line_buffering, True)
            setattr(sys, name, new)
            setattr(sys, "__" + name + "__", new)
    scope = sys.modules["__main__"].__dict__
    del scope["_mlagent_run"]
    scope["__file__"] = path
    sys.argv[:] = [script]
    return code
try:
    exec(_mlagent_run())
except SystemExit:
    raise
except BaseException as _mlagent_error:
    _mlagent_error.with_traceback(_mlagent_error.__traceback__.tb_next)
    __import__("sys").excepthook(
        type(_mlagent_error), _mlagent_error, _mlagent_error.__traceback__
    )
    raise SystemExit(1) from None
"""
