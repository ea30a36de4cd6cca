# syntax=docker/dockerfile:1
# Container image of the MCP elicitation gateway (docs/deployment.md).
#
#   docker build -t elicitation-gateway:0.1.0 .
#   docker run --rm -p 8080:8080 --read-only --tmpfs /tmp \
#       -v "$PWD/gateway.yaml:/etc/gateway/gateway.yaml:ro" \
#       -v "$PWD/policies:/etc/gateway/policies:ro" \
#       -v "$PWD/keys:/etc/gateway-keys/keys:ro" \
#       elicitation-gateway:0.1.0 serve --listen 0.0.0.0:8080 \
#           --config /etc/gateway/gateway.yaml --key-file /etc/gateway-keys/keys
# (gateway.yaml then says `policy: policies/default.yaml`, relative to its own folder.)
#
# Base image: pinned to an exact version tag (the Python the project is tested with). To pin the
# digest as well, on a machine with registry access run
#   docker buildx imagetools inspect python:3.11.7-slim-bookworm     (the "Digest:" line)
# or `crane digest python:3.11.7-slim-bookworm`, and set
#   ARG PYTHON_IMAGE=python:3.11.7-slim-bookworm@sha256:<digest>
# Both stages use the same image so the venv's interpreter path (/usr/local/bin/python3.11)
# exists in the final stage. Every runtime dependency ships binary wheels: no compiler is needed,
# and none is installed in either stage.
ARG PYTHON_IMAGE=python:3.11.7-slim-bookworm

# --- builder: a self-contained virtualenv with the gateway and its pinned dependencies ---------
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml constraints.txt README.md ./
COPY gateway ./gateway
# Optional extras of the project, none by default: the production image carries no MCP SDK.
# deploy/compose.yaml builds its demo upstream with GATEWAY_EXTRAS=demo.
ARG GATEWAY_EXTRAS=""
# Build the project's wheel, then install it (with the extras asked for) and every dependency from
# binary wheels only: a dependency without a wheel for this platform fails the build instead of
# needing a compiler. pip byte-compiles what it installs, so nothing is compiled (or written) at
# run time.
RUN python -m venv /opt/venv \
    && /opt/venv/bin/pip wheel --no-deps --wheel-dir /tmp/wheels . \
    && wheel="$(echo /tmp/wheels/*.whl)" \
    && /opt/venv/bin/pip install --only-binary=:all: -c constraints.txt \
        "${wheel}${GATEWAY_EXTRAS:+[${GATEWAY_EXTRAS}]}" \
    && /opt/venv/bin/elicitation-gateway --version

# --- final: the venv, the reference policies, nothing else --------------------------------------
FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="elicitation-gateway" \
      org.opencontainers.image.description="Security gateway for MCP elicitation" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    TMPDIR=/tmp
COPY --from=builder /opt/venv /opt/venv
# Reference copies of the shipped policies (read-only, owned by root). The policy in use is
# mounted at /etc/gateway (a ConfigMap on Kubernetes, a bind mount with compose); without
# --policy the gateway uses the same default.yaml shipped inside the package.
COPY policies /opt/elicitation-gateway/policies
WORKDIR /opt/elicitation-gateway
# Mounted at run time, never baked in:
#   /etc/gateway/gateway.yaml   gateway config (--config), policy files beside it
#   /etc/gateway-keys/keys      sealing keys (--key-file), or the GATEWAY_KEYS environment variable
#   /tmp                        the only writable path (tmpfs / emptyDir)
VOLUME ["/etc/gateway", "/tmp"]
USER 10001:10001
EXPOSE 8080
# Liveness with the standard library (slim images have no curl). Adjust the port if --listen changes.
HEALTHCHECK --interval=15s --timeout=4s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; r = urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=3); sys.exit(0 if r.status == 200 else 1)"]
ENTRYPOINT ["elicitation-gateway"]
CMD ["serve", "--listen", "0.0.0.0:8080", "--config", "/etc/gateway/gateway.yaml"]
