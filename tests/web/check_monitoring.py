#!/usr/bin/env python3
"""Checks k8s/monitoring without Grafana or Prometheus.

1. grafana-dashboard.json follows Grafana's dashboard model: uid, title,
   an integer schemaVersion, templating.list, and panels each with a
   unique integer id, a type, a title and a gridPos inside the 24-column
   grid; every panel but a row has targets, each with a refId unique in
   its panel and a non-empty PromQL expr.
2. alerts.yaml is a PrometheusRule whose groups' rules each have alert,
   expr, labels.severity and annotations.summary, and a "for" that is a
   duration when present.
3. Every kb_* metric named in a dashboard expr or an alert expr is one the
   services register (read from their C sources), so a renamed metric
   cannot leave a silent panel or an alert that never fires; parentheses,
   brackets and braces of every expr balance.
4. podmonitors.yaml and prometheus-scrape.yaml parse, and the scrape jobs
   name the gateway, the ranker and the workers.

Prints one line per failure and "N passed, N failed"; exits 1 on a
failure, 77 when PyYAML is missing (a CTest skip).
"""
import glob
import json
import os
import re
import sys

try:
    import yaml
except ImportError:
    print("check_monitoring: PyYAML is missing (apt-get install python3-yaml)")
    sys.exit(77)

repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
mon = os.path.join(repo, "k8s", "monitoring")
passed = failed = 0


def ok(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL " + what)
    return cond


# Metric names the services register: kb_metrics_counter/gauge/histogram(m, "name", ...).
known = {"up"}
reg = re.compile(r'kb_metrics_(counter|gauge|histogram)\(\s*[\w>.-]+,\s*"(kb_[a-z0-9_]+)"', re.S)
for path in glob.glob(os.path.join(repo, "**", "*.c"), recursive=True):
    if "/build" in path or "/tests/" in path:
        continue
    with open(path, errors="replace") as fh:
        for m in reg.finditer(fh.read()):
            name = m.group(2)
            known.add(name)
            if m.group(1) == "histogram":
                known.update(name + s for s in ("_bucket", "_sum", "_count"))
ok(len(known) > 20, "found the services' metric names (%d)" % len(known))
# Base units, as Prometheus' naming rules ask (seconds, bytes, hertz, ...).
for name in sorted(known):
    ok(not re.search(r"_(mhz|khz|ghz|ms|milliseconds|us|ns|kb|mb|gb|kib|mib|gib|percent)(_total)?$", name),
       "%s: not a base unit" % name)


def check_expr(expr, where):
    ok(isinstance(expr, str) and expr.strip() != "", "%s: empty expr" % where)
    if not isinstance(expr, str):
        return
    for o, c in ("()", "[]", "{}"):
        ok(expr.count(o) == expr.count(c), "%s: unbalanced %s%s in %s" % (where, o, c, expr))
    # Label values and matchers are quoted: drop them before looking for names.
    bare = re.sub(r'"[^"]*"', '""', expr)
    for name in re.findall(r"\b(kb_[a-z0-9_]+)\b", bare):
        ok(name in known, "%s: metric %s is not registered by any service" % (where, name))


# 1. The dashboard.
with open(os.path.join(mon, "grafana-dashboard.json")) as fh:
    dash = json.load(fh)
ok(isinstance(dash.get("uid"), str) and dash["uid"], "dashboard has a uid")
ok(isinstance(dash.get("title"), str) and dash["title"], "dashboard has a title")
ok(isinstance(dash.get("schemaVersion"), int) and dash["schemaVersion"] >= 30,
   "dashboard schemaVersion is an integer >= 30")
ok(isinstance(dash.get("templating", {}).get("list"), list), "dashboard has templating.list")
names = {v.get("name") for v in dash.get("templating", {}).get("list", [])}
ok({"datasource", "gpu"} <= names, "dashboard variables datasource and gpu (%s)" % sorted(names))
panels = dash.get("panels")
ok(isinstance(panels, list) and len(panels) >= 10, "dashboard has panels")
ids = set()
for p in panels or []:
    where = "panel %r" % p.get("title")
    ok(isinstance(p.get("id"), int) and p["id"] not in ids, where + ": unique integer id")
    ids.add(p.get("id"))
    ok(isinstance(p.get("type"), str) and p["type"], where + ": type")
    ok(isinstance(p.get("title"), str) and p["title"], where + ": title")
    g = p.get("gridPos", {})
    ok(all(isinstance(g.get(k), int) for k in "hwxy") and g["x"] + g["w"] <= 24 and g["w"] > 0
       and g["h"] > 0, where + ": gridPos inside 24 columns %r" % g)
    if p.get("type") == "row":
        continue
    targets = p.get("targets")
    ok(isinstance(targets, list) and targets, where + ": targets")
    refs = set()
    for t in targets or []:
        ok(t.get("refId") and t["refId"] not in refs, where + ": unique refId")
        refs.add(t.get("refId"))
        check_expr(t.get("expr"), where)

# 2. The alert rules.
with open(os.path.join(mon, "alerts.yaml")) as fh:
    docs = [d for d in yaml.safe_load_all(fh) if d]
ok(len(docs) == 1 and docs[0].get("kind") == "PrometheusRule"
   and docs[0].get("apiVersion", "").startswith("monitoring.coreos.com/"),
   "alerts.yaml is one PrometheusRule")
alerts = set()
for group in docs[0].get("spec", {}).get("groups", []) if docs else []:
    ok(group.get("name") and isinstance(group.get("rules"), list), "group has a name and rules")
    for r in group.get("rules", []):
        where = "alert %r" % r.get("alert")
        ok(isinstance(r.get("alert"), str) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", r["alert"]),
           where + ": a valid name")
        alerts.add(r.get("alert"))
        check_expr(r.get("expr"), where)
        ok(r.get("labels", {}).get("severity") in ("critical", "warning", "info"), where + ": severity")
        ok(r.get("annotations", {}).get("summary"), where + ": summary")
        if "for" in r:
            ok(re.match(r"^\d+[smhd]$", str(r["for"])), where + ": for is a duration")
for must in ("KBQueueBackingUp", "KBWorkerNotServing", "KBInfraErrorRate"):
    ok(must in alerts, "alert %s is defined" % must)

# 4. Scrape configuration.
with open(os.path.join(mon, "podmonitors.yaml")) as fh:
    pms = [d for d in yaml.safe_load_all(fh) if d]
ok({d["metadata"]["name"] for d in pms} == {"kb-gateway", "kb-ranker", "kb-worker"},
   "PodMonitors for gateway, ranker and workers")
with open(os.path.join(mon, "prometheus-scrape.yaml")) as fh:
    cm = yaml.safe_load(fh)
scrape = yaml.safe_load(cm["data"]["prometheus.yml"])
ok({j["job_name"] for j in scrape["scrape_configs"]} == {"kb-gateway", "kb-ranker", "kb-worker"},
   "plain scrape jobs for gateway, ranker and workers")

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
