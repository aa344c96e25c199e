"""The installed package's version, which both commands print for `--version`."""

from __future__ import annotations


def installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mlagent")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"
