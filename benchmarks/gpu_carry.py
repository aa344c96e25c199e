"""Pack what `gpu_sft.py` needs on the device machine, which reaches no package index and takes
at most 64 MiB of carried files: the wheels its image lacks, unsloth's among them, in `.whl/`,
and `.gpu/` with a home of demonstrations and a tokenizer (one .tar.xz) and `run.sh`.

unsloth and bitsandbytes alone are 72 MB, so two wheels are cut: bitsandbytes keeps only its
CUDA 13 and CPU libraries (the image's torch is cu130), unsloth leaves out its web studio.

    python benchmarks/gpu_carry.py --home build/adapter/home \\
        --tokenizer ~/.cache/mlagent/hf-from-gguf
    # then the device tool, carry [".gpu", ".whl"]:  SHAPES=135m,7b:4bit bash .gpu/run.sh
    # (RECIPE=distil: the distil recipe on the home's search sessions)

Both folders must be git-ignored (`.git/info/exclude`): they are build outputs, not sources.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Versions that ran on the H100 on 2026-11-26 (torch 2.11 + cu130, transformers 5.17, Python 3.12)
WHEELS = (
    "unsloth==2026.10.9 unsloth_zoo==2026.10.9 bitsandbytes==0.50.2 trl==1.15.0 datasets==4.8.5 "
    "dill==0.4.1 multiprocess==0.70.19 tyro==1.0.17 docstring-parser==0.18.0 shtab==1.13.0 "
    "typeguard==4.6.1 torchao==0.18.0 cut_cross_entropy==25.1.1 msgspec==0.22.0 json5==0.17.3 "
    "nest_asyncio==1.6.0 structlog==26.1.0 pydantic==2.12.5 pydantic-core==2.41.5 "
    "annotated-types==0.7.0 typing-inspection==0.4.2 gguf==0.17.1 sqlite-utils==3.38 "
    "sqlite-fts4==1.0.3 click-default-group==1.2.4"
).split()
PLATFORMS = ["manylinux_2_17_x86_64", "manylinux_2_24_x86_64", "manylinux_2_28_x86_64", "any"]
CUTS: dict[str, Callable[[str], bool]] = {  # wheel name -> which of its files to leave out
    "bitsandbytes": lambda n: (
        n.startswith("bitsandbytes/libbitsandbytes_")
        and not any(k in n for k in ("cuda130", "cpu"))
    ),
    "unsloth": lambda n: n.startswith("studio/"),
}
RUN_SH = """set -e
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \\
    --target /tmp/site .whl/*.whl
tar -xJf .gpu/bundle.tar.xz -C .gpu
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 MLAGENT_CACHE_DIR=/tmp/mlcache \\
    HF_HUB_OFFLINE=1 UNSLOTH_DISABLE_STATISTICS=1 TOKENIZERS_PARALLELISM=false
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
timeout ${LIMIT:-400} python3 benchmarks/gpu_sft.py --home .gpu/home --tokenizer .gpu/tok \\
    --steps ${STEPS:-4} --shapes ${SHAPES:-135m,1.7b:4bit,7b:4bit} --backend ${BACKEND:-auto} \\
    --recipe ${RECIPE:-sft} --out $OUT \\
    2>&1 | grep -v "Warning\\|forward_call\\|deprecated" | tee $OUT/log.txt
"""


def cut(wheel: Path, leave_out: Callable[[str], bool]) -> None:
    """Rewrite `wheel` without the files `leave_out` names (and their RECORD lines)."""
    tmp = wheel.with_suffix(".cut")
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            if leave_out(item.filename):
                continue
            data = src.read(item.filename)
            if item.filename.endswith(".dist-info/RECORD"):
                kept = [ln for ln in data.decode().splitlines() if not leave_out(ln.split(",")[0])]
                data = ("\n".join(kept) + "\n").encode()
            dst.writestr(item, data)
    tmp.replace(wheel)


def wheels(dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)
    platforms = [x for p in PLATFORMS for x in ("--platform", p)]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
        + ["--python-version", "3.12", "--implementation", "cp", *platforms, "-d", str(dest)]
        + WHEELS,
        check=True,
    )
    for wheel in dest.glob("*.whl"):
        name = wheel.name.split("-")[0]
        if name in CUTS:
            cut(wheel, CUTS[name])


def bundle(home: Path, tokenizer: Path, dest: Path) -> None:
    """The home without workspaces/ (sft reads the store and snapshots) and the tokenizer's
    files without weights, as one .tar.xz (its CSV snapshots shrink about 15 times)."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp)
        shutil.copytree(home, stage / "home", ignore=shutil.ignore_patterns("workspaces"))
        (stage / "tok").mkdir()
        for f in tokenizer.iterdir():
            if f.is_file() and not f.name.endswith((".safetensors", ".bin", ".gguf")):
                shutil.copy(f, stage / "tok" / f.name)
        with tarfile.open(dest / "bundle.tar.xz", "w:xz") as tar:
            tar.add(stage / "home", "home")
            tar.add(stage / "tok", "tok")
    (dest / "run.sh").write_text(RUN_SH)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--home", type=Path, required=True, help="a home holding demonstrations")
    p.add_argument("--tokenizer", type=Path, required=True, help="an HF folder's tokenizer")
    a = p.parse_args()
    if not (a.home / "mlagent.db").is_file():
        raise SystemExit(f"{a.home} holds no mlagent.db: record demonstrations first")
    if not (a.tokenizer / "tokenizer.json").is_file():
        raise SystemExit(f"{a.tokenizer} has no tokenizer.json")
    wheels(ROOT / ".whl")
    bundle(a.home, a.tokenizer, ROOT / ".gpu")
    sizes = {d: sum(f.stat().st_size for f in (ROOT / d).rglob("*")) for d in (".whl", ".gpu")}
    print(", ".join(f"{d}: {n / 2**20:.1f} MiB" for d, n in sizes.items()))


if __name__ == "__main__":
    main()
