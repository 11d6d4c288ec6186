# SPDX-License-Identifier: LGPL-2.1-or-later
"""A CPU cgroup per workspace, of equal weight, for the isolation profile's
cpugroups arms (README.md "Isolation").

Issue 21's cause on a small host is CPU: the heavy workspaces' daemons,
writers and loop workers fill the CPUs and every quiet save waits in the
run queue. Per-workspace cgroups with equal weight turn "every thread for
itself" into "every workspace for itself": a quiet workspace that wakes has
used little of its share and runs first. On a systemd host the agent puts
each daemon into its own scope (`workspace.resources.cpu_weight`,
agent/daemon/agent-cgroups.c); whether the agent's tools run in the same
workspace's cgroup is up to the harness that starts them. This module makes
the same shape by hand, so that it can be measured on a host without
systemd, including this one (cgroup v1 hybrid: the v1 `cpu` controller's
`cpu.shares` is the v1 form of `cpu.weight`).

Equal weights everywhere: the groups differ only in who is in them.
"""
import os

V2_ROOT = "/sys/fs/cgroup"
V1_ROOT = "/sys/fs/cgroup/cpu"


class Unsupported(Exception):
    pass


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


class CpuGroups:
    """Groups below one base cgroup named by `tag`. v2 when the unified
    hierarchy offers the cpu controller, else v1's cpu controller; raises
    Unsupported (with the reason) when neither exists."""

    def __init__(self, tag):
        ctl = os.path.join(V2_ROOT, "cgroup.controllers")
        if os.path.exists(ctl) and "cpu" in open(ctl).read().split():
            self.version, self.root = 2, V2_ROOT
        elif os.path.exists(os.path.join(V1_ROOT, "cpu.shares")):
            self.version, self.root = 1, V1_ROOT
        else:
            raise Unsupported("no cpu controller: neither cgroup v2 with 'cpu' nor v1's cpu hierarchy")
        self.base = os.path.join(self.root, tag)
        os.makedirs(self.base, exist_ok=True)
        if self.version == 2:
            # Both levels must hand the cpu controller down to their children.
            for d in (self.root, self.base):
                _write(os.path.join(d, "cgroup.subtree_control"), "+cpu")
        self.groups = {}

    def move(self, name, pid):
        """Moves process `pid` (all its threads) into group `name`, made on
        first use with the default (equal) weight."""
        g = self.groups.get(name)
        if g is None:
            g = os.path.join(self.base, name)
            os.makedirs(g, exist_ok=True)
            self.groups[name] = g
        _write(os.path.join(g, "cgroup.procs"), str(pid))

    def describe(self):
        weight = "cpu.weight 100" if self.version == 2 else "cpu.shares 1024"
        return f"cgroup v{self.version}, {len(self.groups)} groups below {self.base}, {weight} each"

    def close(self):
        """Moves every process left in a group back to the root and removes
        the groups (a cgroup with a member cannot be removed)."""
        for g in list(self.groups.values()) + [self.base]:
            try:
                with open(os.path.join(g, "cgroup.procs")) as f:
                    pids = f.read().split()
            except OSError:
                continue
            for pid in pids:
                try:
                    _write(os.path.join(self.root, "cgroup.procs"), pid)
                except OSError:
                    pass  # it exited meanwhile
        for g in list(self.groups.values()) + [self.base]:
            try:
                os.rmdir(g)
            except OSError:
                pass
        self.groups = {}
