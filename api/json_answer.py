"""JSON answers for routes whose content the server built itself.

FastAPI checks a route's return value against its response model and serialises it again;
for a dict of JSON values (an episode's world, a page of events) that is nothing but cost: half
a millisecond for a 10 KB world on a 2-core machine, and for a synchronous route a second trip
through the thread pool. These routes hand back the bytes instead, encoded once by orjson.
They keep ``response_model`` in their decorator, so the documented schema is unchanged.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi.encoders import jsonable_encoder
from starlette.responses import JSONResponse, Response

_OPTIONS = orjson.OPT_NON_STR_KEYS  # as json.dumps: an int key is written as a string


class JSONAnswer(Response):
    media_type = "application/json"


def json_answer(content: Any, status_code: int = 200) -> Response:
    """``content`` as Starlette's `JSONResponse` would send it (the same JSON value): orjson
    where it can write every value, FastAPI's encoder for anything else (a model, a date)."""
    try:
        return JSONAnswer(orjson.dumps(content, option=_OPTIONS), status_code=status_code)
    except TypeError:  # a value orjson does not write: encode it as FastAPI would
        return JSONResponse(jsonable_encoder(content), status_code=status_code)
