"""The docker sandbox keeps the instrumented copy out of the workspace too (see
test_instrument_isolation for the attacks): the copy arrives on the exec's stdin."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlagent_tui.core.sandbox.docker import DockerExecutor

from .conftest import require_docker
from .test_instrument_isolation import MARKER, STEAL, _assert_no_theft, _everything_in, _run

require_docker()

pytestmark = pytest.mark.docker


class SpyDocker(DockerExecutor):
    """The real docker sandbox; notes what the workspace holds as the command starts."""

    def run(self, command, *, cwd=None, **kw):  # noqa: ANN001, ANN003, ANN201
        self.seen_at_start = _everything_in(Path(cwd))
        return super().run(command, cwd=cwd, **kw)


def test_the_docker_sandbox_hands_the_copy_over_stdin(tmp_path: Path) -> None:
    (tmp_path / "ast.py").write_text(STEAL)
    executor = SpyDocker(tmp_path, mem_mb=512)
    try:
        res, report = _run(executor, tmp_path)
        _assert_no_theft(res, report)
        assert not MARKER.search(executor.seen_at_start)
        program = "import sys\nprint('stdin', repr(sys.stdin.read()))\n" * 3
        res, report = _run(executor, tmp_path, program)
        assert res.output.splitlines() == ["stdin ''"] * 3 and report.reached == 6
        plain = executor.run("wc -c; echo done", cwd=tmp_path, stdin=b"x" * 300_000)
        assert plain.output.split() == ["300000", "done"]  # every byte, then the end of input
    finally:
        executor.close()
