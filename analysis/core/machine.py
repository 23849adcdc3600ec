"""What the machine was and what state it was in, in words, from env.json: the facts that
shape results (`machine_facts`, which the report's *The machine* lists and compare sets side
by side) and whether the runs ran on the tuned machine (`machine_state`)."""

from __future__ import annotations

from analysis.core.units import size_text


def machine_facts(env: dict) -> dict[str, str]:
    """The facts that shape results, as short texts (also what compare sets side by side)."""
    host, kernel = env.get("host", {}), env.get("kernel", {})
    storage, fs, thp = env.get("storage", {}), env.get("filesystem", {}), env.get("thp", {})
    virt = env.get("virtualization", {})
    lb = env.get("loadbench", {})
    return {
        "cpu": f"{host.get('cpu_model', '?')}, {host.get('cores', '?')} cores",
        "memory": f"{size_text(host.get('memory_bytes'), 'unknown')}, swap "
                  f"{size_text(env.get('memory', {}).get('swap_total_bytes'), 'unknown')}",
        "virtualization": ("unknown" if virt.get("hypervisor_flag") is None else
                           "yes (hypervisor flag)" if virt.get("hypervisor_flag") else "no")
                          + ("; free memory handed back to the host (virtio-balloon free page "
                             "reporting)" if virt.get("free_page_reporting") else ""),
        "kernel": str(kernel.get("release", "?")),
        "storage": f"{storage.get('device', '?')} ({storage.get('driver', '?')}, model "
                   f"{storage.get('model') or '?'}, rotational {storage.get('rotational')}, "
                   f"scheduler {storage.get('scheduler', '?')}, read-ahead "
                   f"{storage.get('read_ahead_kb', '?')} KiB)",
        "filesystem": f"{fs.get('type', '?')} on {fs.get('source', '?')} "
                      f"({fs.get('mount_options', '')})",
        "thp": f"enabled {thp.get('enabled', '?')}, defrag {thp.get('defrag', '?')}",
        "loadbench": f"{lb.get('version', '?')} ({lb.get('commit', '?')}), root: "
                     f"{env.get('root')}",
        "state": machine_state(env),
    }


def machine_state(env: dict) -> str:
    """Whether the runs ran on the tuned machine (env.json `system`: `loadbench system tune`, or
    the experiment key `[system] tune = true`), with a warning and the reasons when not."""
    system = env.get("system", {})
    if not system:
        return "not recorded (an env.json from before loadbench recorded the machine's state)"
    tune = system.get("tune") or {}
    untuned = [s for s in env.get("sessions", []) if s.get("system_tuned") is False]
    if system.get("tuned") and not untuned:
        reporting = {"off": "held off", "absent": "absent from this kernel"}.get(
            system.get("page_reporting"), "kept on, by choice")
        damon = {"off": "; DAMON's pageout stopped", "absent": ""}.get(
            system.get("damon_pageout"), "")
        return f"tuned{' by ' + tune['by'] if tune.get('by') else ''}: free page reporting " \
               f"{reporting}{damon}"
    why = "; ".join(system.get("not_tuned_because", [])) or \
        f"{len(untuned)} of the sessions ran on the machine untuned"
    return f"**WARNING: not the tuned state**: {why} (`loadbench system tune`, or the " \
           f"experiment key `[system] tune = true`, tunes it)"
