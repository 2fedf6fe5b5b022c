"""The deployment files are real: deploy/kubernetes/toolbridge.yaml validates against the
Kubernetes API schemas (kubernetes-validate, strict: an unknown or mistyped field fails), its
gateway config passes `toolbridge check-config` (with the pod name and the Secret file it
expects), its probes use the open /healthz, its grace period covers shutdown_grace and its pod
runs deploy/container/Dockerfile's image as built; deploy/nginx/toolbridge.conf passes
`nginx -t` and deploy/haproxy/haproxy.cfg `haproxy -c` (addresses replaced by loopback ones).
The configs' behaviour is tested in test_multi_gateway.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from tb_support import toolbridge_bin

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "deploy/kubernetes/toolbridge.yaml"


def configmap_config() -> str:
    text = MANIFEST.read_text()
    block = text.split("toolbridge.yaml: |\n", 1)[1].split("\n---", 1)[0]
    return textwrap.dedent(block)


# The oldest and the newest Kubernetes the validator ships schemas for.
@pytest.mark.parametrize("version", ["1.25.0", "1.37.0"])
def test_the_kubernetes_manifests_validate_against_the_api_schemas(version):
    docs = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
    assert [d["kind"] for d in docs] == ["ConfigMap", "Service", "Service", "StatefulSet"]
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)
    # The validator is not a rubber stamp: a misspelt field and a mistyped one both fail.
    statefulset = docs[-1]
    pod = statefulset["spec"]["template"]["spec"]
    pod["terminationGracePeriod"] = pod.pop("terminationGracePeriodSeconds")
    with pytest.raises(kubernetes_validate.ValidationError, match="terminationGracePeriod"):
        kubernetes_validate.validate(statefulset, version, strict=True)
    pod["terminationGracePeriodSeconds"] = pod.pop("terminationGracePeriod")
    pod["containers"][0]["readinessProbe"]["periodSeconds"] = "5s"
    with pytest.raises(kubernetes_validate.ValidationError, match="periodSeconds"):
        kubernetes_validate.validate(statefulset, version, strict=True)


def test_the_kubernetes_config_passes_check_config(tmp_path):
    key = tmp_path / "eval"
    key.write_text("0123456789abcdef0123456789abcdef\n")
    config = tmp_path / "toolbridge.yaml"
    config.write_text(configmap_config().replace("/var/run/toolbridge/keys/eval", str(key)))
    env = {**os.environ, "POD_NAME": "toolbridge-0",
           "PATH": f"{toolbridge_bin().parent}:{os.environ['PATH']}"}
    r = subprocess.run([str(toolbridge_bin()), "check-config", str(config)], env=env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    # Without the pod name the gateway id cannot be made: a precise error, not a silent default.
    env.pop("POD_NAME")
    r = subprocess.run([str(toolbridge_bin()), "check-config", str(config)], env=env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "gateway.gateway_id" in r.stderr and "POD_NAME" in r.stderr, r.stderr


def test_the_kubernetes_probes_and_grace_period_fit_the_config():
    text = MANIFEST.read_text()
    assert text.count("httpGet: {path: /healthz, port: 8848}") == 2  # readiness and liveness
    grace = int(re.search(r"terminationGracePeriodSeconds: (\d+)", text).group(1))
    shutdown = int(re.search(r"shutdown_grace: (\d+)s", configmap_config()).group(1))
    assert grace > shutdown, (grace, shutdown)
    assert "name: POD_NAME" in text and "${env:POD_NAME}" in configmap_config()


def test_the_kubernetes_pod_runs_the_container_image_as_built():
    """The StatefulSet's args are the image's CMD with the ConfigMap mounted where it points, and
    the image's entrypoint is the gateway (deploy/container/Dockerfile)."""
    dockerfile = (ROOT / "deploy/container/Dockerfile").read_text()
    entrypoint = json.loads(re.search(r"^ENTRYPOINT (.+)$", dockerfile, re.M).group(1))
    cmd = json.loads(re.search(r"^CMD (.+)$", dockerfile, re.M).group(1))
    assert entrypoint == ["/usr/local/bin/toolbridge"]
    pod = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d][-1]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["args"] == cmd
    config_dir = next(m["mountPath"] for m in container["volumeMounts"] if m["name"] == "config")
    assert cmd[cmd.index("--config") + 1] == f"{config_dir}/toolbridge.yaml"
    assert container["ports"][0]["containerPort"] == 8848 and "EXPOSE 8848/tcp" in dockerfile
    # The ConfigMap's servers run commands the image holds.
    servers = yaml.safe_load(configmap_config())["servers"]
    copied = " ".join(re.findall(r"^COPY (.+)$", dockerfile, re.M))
    for server in servers.values():
        assert f"build/{server['command']}" in copied, server


def loopback(text: str) -> str:
    return re.sub(r"10\.0\.0\.1([123]):8848", r"127.0.0.1:1880\1", text)


def test_the_nginx_config_is_valid(tmp_path):
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    (tmp_path / "toolbridge.conf").write_text(
        loopback((ROOT / "deploy/nginx/toolbridge.conf").read_text()).replace("listen 80;", "listen 127.0.0.1:18800;"))
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
        f"http {{ access_log off; include {tmp_path}/toolbridge.conf; }}\n")
    r = subprocess.run([nginx, "-t", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert "syntax is ok" in r.stderr


def test_the_haproxy_config_is_valid(tmp_path):
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(loopback((ROOT / "deploy/haproxy/haproxy.cfg").read_text()).replace("bind :80", "bind 127.0.0.1:18801"))
    r = subprocess.run([haproxy, "-c", "-f", str(cfg)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
