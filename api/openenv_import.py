"""OpenEnv without its web UI at import time.

`openenv.core.env_server`'s package ``__init__`` imports its Gradio web interface eagerly (for
two names it re-exports), and gradio takes about 3.5 s of the 6 s a server process spends on
imports: every `companyos serve`, every worker process, every training script paid for a UI
CompanyOS never serves. The package already treats the UI as optional (it catches
`ModuleNotFoundError` and sets those names to None), so while that ``__init__`` runs the
module is reported missing, once. `create_app` imports the module itself when
``ENABLE_WEB_INTERFACE`` asks for the UI, and that import goes through as usual: nothing is
taken away, the UI is only loaded when it is used.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

PACKAGE = "openenv.core.env_server"
WEB_UI = f"{PACKAGE}.web_interface"
_REEXPORTED = "create_web_interface_app"
"""The last name the package's ``__init__`` sets: absent while it runs, present after."""


class _WebUIAtPackageInit(MetaPathFinder):
    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        if fullname != WEB_UI:
            return None
        uninstall()  # once: any later import of the UI is a real one
        package = sys.modules.get(PACKAGE)
        if package is not None and not hasattr(package, _REEXPORTED):
            raise ModuleNotFoundError(f"{WEB_UI} is loaded when the web UI is enabled", name=WEB_UI)
        return None


_FINDER = _WebUIAtPackageInit()


def install() -> None:
    """Skip the UI at the package's import, unless OpenEnv is already imported (then it is
    too late, and nothing is changed)."""
    if PACKAGE in sys.modules or _FINDER in sys.meta_path:
        return
    sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
