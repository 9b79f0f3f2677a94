"""The /metrics of annotated functions' replicas, appended to the gateway's own: a cluster's pod scrape, locally.

On a cluster Prometheus finds a function's pods by their annotations (`prometheus.io.scrape: "true"`,
`prometheus.io.port`, `prometheus.io.path`; faas-netes copies a function's annotations to its pods) and
scrapes each. The local runtime has no Prometheus of its own to do that, so its gateway does: at each
GET /metrics it asks every healthy replica of every function annotated `prometheus.io.scrape: "true"` for
`prometheus.io.path` (default /metrics; the port is each replica's own, standing for the pod's), at once
and within SCRAPE_TIMEOUT_S, and appends what they answer, each family once (the first HELP and TYPE, then
every replica's samples). A replica that does not answer in time is left out of that scrape. The runtime
knows nothing of what the families mean (the functions' own labels tell replicas apart).
"""

from __future__ import annotations

import asyncio

import httpx

SCRAPE, PATH = "prometheus.io.scrape", "prometheus.io.path"
SCRAPE_TIMEOUT_S = 2.0


async def scrape_targets(statuses: list[dict], replica_urls) -> list[str]:
    """The URLs to scrape: every replica of every function annotated for scraping."""
    targets = []
    for status in statuses:
        annotations = status.get("annotations") or {}
        if str(annotations.get(SCRAPE, "")).strip().lower() != "true":
            continue
        path = "/" + str(annotations.get(PATH) or "/metrics").lstrip("/")
        targets += [url.rstrip("/") + path for url in await replica_urls(status["name"])]
    return targets


async def _get(client: httpx.AsyncClient, url: str) -> str:
    try:
        response = await client.get(url, timeout=SCRAPE_TIMEOUT_S)
    except httpx.HTTPError:
        return ""
    return response.text if response.status_code == 200 else ""


async def scrape(client: httpx.AsyncClient, targets: list[str]) -> str:
    """The targets' expositions merged into one (each family once, its samples from every target)."""
    return merge(await asyncio.gather(*(_get(client, url) for url in targets)))


def merge(texts: list[str]) -> str:
    """Expositions in text format 0.0.4 as one: families in order of first appearance, HELP and TYPE once."""
    families: dict[str, dict] = {}
    for text in texts:
        family = None
        for line in text.splitlines():
            if line.startswith("# HELP ") or line.startswith("# TYPE "):
                parts = line.split(" ", 3)
                if len(parts) < 3:
                    continue
                family = families.setdefault(parts[2], {"help": None, "type": None, "samples": []})
                family["help" if parts[1] == "HELP" else "type"] = family["help" if parts[1] == "HELP" else "type"] \
                    or line
            elif line and not line.startswith("#"):
                if family is None:
                    family = families.setdefault(line.split("{")[0].split(" ")[0],
                                                 {"help": None, "type": None, "samples": []})
                family["samples"].append(line)
    lines = []
    for family in families.values():
        lines += [line for line in (family["help"], family["type"]) if line] + family["samples"]
    return "\n".join(lines) + ("\n" if lines else "")
