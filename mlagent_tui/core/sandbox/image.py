"""The docker sandbox image: from the Dockerfile where a registry answers, else offline.

Offline: `debootstrap --variant=minbase` a Debian root file system with python3, numpy,
pandas and scikit-learn from the machine's own apt mirror, add the non-root user, then
`docker import` it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

IMAGE = "mlagent-sandbox:latest"
SANDBOX_UID = 1000
PACKAGES = ["python3", "python3-numpy", "python3-pandas", "python3-sklearn", "python-is-python3"]
DOCKERFILE = Path(__file__).with_name("Dockerfile")
DEFAULT_MIRROR = "http://deb.debian.org/debian"
_CHANGES = [
    f"USER {SANDBOX_UID}:{SANDBOX_UID}",
    "WORKDIR /workspace",
    "ENV PYTHONUNBUFFERED=1 OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 HOME=/tmp",
    'CMD ["sleep", "infinity"]',
]

Log = Callable[[str], None]


class ImageError(Exception):
    """The sandbox image cannot be built or found."""


def docker_client():  # noqa: ANN201 - docker is imported lazily
    import docker
    from docker.errors import DockerException

    try:
        client = docker.from_env()
        client.ping()
    except DockerException as exc:
        raise ImageError(
            f"cannot reach dockerd ({exc}); start it (`dockerd &`) or use --sandbox local"
        ) from exc
    return client


def image_exists(tag: str = IMAGE) -> bool:
    from docker.errors import ImageNotFound

    try:
        docker_client().images.get(tag)
    except ImageNotFound:
        return False
    return True


def apt_mirror() -> tuple[str, str]:
    """The configured Debian mirror and suite (deb822 or one-line sources)."""
    texts = [p.read_text() for p in Path("/etc/apt").glob("sources.list.d/*.sources")]
    for text in texts:
        uris = re.search(r"^URIs:\s*(\S+)", text, re.M)
        suites = re.search(r"^Suites:\s*(\S+)", text, re.M)
        if uris and suites and "security" not in uris.group(1):
            return uris.group(1), suites.group(1)
    legacy = Path("/etc/apt/sources.list")
    if legacy.exists():
        m = re.search(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)\s+main", legacy.read_text(), re.M)
        if m:
            return m.group(1), m.group(2)
    return DEFAULT_MIRROR, "bookworm"


def build_offline(tag: str = IMAGE, log: Log = print) -> str:
    if not shutil.which("debootstrap"):
        raise ImageError("debootstrap not found: apt-get install debootstrap")
    mirror, suite = apt_mirror()
    with tempfile.TemporaryDirectory(prefix="mlagent-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        log(f"debootstrap {suite} from {mirror} (minbase + {' '.join(PACKAGES)}) ...")
        _check(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(PACKAGES)}",
                suite,
                str(rootfs),
                mirror,
            ],
            "debootstrap",
        )
        _check(
            ["chroot", str(rootfs), "useradd", "-u", str(SANDBOX_UID), "-m", "sandbox"],
            "useradd",
        )
        (rootfs / "workspace").mkdir(exist_ok=True)
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            shutil.rmtree(rootfs / junk, ignore_errors=True)
        tarball = Path(tmp) / "rootfs.tar"
        log("packing the root file system ...")
        _check(["tar", "-C", str(rootfs), "-cf", str(tarball), "."], "tar")
        log(f"docker import -> {tag}")
        repo, _, version = tag.partition(":")
        client = docker_client()
        client.api.import_image_from_file(
            str(tarball), repository=repo, tag=version or "latest", changes=_CHANGES
        )
    return tag


def build_from_dockerfile(tag: str = IMAGE, log: Log = print) -> str:
    from docker.errors import APIError, BuildError

    client = docker_client()
    log(f"docker build {DOCKERFILE.parent} -> {tag}")
    try:
        client.images.build(
            path=str(DOCKERFILE.parent), dockerfile=DOCKERFILE.name, tag=tag, rm=True
        )
    except (BuildError, APIError) as exc:
        raise ImageError(f"docker build failed: {exc}") from exc
    return tag


def build_image(offline: bool = False, tag: str = IMAGE, log: Log = print) -> str:
    """Build the sandbox image; without --offline try the registry first, then fall back."""
    if offline:
        return build_offline(tag, log)
    try:
        return build_from_dockerfile(tag, log)
    except ImageError as exc:
        log(f"{exc}\nno registry reachable: building offline instead")
        return build_offline(tag, log)


def _check(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ImageError(f"{what} failed (exit {proc.returncode}): {proc.stderr.strip()[-1500:]}")
