"""The VS Code extension's manifest and lockfile, and that it builds from the lockfile.

The behaviour tests (the real vscode-languageclient against real server processes) are in
test_vscode_client.py; they share the session-scoped build (conftest.py `vscode_extension`).
"""
from __future__ import annotations

import json

import pytest
from pathlib import Path

VSCODE = Path(__file__).resolve().parents[2] / "clients" / "vscode"
PACKAGE = json.loads((VSCODE / "package.json").read_text())


def test_lockfile_pins_the_declared_dependencies():
    lock = json.loads((VSCODE / "package-lock.json").read_text())
    declared = {**PACKAGE["dependencies"], **PACKAGE["devDependencies"]}
    for name, version in declared.items():
        assert version[0].isdigit(), f"{name} must be pinned to an exact version, not {version!r}"
        locked = lock["packages"][f"node_modules/{name}"]["version"]
        assert locked == version, f"package-lock.json has {name}@{locked}, package.json pins {version}"
    commands = {c["command"] for c in PACKAGE["contributes"]["commands"]}
    assert "copyAsDecode.applyEditInstruction" in commands
    assert "cad.applyEdit" not in commands, "cad.applyEdit is the server's command; the client forwards it"


def test_activation_is_lazy():
    events = PACKAGE["activationEvents"]
    assert "*" not in events and "onStartupFinished" not in events, events
    assert all(e.startswith(("onLanguage:", "onCommand:")) for e in events), events
    for command in PACKAGE["contributes"]["commands"]:
        if command["command"] in ("copyAsDecode.applyEditInstruction", "copyAsDecode.previewEditInstruction"):
            assert f"onCommand:{command['command']}" in events
    languages = PACKAGE["contributes"]["configuration"]["properties"]["copyAsDecode.languages"]["default"]
    assert sorted(f"onLanguage:{lang}" for lang in languages) == sorted(e for e in events if e.startswith("onLanguage:"))


def test_every_server_setting_is_exposed_with_a_schema():
    from cad_lsp.settings import _KEYS, RESOLVER_MODES, STRATEGIES, Settings

    props = PACKAGE["contributes"]["configuration"]["properties"]
    server_keys = [key for key in _KEYS if "_" not in key]  # the camelCase names clients send
    assert len(server_keys) >= 6
    for key in server_keys:
        schema = props[f"copyAsDecode.{key}"]
        assert "type" in schema and ("description" in schema or "markdownDescription" in schema), key
        # the server accepts the default the extension would send
        default = schema["default"]
        Settings().merge({key: "auto" if default is None else default}, source="test")
    budget = props["copyAsDecode.maxNewTokens"]
    assert "integer" in budget["type"] and budget["minimum"] == 1 and budget["maximum"] >= 1024
    assert set(props["copyAsDecode.strategy"]["enum"]) == set(STRATEGIES)
    assert set(props["copyAsDecode.resolverMode"]["enum"]) == set(RESOLVER_MODES)
    assert props["copyAsDecode.applyTruncated"]["type"] == "boolean"
    timeout = props["copyAsDecode.applyEditTimeout"]
    assert timeout["type"] == "number" and timeout["exclusiveMinimum"] == 0 and timeout["maximum"] == 86400
    assert props["copyAsDecode.trace.server"]["enum"] == ["off", "messages", "verbose"]


def test_package_metadata_for_vsce():
    assert PACKAGE["license"] == "MIT"
    licence = (VSCODE / "LICENSE").read_text()
    assert licence.startswith("MIT License") and licence == (VSCODE.parents[1] / "LICENSE").read_text()
    assert "example.invalid" not in json.dumps(PACKAGE), "placeholder repository URL"
    ignore = (VSCODE / ".vscodeignore").read_text().split()
    assert "src/**" in ignore and "**/*.ts" in ignore
    # bundled: the package ships dist/extension.js, not node_modules (vsce warned about 211 files)
    assert "node_modules/**" in ignore and PACKAGE["main"] == "./dist/extension.js"
    assert "bundle" in PACKAGE["scripts"]["vscode:prepublish"]


def test_extension_compiles_from_lockfile(vscode_extension):
    for module in ("extension", "commands", "runCommand", "ranges", "settings", "statusBar", "previewDocuments"):
        assert (vscode_extension / "out" / f"{module}.js").is_file(), f"tsc did not emit out/{module}.js"
    main = json.loads((vscode_extension / "package.json").read_text())["main"]
    assert (vscode_extension / main).resolve().is_file(), f"package.json main {main!r} does not exist after the build"


def test_make_vsix_packages_the_bundled_extension(tmp_path):
    """`make vsix` in a copy of the repository's Makefile + clients/vscode: one bundled file, the
    licence, no node_modules, and vsce raises no warning (licence, bundling)."""
    import shutil
    import subprocess
    import zipfile

    from vscode_harness import NETWORK_ERRORS

    if not (shutil.which("npm") and shutil.which("make")):
        pytest.skip("npm or make is not installed")
    repo = VSCODE.parents[1]
    work = tmp_path / "repo"
    shutil.copytree(VSCODE, work / "clients" / "vscode", ignore=shutil.ignore_patterns("node_modules", "out", "dist", "*.vsix"))
    shutil.copy(repo / "Makefile", work / "Makefile")
    shutil.copy(repo / "LICENSE", work / "LICENSE")
    proc = subprocess.run(["make", "vsix"], cwd=work, capture_output=True, text=True, timeout=900)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0 and any(marker in output for marker in NETWORK_ERRORS):
        pytest.skip(f"npm registry unreachable, vsix not built: {output.strip()[-500:]}")
    assert proc.returncode == 0, output[-4000:]
    assert " WARNING " not in output, output[-4000:]
    (vsix,) = (work / "clients" / "vscode").glob("*.vsix")
    assert vsix.name == f"copy-as-decode-{PACKAGE['version']}.vsix"
    names = zipfile.ZipFile(vsix).namelist()
    assert "extension/dist/extension.js" in names and "extension/LICENSE.txt" in names, names
    assert not any("node_modules" in n or n.endswith(".ts") or n.endswith(".map") for n in names), names
    assert len(names) < 12, names
