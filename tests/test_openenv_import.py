"""OpenEnv's web UI (gradio) is not imported with the server, and is still there when asked for
(`api.openenv_import`). Each case runs in a fresh interpreter: imports are process-wide."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_server_is_built_without_importing_gradio():
    out = _run(
        """
        import sys
        from companyos.api.server import build_app
        from companyos.api.settings import Settings
        build_app(Settings(store="memory://"))
        import openenv.core.env_server as package
        print("gradio" in sys.modules, package.create_web_interface_app)
        """
    )
    assert out == "False None"


def test_the_web_ui_still_imports_when_asked_for():
    out = _run(
        """
        import sys
        import companyos.api.server
        from openenv.core.env_server.web_interface import create_web_interface_app
        print("gradio" in sys.modules, callable(create_web_interface_app))
        """
    )
    assert out == "True True"


def test_openenv_imported_first_is_left_as_it_is():
    out = _run(
        """
        import sys
        import openenv.core
        import companyos.api.server
        import openenv.core.env_server as package
        print("gradio" in sys.modules, package.create_web_interface_app is not None)
        """
    )
    assert out == "True True"
