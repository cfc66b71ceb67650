"""Settings plumbing: ``initializationOptions`` at initialize, ``workspace/configuration`` after.

Owns when settings are read: at ``initialize`` (``initializationOptions``), at
``initialized`` and on ``workspace/didChangeConfiguration`` (a ``workspace/configuration``
request for section ``cad`` when the client supports it, else the notification's own
``settings``). Bad values are reported with ``window/showMessage`` and the previous
settings stay in force.
"""
from __future__ import annotations

from typing import Any

from lsprotocol import types

from .settings import SECTION, SettingsError

__all__ = ["on_initialize", "on_initialized", "on_did_change_configuration", "CONFIGURATION_TIMEOUT_S"]

CONFIGURATION_TIMEOUT_S = 10.0


def _apply(ls: Any, options: Any, source: str) -> None:
    try:
        settings, warnings = ls.settings.merge(options, source=source)
    except SettingsError as exc:
        ls.show(f"Copy-as-Decode settings: {exc}", types.MessageType.Error)
        return
    for warning in warnings:
        ls.log(warning, types.MessageType.Warning)
    if settings != ls.settings:
        ls.settings = settings
        ls.log(f"settings from {source}: {settings}")


def on_initialize(ls: Any, params: types.InitializeParams) -> None:
    _apply(ls, params.initialization_options, "initializationOptions")


def _supports_configuration(ls: Any) -> bool:
    workspace = getattr(ls.client_capabilities, "workspace", None)
    return bool(workspace is not None and workspace.configuration)


async def _fetch(ls: Any) -> None:
    if not _supports_configuration(ls):
        return
    try:
        values = await ls.protocol.request(  # a client that never answers must not block preload
            types.WORKSPACE_CONFIGURATION,
            types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)]), CONFIGURATION_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - a client may not answer; keep current settings
        ls.log(f"workspace/configuration failed: {exc}", types.MessageType.Warning)
        return
    if values and values[0]:
        _apply(ls, values[0], "workspace/configuration")


async def on_initialized(ls: Any, params: types.InitializedParams) -> None:
    await _fetch(ls)
    if ls.preload:
        ls.log(f"preloading model {ls.settings.model!r} on {ls.settings.device}")
        ls.worker.preload(ls.settings.model, ls.settings.device, ls.settings.draft_model)


async def on_did_change_configuration(ls: Any, params: types.DidChangeConfigurationParams) -> None:
    if _supports_configuration(ls):
        await _fetch(ls)
    elif isinstance(params.settings, dict):
        _apply(ls, params.settings, "workspace/didChangeConfiguration")
