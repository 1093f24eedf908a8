"""The replay viewer at `/viewer/`: static HTML, CSS and JavaScript shipped inside the package
(`companyos/api/viewer/`), reading the episode API from the same server. No build step."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

VIEWER_DIR = Path(__file__).with_name("viewer")
ASSETS = ("index.html", "app.js", "style.css")


def mount_viewer(app: FastAPI) -> None:
    if missing := [a for a in ASSETS if not (VIEWER_DIR / a).is_file()]:
        # A wheel built without its package data would otherwise serve 404s silently.
        raise RuntimeError(f"viewer assets missing from {VIEWER_DIR}: {', '.join(missing)}")

    @app.get("/viewer", include_in_schema=False)
    def viewer() -> RedirectResponse:
        # Relative, so that the page's relative asset and API URLs also work behind a proxy
        # that serves the app under a path prefix.
        return RedirectResponse("viewer/", status_code=307)

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        # A person who opens the server's address lands on the viewer, not on a 404.
        return RedirectResponse("viewer/", status_code=307)

    app.mount("/viewer/", StaticFiles(directory=VIEWER_DIR, html=True), name="viewer")
