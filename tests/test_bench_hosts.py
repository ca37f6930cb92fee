"""bench/hosts (make hosts): its network comes up with each host reachable only at its
address, and goes away entirely, also when the driver that made it was killed. The full
harness takes minutes and is not run here (docs/deploy.md, "Several hosts, run")."""

import os
import shutil
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("setpriv"),
    reason="needs root, ip and setpriv (network namespaces)",
)


@pytest.fixture(autouse=True)
def _alone():
    from bench.hosts.cluster import live_runs

    if live_runs():  # the addresses are fixed: one run at a time
        pytest.skip("a run of bench/hosts is going on")


def _names() -> str:
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return netns + links


def _reaches(ns: str | None, addr: str) -> bool:
    """Whether a TCP connection from namespace ``ns`` (None: the machine's) to ``addr``:7
    is accepted within 2 s."""
    code = f"import socket; socket.create_connection(({addr!r}, 7), timeout=2)"
    prefix = ["ip", "netns", "exec", ns] if ns else []
    return (
        subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True).returncode == 0
    )


def test_the_hosts_network_reaches_each_host_at_its_address_and_is_removed_entirely():
    from bench.hosts.cluster import Cluster

    cluster = Cluster()
    listeners = []
    try:
        cluster.network_up()
        for host in (cluster.db, cluster.lb, cluster.a):  # a listener on each host's addresses
            for addr in filter(None, (host.front, host.back)):
                code = (
                    "import socket; s = socket.socket(); "
                    f"s.bind(({addr!r}, 7)); s.listen(); [s.accept() for _ in range(99)]"
                )
                listeners.append(
                    subprocess.Popen(["ip", "netns", "exec", host.ns, sys.executable, "-c", code])
                )
        time.sleep(0.5)  # the listeners bound (a failed bind shows as unreachable below)
        # host A reaches the database host on the back network, the balancer on the front
        assert _reaches(cluster.a.ns, cluster.db.back)
        assert _reaches(cluster.a.ns, cluster.lb.front)
        # the balancer has no back address: it cannot reach the database host
        assert not _reaches(cluster.lb.ns, cluster.db.back)
        # host A cut from the back network: the database host is out of reach, A is not
        cluster.cut(cluster.a)
        assert not _reaches(cluster.a.ns, cluster.db.back)
        assert _reaches(None, cluster.a.front)
        cluster.mend(cluster.a)  # the bridge port and A's neighbour entry come back by themselves
        deadline = time.monotonic() + 15
        while not _reaches(cluster.a.ns, cluster.db.back):
            assert time.monotonic() < deadline, "A did not reach the database host again"
        assert cluster.a.ns in _names()
    finally:
        for listener in listeners:
            listener.kill()
            listener.wait()
        left = cluster.stop()
    assert left == []
    assert f"sasch{cluster.run_id}" not in _names() and not cluster.tmp.exists()


def test_a_killed_drivers_namespaces_links_and_folder_are_swept_by_the_next_run(tmp_path):
    script = (
        "import os, sys; sys.path.insert(0, '.');"
        "from bench.hosts.cluster import Cluster;"
        "c = Cluster(); c.network_up(); print(c.run_id, c.tmp, flush=True);"
        "os.kill(os.getpid(), 9)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
    )
    run_id, folder = done.stdout.split()
    assert f"sasch{run_id}-a" in _names()  # left behind: SIGKILL runs no cleanup
    from bench.hosts.cluster import sweep_leftovers

    removed = sweep_leftovers()
    assert f"netns sasch{run_id}-a" in removed and f"folder {folder}" in removed
    assert f"sasch{run_id}" not in _names() and not os.path.exists(folder)
