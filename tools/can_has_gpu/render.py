"""Text output of can-has-gpu: tables and sentences (the JSON output is the same data, unformatted).

service.py words the sentences that are part of a result's data (the explainer's diagnosis, a claim's GPU); the rest
is here. What the scheduler said is evidence: a line of its own, never part of a sentence.
"""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.dra.diagnosis import OUTSIDE_SEATS
from ansible_collections.dralab.workshop.plugins.module_utils.values import format_age
from ansible_collections.dralab.workshop.plugins.module_utils.seat.lease import describe_left

from .occupancy import OLD_OCCUPANCY


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(v)) for v in column) for column in zip(headers, *rows)]
    lines = ["  ".join(str(v).ljust(w) for v, w in zip(line, widths)).rstrip() for line in [headers, *rows]]
    return "\n".join(lines)


def share_text(share: dict | None) -> str:
    """' (a share: compute 25, memory 20Gi)' of a device shared by consumable capacity, else ''."""
    return " (a share: " + ", ".join(f"{k} {v}" for k, v in sorted(share.items())) + ")" if share else ""


def devices_text(devices: list[dict]) -> str:
    return ", ".join(f"{d['device']} on {d['node']}{share_text(d.get('share'))}" for d in devices) or "-"


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
            if c.get("sentence"):
                out.append(f"  {diagnosis_text(c['name'], c)}")
            for d in c["devices"]:
                if d.get("data"):
                    data = ", ".join(f"{k}={v}" for k, v in sorted(d["data"].items()))
                    out.append(f"  {c['name']} {d['device']}: {data}")
    elif not report.get("line"):
        out.append(f"You hold no claims in {report['namespace']}. Reserve a GPU with: can-has-gpu reserve")
    out.extend(line_lines(report.get("line") or []))
    out.extend(pods_waiting_lines(report.get("pods_waiting") or []))
    free = report["free"]
    if free is None:
        out.append("Free GPUs in the lab: unknown (the lab's occupancy board is not published: "
                   "is dralab-lease-reaper running? tell the instructor).")
    else:
        out.append(free_text(free))
    return "\n".join(out)


def free_text(free: dict) -> str:
    """'Free GPUs in the lab: 0 of 24; 24 in use outside the seats.' (per node when some are free; an older reaper's
    occupancy, which counts the seats' GPUs only, said so)."""
    per_node = ", ".join(f"{node} {count}" for node, count in sorted(free["by_node"].items()))
    text = f"Free GPUs in the lab: {free['free']} of {free['published']}" + (f" ({per_node})" if per_node else "")
    if not free.get("outside_counted", True):
        return f"{text}. {OLD_OCCUPANCY}"
    return text + (f"; {free['outside']} {OUTSIDE_SEATS}." if free.get("outside") else "")


def reserved_text(result: dict) -> str:
    devices = devices_text(result["devices"])
    memory = ", ".join(sorted({d["memory"] for d in result["devices"] if d.get("memory")}))
    return (f"Reserved {result['claim']}: {devices}" + (f" ({memory})" if memory else "")
            + f", lease until {result['lease_expires']} ({describe_left(result['lease_left_seconds'])}).\n"
            f"Use it: can-has-gpu run -- busybox:1.37 sh -c 'env | grep ^GPU_DEVICE_'\n"
            f"Give it back: can-has-gpu release {result['claim']}")


def evidence(result: dict) -> list[str]:
    return [f"scheduler said: {result['scheduler_said']}"] if result.get("scheduler_said") else []


def diagnosis_text(name: str | None, result: dict) -> str:
    """'gpu-x7k2p never fits as asked: SENTENCE' (the headline of the diagnosis, when there is one)."""
    head = " ".join(filter(None, [name, result.get("headline")]))
    return f"{head}: {result['sentence']}" if head else result["sentence"]


def line_lines(places: list[dict]) -> list[str]:
    """'In line for gpu-ab12c: You are 5th in line for gpu.example.com; about 12m, when user17's lease ends.'"""
    return [f"In line for {p['claim']}: {p['sentence']} (can-has-gpu leave gives it up)" for p in places]


def left_text(result: dict) -> str:
    if not result["left"]:
        return "You are in no line: nothing to leave."
    return f"You left the line: {', '.join(result['left'])} deleted."


def pods_waiting_lines(findings: list[dict]) -> list[str]:
    return [f["sentence"][:1].upper() + f["sentence"][1:] for f in findings]


def no_gpu_text(result: dict) -> str:
    if result.get("verdict") == "never_fits":
        lines = [f"This request never fits the lab as asked: {result['sentence']}"]
        lines += [result["hint"]] if result.get("hint") else []
        return "\n".join(lines + ["Nothing was made for you; waiting would not help."])
    if result.get("reason") == "in_line" or (result.get("verdict") == "waits" and result.get("claim") is None):
        return f"No GPU for you: {result['sentence']}"
    return "\n".join([f"No GPU for you right now: {result['sentence']}", *evidence(result),
                      "Nothing is held for you: reserve again when a GPU is free (can-has-gpu status shows the free "
                      "GPUs)."])


def why_text(answer: dict) -> str:
    """An allocated claim's sentence names it already; a waiting claim's diagnosis follows its name, what the
    scheduler said on a line of its own; then the seat's pods that wait for a claim that does not exist."""
    waiting = pods_waiting_lines(answer.get("pods_waiting") or [])
    if answer["allocated"]:
        return "\n".join([answer["sentence"], *waiting])
    if answer.get("claim") is None:  # no claim, only pods that wait for one
        return "\n".join(waiting)
    return "\n".join([diagnosis_text(answer["claim"], answer), *evidence(answer), *waiting])


def released_text(result: dict) -> str:
    if not result["released"]:
        return "You hold no claims: nothing to release."
    return "\n".join(f"Released {r['claim']}" + (f" ({', '.join(r['devices'])})" if r["devices"] else "")
                     + (f"; deleted pod(s) {', '.join(r['pods'])}" if r["pods"] else "") + "."
                     for r in result["released"])


def run_ended_text(result: dict) -> str:
    return f"[pod {result['pod']} on {result['node']} exited with {result['exit_code']}]\n"
