"""bench/hosts (make hosts): its network comes up with each host reachable only at its
address, and goes away entirely, also when the driver that made it was killed. The full
harness takes minutes and is not run here (docs/deploy.md, "Several hosts, run")."""

import os
import shutil
import subprocess
import sys

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


def test_the_hosts_network_reaches_each_host_at_its_address_and_is_removed_entirely():
    from bench.hosts.cluster import Cluster

    cluster = Cluster()
    try:
        cluster.network_up()
        ping = ["ping", "-c", "1", "-W", "2"]
        # host A reaches the database host on the back network, the balancer on the front
        for target in (cluster.db.back, cluster.lb.front):
            done = subprocess.run(["ip", "netns", "exec", cluster.a.ns, *ping, target])
            assert done.returncode == 0, target
        # the balancer has no back address: it cannot reach the database host
        done = subprocess.run(
            ["ip", "netns", "exec", cluster.lb.ns, *ping, cluster.db.back], capture_output=True
        )
        assert done.returncode != 0
        # host A cut from the back network: the database host is out of reach, A is not
        cluster.cut(cluster.a)
        done = subprocess.run(["ip", "netns", "exec", cluster.a.ns, *ping, cluster.db.back])
        assert done.returncode != 0
        assert subprocess.run([*ping, cluster.a.front]).returncode == 0
        cluster.mend(cluster.a)
        done = subprocess.run(["ip", "netns", "exec", cluster.a.ns, *ping, cluster.db.back])
        assert done.returncode == 0
        assert cluster.a.ns in _names()
    finally:
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
