#!/usr/bin/env python3
"""The calls real clients make that pve-gitops itself does not, made with proxmoxer.

Usage: calls.py HOST PORT TOKEN_USER TOKEN_NAME TOKEN_SECRET  (run by run.ts against a simulator
that has VM 100 and container 200 running on pve-01). Prints one line per call with the fields
read from the answer; exits non-zero when proxmoxer raises.
"""
import sys
import time

from proxmoxer import ProxmoxAPI

host, port, user, token_name, secret = sys.argv[1:6]
px = ProxmoxAPI(host, port=int(port), user=user, token_name=token_name, token_value=secret, verify_ssl=False)
node = px.nodes("pve-01")


def wait(upid):
    """Polls the task like the Ansible modules do, until it stopped; returns its exit status."""
    while True:
        status = node.tasks(upid).status.get()
        if status["status"] == "stopped":
            return status["exitstatus"]
        time.sleep(0.1)


print("qemu index", ",".join(e["subdir"] for e in node.qemu(100).get()))
print("qemu status index", ",".join(e["subdir"] for e in node.qemu(100).status.get()))
print("lxc index", ",".join(e["subdir"] for e in node.lxc(200).get()))
print("lxc status index", ",".join(e["subdir"] for e in node.lxc(200).status.get()))
status = node.status.get()
print("node status", status["pveversion"], status["cpuinfo"]["cpus"], status["memory"]["total"], status["uptime"] > 0)
print("cluster status", [(e["type"], e["name"]) for e in px.cluster.status.get()])
print("qemu reboot", wait(node.qemu(100).status.reboot.post()))
print("lxc reboot", wait(node.lxc(200).status.reboot.post(timeout=30)))
print("cluster tasks", sorted((t["type"], t["user"], t.get("tokenid", "")) for t in px.cluster.tasks.get()))
