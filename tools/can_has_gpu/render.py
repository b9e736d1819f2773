"""Text output of can-has-gpu: tables and sentences (the JSON output is the same data, unformatted).

service.py words the sentences that are part of a result's data (the explainer's, a claim's GPU); the rest is here.
"""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.values import format_age
from ansible_collections.dralab.workshop.plugins.module_utils.seat.lease import describe_left


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(v)) for v in column) for column in zip(headers, *rows)]
    lines = ["  ".join(str(v).ljust(w) for v, w in zip(line, widths)).rstrip() for line in [headers, *rows]]
    return "\n".join(lines)


def devices_text(devices: list[dict]) -> str:
    return ", ".join(f"{d['device']} on {d['node']}" for d in devices) or "-"


def status_text(report: dict) -> str:
    out = []
    claims = report["claims"]
    if claims:
        rows = []
        for c in claims:
            rows.append([c["name"], c["state"], ", ".join(d["device"] for d in c["devices"]) or "-",
                         ", ".join(sorted({d["node"] for d in c["devices"]})) or "-",
                         format_age(c["age_seconds"]) if c["age_seconds"] is not None else "-",
                         describe_left(c["lease_left_seconds"]), ", ".join(c["pods"]) or "-"])
        out.append(table(["CLAIM", "STATE", "DEVICE", "NODE", "AGE", "LEASE LEFT", "PODS"], rows))
        for c in claims:
            for d in c["devices"]:
                if d.get("data"):
                    data = ", ".join(f"{k}={v}" for k, v in sorted(d["data"].items()))
                    out.append(f"  {c['name']} {d['device']}: {data}")
    else:
        out.append(f"You hold no claims in {report['namespace']}. Reserve a GPU with: can-has-gpu reserve")
    free = report["free"]
    if free is None:
        out.append("Free GPUs in the lab: unknown (the lab's occupancy board is not published: "
                   "is dralab-lease-reaper running? tell the instructor).")
    else:
        per_node = ", ".join(f"{node} {count}" for node, count in sorted(free["by_node"].items()))
        out.append(f"Free GPUs in the lab: {free['free']} of {free['published']}" + (f" ({per_node})" if per_node
                                                                                     else ""))
    return "\n".join(out)


def reserved_text(result: dict) -> str:
    devices = devices_text(result["devices"])
    memory = ", ".join(sorted({d["memory"] for d in result["devices"] if d.get("memory")}))
    return (f"Reserved {result['claim']}: {devices}" + (f" ({memory})" if memory else "")
            + f", lease until {result['lease_expires']} ({describe_left(result['lease_left_seconds'])}).\n"
            f"Use it: can-has-gpu run -- busybox:1.37 sh -c 'env | grep ^GPU_DEVICE_'\n"
            f"Give it back: can-has-gpu release {result['claim']}")


def no_gpu_text(result: dict) -> str:
    return (f"No GPU for you right now: {result['sentence']}\nNothing is held for you; try again later "
            "(can-has-gpu status shows the free GPUs).")


def why_text(answer: dict) -> str:
    """An allocated claim's sentence names it already; a waiting claim's is the explainer's, after its name."""
    return answer["sentence"] if answer["allocated"] else f"{answer['claim']}: {answer['sentence']}"


def released_text(result: dict) -> str:
    if not result["released"]:
        return "You hold no claims: nothing to release."
    return "\n".join(f"Released {r['claim']}" + (f" ({', '.join(r['devices'])})" if r["devices"] else "")
                     + (f"; deleted pod(s) {', '.join(r['pods'])}" if r["pods"] else "") + "."
                     for r in result["released"])


def run_ended_text(result: dict) -> str:
    return f"[pod {result['pod']} on {result['node']} exited with {result['exit_code']}]\n"
