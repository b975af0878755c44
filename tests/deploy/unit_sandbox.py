#!/usr/bin/python3
"""Runs a command under the seccomp filters a systemd unit would put on it.

    /usr/bin/python3 tests/deploy/unit_sandbox.py UNIT_FILE -- COMMAND [ARGS...]

No systemd runs as PID 1 on the development machines or in CI, so the unit of
the Debian package is never started for real; this applies the parts of its
sandbox that decide whether the exporter can work at all, the way systemd's
seccomp-util.c does, and execs COMMAND:
- SystemCallFilter= (an allow list of syscall groups, expanded from
  `systemd-analyze syscall-filter`) with SystemCallErrorNumber= as the answer
  to everything else;
- MemoryDenyWriteExecute=yes: no mmap both writable and executable, no
  mprotect/pkey_mprotect to executable, no shmat with SHM_EXEC;
- RestrictAddressFamilies=: socket() of any other family fails with EAFNOSUPPORT;
- NoNewPrivileges=yes.
A syscall the filter refuses fails with the unit's errno, as it would under
systemd. The file system and user parts (ProtectSystem, DynamicUser...) are
not applied. Needs libseccomp's Python binding (Debian: python3-seccomp).
"""
import errno
import os
import re
import socket
import subprocess
import sys

import seccomp

PROT_WRITE, PROT_EXEC, SHM_EXEC = 0x2, 0x4, 0o100000
FAMILIES = {name: getattr(socket, name) for name in dir(socket) if name.startswith("AF_")}


def unit_values(path):
    values = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"^([A-Za-z]+)=(.*)$", line.strip())
            if m:
                values.setdefault(m.group(1), []).append(m.group(2).strip())
    return values


def syscall_groups():
    """Every group of `systemd-analyze syscall-filter`: {"@name": [members]}."""
    out = subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True,
                         text=True, check=True).stdout
    groups, current = {}, None
    for line in out.splitlines():
        if line.startswith("@"):
            current = groups.setdefault(line.strip(), [])
        elif current is not None and line.startswith("    ") and not line.strip().startswith("#"):
            current.append(line.strip())
        elif not line.strip() or line.startswith("#"):
            current = None
    return groups


def expand(names, groups, seen=None):
    seen = set() if seen is None else seen
    calls = set()
    for name in names:
        if name.startswith("@"):
            if name not in seen:
                seen.add(name)
                calls |= expand(groups[name], groups, seen)
        else:
            calls.add(name)
    return calls


def allow_list(values):
    """SystemCallFilter lines: the union of allow lists minus `~` deny lists."""
    groups, allowed, denied = syscall_groups(), set(), set()
    for line in values.get("SystemCallFilter", []):
        deny = line.startswith("~")
        names = expand(line.lstrip("~").split(), groups)
        (denied if deny else allowed).update(names)
    return allowed - denied


def load_call_filter(values):
    error = getattr(errno, values.get("SystemCallErrorNumber", ["EPERM"])[-1])
    calls = allow_list(values)
    if not calls:
        return
    f = seccomp.SyscallFilter(defaction=seccomp.ERRNO(error))
    for call in sorted(calls):
        try:
            f.add_rule(seccomp.ALLOW, call)
        except (RuntimeError, ValueError):
            pass  # not a syscall of this architecture (e.g. mmap2, riscv_*)
    f.load()


def load_write_execute_filter(values):
    if values.get("MemoryDenyWriteExecute", ["no"])[-1] != "yes":
        return
    f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    wx = PROT_WRITE | PROT_EXEC
    f.add_rule(seccomp.ERRNO(errno.EPERM), "mmap", seccomp.Arg(2, seccomp.MASKED_EQ, wx, wx))
    for call in ("mprotect", "pkey_mprotect"):
        f.add_rule(seccomp.ERRNO(errno.EPERM), call,
                   seccomp.Arg(2, seccomp.MASKED_EQ, PROT_EXEC, PROT_EXEC))
    f.add_rule(seccomp.ERRNO(errno.EPERM), "shmat",
               seccomp.Arg(2, seccomp.MASKED_EQ, SHM_EXEC, SHM_EXEC))
    f.load()


def load_family_filter(values):
    families = " ".join(values.get("RestrictAddressFamilies", [])).split()
    if not families:
        return
    allowed = {FAMILIES[name] for name in families}
    f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for family in range(max(allowed) + 1):
        if family not in allowed:
            f.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), "socket",
                       seccomp.Arg(0, seccomp.EQ, family))
    f.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), "socket",
               seccomp.Arg(0, seccomp.GT, max(allowed)))
    f.load()


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__.split("\n\n")[1])
    values = unit_values(sys.argv[1])
    # libseccomp sets no_new_privs before loading. The allow list goes last: it
    # refuses seccomp() itself, as it does under systemd.
    load_write_execute_filter(values)
    load_family_filter(values)
    load_call_filter(values)
    os.execv(sys.argv[3], sys.argv[3:])


if __name__ == "__main__":
    main()
