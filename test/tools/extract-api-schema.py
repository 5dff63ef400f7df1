#!/usr/bin/env python3
"""Extract the parameter schemas of the endpoints pve-gitops uses from Proxmox's apidata.json.

Usage: test/tools/extract-api-schema.py PATH/TO/apidata.json > src/core/proxmox-api-schema.json

Descriptions are dropped to keep the file small; everything validation needs stays.
"""
import json
import sys

ENDPOINTS = [
    ("/version", "GET"),
    ("/nodes", "GET"),
    ("/cluster/resources", "GET"),
    ("/cluster/nextid", "GET"),
    ("/access/permissions", "GET"),
    ("/cluster/status", "GET"),
    ("/cluster/tasks", "GET"),
    ("/nodes/{node}/status", "GET"),
]
for kind in ("qemu", "lxc"):
    base = "/nodes/{node}/" + kind
    ENDPOINTS += [
        (base, "GET"), (base, "POST"),
        (base + "/{vmid}", "DELETE"),
        (base + "/{vmid}/config", "GET"), (base + "/{vmid}/config", "PUT"),
        (base + "/{vmid}/pending", "GET"),
        (base + "/{vmid}/status/start", "POST"), (base + "/{vmid}/status/stop", "POST"),
        (base + "/{vmid}/status/shutdown", "POST"), (base + "/{vmid}/status/current", "GET"),
        (base + "/{vmid}/resize", "PUT"),
        (base + "/{vmid}", "GET"), (base + "/{vmid}/status", "GET"),
        (base + "/{vmid}/status/reboot", "POST"),
    ]
ENDPOINTS += [
    ("/nodes/{node}/qemu/{vmid}/config", "POST"),
    ("/nodes/{node}/qemu/{vmid}/move_disk", "POST"),
    ("/nodes/{node}/lxc/{vmid}/move_volume", "POST"),
    ("/nodes/{node}/qemu/{vmid}/clone", "POST"),
    ("/nodes/{node}/lxc/{vmid}/clone", "POST"),
    ("/nodes/{node}/qemu/{vmid}/template", "POST"),
    ("/nodes/{node}/lxc/{vmid}/template", "POST"),
    ("/nodes/{node}/qemu/{vmid}/cloudinit", "GET"),
    ("/nodes/{node}/qemu/{vmid}/cloudinit", "PUT"),
    ("/nodes/{node}/tasks", "GET"),
    ("/nodes/{node}/tasks/{upid}/status", "GET"),
    ("/nodes/{node}/tasks/{upid}/log", "GET"),
    ("/nodes/{node}/storage", "GET"),
    ("/nodes/{node}/storage/{storage}/content", "GET"),
    ("/nodes/{node}/network", "GET"),
    ("/pools", "GET"),
    ("/pools/{poolid}", "GET"),
    ("/pools", "POST"),
    ("/pools", "PUT"),
    ("/pools/{poolid}", "PUT"),
    ("/pools", "DELETE"),
    ("/pools/{poolid}", "DELETE"),
    ("/cluster/backup", "GET"),
    ("/cluster/backup", "POST"),
    ("/cluster/backup/{id}", "GET"),
    ("/cluster/backup/{id}", "PUT"),
    ("/cluster/backup/{id}", "DELETE"),
    ("/cluster/ha/resources", "GET"),
    ("/cluster/ha/resources", "POST"),
    ("/cluster/ha/resources/{sid}", "GET"),
    ("/cluster/ha/resources/{sid}", "PUT"),
    ("/cluster/ha/resources/{sid}", "DELETE"),
    # Guest snapshots (qemu-server `API2/Qemu.pm`, pve-container `API2/LXC/Snapshot.pm`), taken before risky changes.
] + [
    (f"/nodes/{{node}}/{kind}/{{vmid}}/snapshot{suffix}", method)
    for kind in ("qemu", "lxc")
    for suffix, method in (("", "GET"), ("", "POST"), ("/{snapname}", "DELETE"), ("/{snapname}/rollback", "POST"), ("/{snapname}/config", "GET"))
]
# The guest firewall (pve-firewall `API2/Firewall/VM.pm`, `Rules.pm`, `IPSet.pm`, `Aliases.pm`).
for kind in ("qemu", "lxc"):
    fw = "/nodes/{node}/" + kind + "/{vmid}/firewall"
    ENDPOINTS += [
        (fw + "/options", "GET"), (fw + "/options", "PUT"),
        (fw + "/rules", "GET"), (fw + "/rules", "POST"),
        (fw + "/rules/{pos}", "GET"), (fw + "/rules/{pos}", "PUT"), (fw + "/rules/{pos}", "DELETE"),
        (fw + "/ipset", "GET"), (fw + "/ipset", "POST"),
        (fw + "/ipset/{name}", "GET"), (fw + "/ipset/{name}", "POST"), (fw + "/ipset/{name}", "DELETE"),
        (fw + "/ipset/{name}/{cidr}", "GET"), (fw + "/ipset/{name}/{cidr}", "PUT"),
        (fw + "/ipset/{name}/{cidr}", "DELETE"),
        (fw + "/aliases", "GET"), (fw + "/aliases", "POST"),
        (fw + "/aliases/{name}", "GET"), (fw + "/aliases/{name}", "PUT"), (fw + "/aliases/{name}", "DELETE"),
    ]
# The datacenter's IPsets and aliases a guest's rule may name (`ClusterIPSetList`, `ClusterAliases`).
ENDPOINTS += [("/cluster/firewall/ipset", "GET"), ("/cluster/firewall/aliases", "GET")]

DROP = {"description", "verbose_description", "typetext", "format_description", "title", "renderer"}


def strip(value):
    if isinstance(value, dict):
        # Documentation strings go; a parameter that happens to be called `description` stays.
        return {k: strip(v) for k, v in value.items() if not (k in DROP and isinstance(v, str))}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def find(tree, path):
    for node in tree:
        if node["path"] == path:
            return node
        if path.startswith(node["path"] + "/") and "children" in node:
            found = find(node["children"], path)
            if found:
                return found
    return None


def main():
    data = json.load(open(sys.argv[1]))
    out = {}
    for path, method in ENDPOINTS:
        node = find(data, path)
        if node is None or method not in node.get("info", {}):
            sys.exit(f"missing {method} {path}")
        info = node["info"][method]
        out[f"{method} {path}"] = {
            "parameters": strip(info.get("parameters", {})),
            "protected": info.get("protected", 0),
            "returns": {"type": info.get("returns", {}).get("type")},
        }
    json.dump(out, sys.stdout, indent=None, sort_keys=True, separators=(",", ":"))
    sys.stdout.write("\n")


main()
