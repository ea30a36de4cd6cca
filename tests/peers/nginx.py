"""nginx (Debian package) as a round-robin load balancer in front of gateway replicas, for tests.

Loopback only; a private prefix directory for its pid, logs and temp files; stopped by its PID.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from tests.peers.procs import LOOPBACK, Peer, free_port, running

CONFIG = """daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile 8192;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    client_max_body_size 16m;
    upstream gateways {{
{servers}
    }}
    server {{
        listen {host}:{port} backlog=1024;
        location / {{
            proxy_pass http://gateways;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 300s;
        }}
    }}
}}
"""


def nginx_binary() -> str:
    found = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    )
    if found is None:
        raise RuntimeError("nginx is not installed: apt-get install -y nginx (.ci/run does it)")
    return found


@contextlib.asynccontextmanager
async def round_robin_nginx(backends: Sequence[int]) -> AsyncIterator[Peer]:
    """nginx on a free loopback port, round-robin over the gateway ports ``backends``."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="nginx-") as prefix:
        servers = "\n".join(f"        server {LOOPBACK}:{p};" for p in backends)
        conf = Path(prefix) / "nginx.conf"
        conf.write_text(CONFIG.format(prefix=prefix, servers=servers, host=LOOPBACK, port=port))
        async with running([nginx_binary(), "-p", prefix, "-c", str(conf)], port) as peer:
            yield peer
