# CompanyOS as a container: the OpenEnv server on port 8000, its event store on a volume.
#   docker build -t companyos .
#   docker run -p 8000:8000 -v companyos-data:/data companyos
# Settings are COMPANYOS_* environment variables (see `companyos serve --help`), e.g.
#   -e COMPANYOS_STORE=postgresql+psycopg://user@db/companyos -e COMPANYOS_DIFFICULTY=3
# tests/test_container.py checks this file against the repository (it is not built in CI).

# ---- build: a wheel of the package (its sources, the viewer's static files) ----------------
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY companyos/ companyos/
COPY domain/ domain/
COPY events/ events/
COPY projections/ projections/
COPY api/ api/
COPY agents/ agents/
COPY server/ server/
COPY analytics/ analytics/
RUN pip wheel --no-deps --wheel-dir /wheels .

# ---- run: the wheel and its dependencies, nothing else -------------------------------------
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=build /wheels /wheels
# The postgres extra lets the same image serve many replicas from one PostgreSQL database.
RUN pip install "$(ls /wheels/companyos-*.whl)[postgres]" && rm -rf /wheels

RUN useradd --system --uid 10001 --user-group --home-dir /home/companyos --create-home companyos \
    && mkdir -p /data && chown companyos:companyos /data
USER companyos
WORKDIR /home/companyos

ENV COMPANYOS_STORE=sqlite:////data/companyos.db
VOLUME /data
EXPOSE 8000

# Python's own urllib: the slim image has no curl or wget.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4).status == 200 else 1)"]

CMD ["companyos", "serve", "--host", "0.0.0.0", "--port", "8000"]
