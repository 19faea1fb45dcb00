#!/bin/sh
# k8s/check.sh: checks the Kubernetes manifests without a cluster.
#
#   k8s/check.sh [-v]
#
# 1. Every *.yaml under k8s/ parses (PyYAML), and every document is an
#    object with apiVersion and kind.
# 2. Every path a kustomization.yaml names exists: resources, components,
#    patches, generator files and env files. Inputs that are never
#    committed (secrets/*.env, redis/redis.env, problems.tar.gz) count when
#    their .example, or the script that makes them, is there.
# 3. docs/deploy.md's configuration reference names every variable the
#    services' config tables (and the sandbox's own lookups) read.
# 4. With kustomize (or kubectl) on PATH: every entry point (base,
#    overlays/*, workers/*, kafka, redis) renders, in a scratch copy where
#    the uncommitted inputs are made from the examples and problems/; and
#    the rendered objects agree with each other and with the services:
#    references to ConfigMaps and Secrets resolve in the same namespace;
#    every container has requests and a memory limit; every worker outlives
#    its KB_DRAIN_GRACE_S, carries the sandbox's security context and
#    takes KB_REDIS_URL from the Secret kb-redis-worker; the
#    gateway listens on all addresses and is probed on /health; and each
#    worker's KB_GPU has a kb.submissions.<gpu> topic with enough
#    partitions and a large enough max.message.bytes.
#
# Prints one line per failure and a closing "N passed, N failed" line.
# Exit status: 0 all passed, 1 a check failed, 77 PyYAML is missing (a
# CTest SKIP_RETURN_CODE; `apt-get install python3-yaml` provides it).
# Without kustomize or kubectl, step 4 is skipped with a note.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
if ! python3 -c 'import yaml' 2>/dev/null; then
	echo "k8s/check.sh: PyYAML is missing (apt-get install python3-yaml); skipped" >&2
	exit 77
fi

render=""
if command -v kustomize >/dev/null 2>&1; then
	render="kustomize build"
elif command -v kubectl >/dev/null 2>&1 && kubectl kustomize --help >/dev/null 2>&1; then
	render="kubectl kustomize"
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/kb-k8s-check.XXXXXX")
trap 'rm -rf "$scratch"' EXIT INT TERM
# The scratch copy keeps k8s/ next to a problems/ tree, as in the repo.
mkdir -p "$scratch/repo"
cp -R "$here" "$scratch/repo/k8s"
if [ -d "$here/../problems" ]; then
	cp -R "$here/../problems" "$scratch/repo/problems"
fi

# Not exec: the trap above must still remove the scratch copy.
rc=0
KB_CHECK_RENDER=$render KB_CHECK_SCRATCH=$scratch/repo/k8s \
	python3 - "$here" "$@" <<'PY' || rc=$?
import os
import subprocess
import sys

import yaml

root = sys.argv[1]
verbose = "-v" in sys.argv[2:]
render = os.environ.get("KB_CHECK_RENDER", "")
scratch = os.environ["KB_CHECK_SCRATCH"]

passed = 0
failed = 0


def ok(what):
    global passed
    passed += 1
    if verbose:
        print("ok   " + what)


def fail(what):
    global failed
    failed += 1
    print("FAIL " + what)


def note(what):
    print("note " + what)


def rel(path):
    return os.path.relpath(path, root)


# --- 1. every YAML file parses -------------------------------------------
yaml_files = []
for d, dirs, files in os.walk(root):
    dirs.sort()
    for f in sorted(files):
        if f.endswith((".yaml", ".yml")):
            yaml_files.append(os.path.join(d, f))

for path in yaml_files:
    try:
        with open(path) as fh:
            docs = [x for x in yaml.safe_load_all(fh) if x is not None]
    except yaml.YAMLError as e:
        fail("%s: does not parse: %s" % (rel(path), str(e).replace("\n", " ")))
        continue
    bad = [i for i, x in enumerate(docs)
           if not isinstance(x, dict) or "kind" not in x or "apiVersion" not in x]
    if not docs:
        fail("%s: no documents" % rel(path))
    elif bad:
        fail("%s: document %d lacks apiVersion or kind" % (rel(path), bad[0] + 1))
    else:
        ok("%s parses (%d documents)" % (rel(path), len(docs)))

# --- 2. every path a kustomization names exists ----------------------------
# Inputs that are not committed, and what stands for them.
MAKERS = {"problems.tar.gz": "pack.sh"}


def input_present(path):
    if os.path.exists(path):
        return True
    if os.path.exists(path + ".example"):
        return True
    maker = MAKERS.get(os.path.basename(path))
    return bool(maker) and os.path.exists(os.path.join(os.path.dirname(path), maker))


kustomizations = [p for p in yaml_files if os.path.basename(p) == "kustomization.yaml"]
for kpath in kustomizations:
    kdir = os.path.dirname(kpath)
    with open(kpath) as fh:
        k = yaml.safe_load(fh) or {}
    if k.get("kind") not in ("Kustomization", "Component"):
        fail("%s: kind is %r, not Kustomization or Component" % (rel(kpath), k.get("kind")))
    refs = []
    for key in ("resources", "components"):
        for r in k.get(key) or []:
            refs.append((key, r, "dir-or-file"))
    for p in k.get("patches") or []:
        if isinstance(p, dict) and "path" in p:
            refs.append(("patches", p["path"], "file"))
    for key in ("configMapGenerator", "secretGenerator"):
        for g in k.get(key) or []:
            for f in g.get("files") or []:
                refs.append((key, f.split("=", 1)[-1], "input"))
            for f in g.get("envs") or []:
                refs.append((key, f, "input"))
    for key, r, how in refs:
        path = os.path.normpath(os.path.join(kdir, r))
        if how == "input":
            good = input_present(path)
        elif how == "file":
            good = os.path.isfile(path)
        else:
            good = os.path.isfile(path) or os.path.isfile(os.path.join(path, "kustomization.yaml"))
        if good:
            ok("%s: %s %s" % (rel(kpath), key, r))
        else:
            fail("%s: %s entry %s does not exist" % (rel(kpath), key, r))

# --- 3. docs/deploy.md documents every setting the services read ----------
import re

repo = os.path.dirname(root)
settings = {}
for sub in ("gateway", "worker", "ranker", "devbroker", "services"):
    d = os.path.join(repo, sub)
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if not f.endswith(".c"):
            continue
        with open(os.path.join(d, f), errors="replace") as fh:
            text = fh.read()
        for m in re.finditer(r'\{\s*"((?:KB|DISCORD)_[A-Z0-9_]+)",\s*KB_CFG_', text):
            settings.setdefault(m.group(1), sub + "/" + f)
        for m in re.finditer(r'(?:getenv|env_int)\("(KB_[A-Z0-9_]+)"', text):
            settings.setdefault(m.group(1), sub + "/" + f)
deploy = os.path.join(repo, "docs", "deploy.md")
if os.path.exists(deploy):
    with open(deploy) as fh:
        documented = set(re.findall(r"`((?:KB|DISCORD)_[A-Z0-9_]+)`", fh.read()))
    for name, where in sorted(settings.items()):
        if name in documented:
            ok("docs/deploy.md documents %s" % name)
        else:
            fail("docs/deploy.md does not document %s (read in %s)" % (name, where))
else:
    fail("docs/deploy.md is missing")

# --- 4. render and check what the cluster would get -------------------------
if not render:
    note("neither kustomize nor kubectl found: rendering checks skipped")
    print("k8s/check.sh: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)

# Make the uncommitted inputs in the scratch copy.
for d, dirs, files in os.walk(scratch):
    for f in files:
        if f.endswith(".env.example"):
            target = os.path.join(d, f[: -len(".example")])
            if not os.path.exists(target):
                with open(os.path.join(d, f)) as src, open(target, "w") as dst:
                    dst.write(src.read())
pack = os.path.join(scratch, "components", "problems-configmap", "pack.sh")
if os.path.exists(pack):
    r = subprocess.run(["sh", pack], capture_output=True, text=True)
    if r.returncode != 0:
        fail("pack.sh: " + (r.stderr.strip() or "exit %d" % r.returncode))


def build(entry):
    r = subprocess.run(render.split() + [os.path.join(scratch, entry)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("%s does not render: %s" % (entry, r.stderr.strip().replace("\n", " ")))
        return None
    docs = [x for x in yaml.safe_load_all(r.stdout) if x]
    ok("%s renders (%d objects)" % (entry, len(docs)))
    return docs


entries = ["base", "kafka", "redis"]
for group in ("overlays", "workers"):
    gdir = os.path.join(root, group)
    for name in sorted(os.listdir(gdir)) if os.path.isdir(gdir) else []:
        if os.path.isfile(os.path.join(gdir, name, "kustomization.yaml")) and name != "gpu":
            entries.append(group + "/" + name)
rendered = {e: build(e) for e in entries}

CAPS = {"CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID", "SETPCAP", "KILL",
        "SYS_ADMIN", "NET_ADMIN"}


def external(entry, kind, name):
    """What a partial entry may reference without defining: the base's
    Secrets come from an overlay, a worker type's ConfigMap from the base.
    An overlay must be complete."""
    if entry == "base":
        return kind == "Secret" and name in ("kb-redis", "kb-gateway-secrets",
                                             "kb-redis-worker")
    if entry.startswith("workers/"):
        return (kind == "ConfigMap" and name == "kb-worker") or \
            (kind == "Secret" and name == "kb-redis-worker")
    return False


def pod_spec(o):
    if o.get("kind") in ("Deployment", "DaemonSet", "StatefulSet"):
        return o["spec"]["template"]["spec"]
    if o.get("kind") == "Job":
        return o["spec"]["template"]["spec"]
    return None


def env_of(container, objs, ns):
    """The container's effective environment: envFrom ConfigMaps, then env."""
    env = {}
    for ef in container.get("envFrom") or []:
        name = (ef.get("configMapRef") or {}).get("name")
        for o in objs:
            if (o.get("kind") == "ConfigMap" and o["metadata"]["name"] == name
                    and o["metadata"].get("namespace") == ns):
                env.update(o.get("data") or {})
    for e in container.get("env") or []:
        if "value" in e:
            env[e["name"]] = e["value"]
    return env


def check_workloads(entry, objs):
    have = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objs}
    gpus = {}
    for o in objs:
        spec = pod_spec(o)
        if spec is None:
            continue
        ns = o["metadata"].get("namespace")
        what = "%s: %s %s/%s" % (entry, o["kind"], ns, o["metadata"]["name"])
        # References resolve in the pod's namespace.
        for c in spec.get("initContainers", []) + spec.get("containers", []):
            names = []
            for ef in c.get("envFrom") or []:
                if "configMapRef" in ef:
                    names.append(("ConfigMap", ef["configMapRef"]["name"]))
                if "secretRef" in ef:
                    names.append(("Secret", ef["secretRef"]["name"]))
            for e in c.get("env") or []:
                vf = e.get("valueFrom") or {}
                if "secretKeyRef" in vf:
                    names.append(("Secret", vf["secretKeyRef"]["name"]))
                if "configMapKeyRef" in vf:
                    names.append(("ConfigMap", vf["configMapKeyRef"]["name"]))
            for kind, name in names:
                if (kind, ns, name) in have:
                    ok("%s: %s %s resolves" % (what, kind, name))
                elif external(entry, kind, name):
                    ok("%s: %s %s comes from elsewhere" % (what, kind, name))
                else:
                    fail("%s: container %s refers to %s %s, not in namespace %s"
                         % (what, c["name"], kind, name, ns))
            res = c.get("resources") or {}
            if res.get("requests") and (res.get("limits") or {}).get("memory"):
                ok("%s: container %s has requests and a memory limit" % (what, c["name"]))
            else:
                fail("%s: container %s lacks requests or a memory limit" % (what, c["name"]))
        for v in spec.get("volumes") or []:
            if "configMap" in v:
                name = v["configMap"]["name"]
                if ("ConfigMap", ns, name) in have:
                    ok("%s: volume ConfigMap %s resolves" % (what, name))
                else:
                    fail("%s: volume %s refers to ConfigMap %s, not in namespace %s"
                         % (what, v["name"], name, ns))
        for c in spec.get("containers", []):
            env = env_of(c, objs, ns)
            grace = spec.get("terminationGracePeriodSeconds", 30)
            if c["name"] == "worker":
                sc = c.get("securityContext") or {}
                caps = set((sc.get("capabilities") or {}).get("add") or [])
                drops = (sc.get("capabilities") or {}).get("drop") or []
                if caps == CAPS and drops == ["ALL"]:
                    ok("%s: the sandbox's capabilities" % what)
                else:
                    fail("%s: capabilities add %s drop %s; the sandbox needs add %s drop [ALL]"
                         % (what, sorted(caps), drops, sorted(CAPS)))
                for prof in ("seccompProfile", "appArmorProfile"):
                    if (sc.get(prof) or {}).get("type") == "Unconfined":
                        ok("%s: %s Unconfined" % (what, prof))
                    else:
                        fail("%s: %s must be Unconfined for the sandbox" % (what, prof))
                if sc.get("runAsUser") == 0 and not sc.get("privileged"):
                    ok("%s: root, not privileged" % what)
                else:
                    fail("%s: the worker runs as root (runAsUser 0), not privileged" % what)
                mounts = {m["mountPath"] for m in c.get("volumeMounts") or []}
                hostpaths = {v["name"]: v["hostPath"]["path"] for v in spec.get("volumes") or []
                             if "hostPath" in v}
                slot = [m for m in c.get("volumeMounts") or []
                        if m["mountPath"] == "/run/kb-sandbox"
                        and hostpaths.get(m["name"]) == "/run/kb-sandbox"]
                if slot:
                    ok("%s: /run/kb-sandbox shared with the node" % what)
                else:
                    fail("%s: /run/kb-sandbox must be the node's (hostPath), so uid slots are node-wide" % what)
                workdir = env.get("KB_WORKDIR", "/tmp/kb-worker")
                if any(workdir == m or workdir.startswith(m.rstrip("/") + "/") for m in mounts):
                    ok("%s: KB_WORKDIR %s is a volume" % (what, workdir))
                else:
                    fail("%s: KB_WORKDIR %s is not on a mounted volume" % (what, workdir))
                # Leases and task files live in Redis: the workers' own
                # user (k8s/redis), never the services' password.
                ref = [e for e in c.get("env") or [] if e.get("name") == "KB_REDIS_URL"]
                key = ((ref[0].get("valueFrom") or {}).get("secretKeyRef") or {}) if ref else {}
                if key.get("name") == "kb-redis-worker" and key.get("key") == "KB_REDIS_URL":
                    ok("%s: KB_REDIS_URL from the Secret kb-redis-worker" % what)
                else:
                    fail("%s: KB_REDIS_URL must come from the Secret kb-redis-worker "
                         "(the kb-worker user), not %s" % (what, ref or "nowhere"))
                drain = int(env.get("KB_DRAIN_GRACE_S", "20"))
                if grace > drain:
                    ok("%s: grace %ss > KB_DRAIN_GRACE_S %s" % (what, grace, drain))
                else:
                    fail("%s: terminationGracePeriodSeconds %s must exceed KB_DRAIN_GRACE_S %s"
                         % (what, grace, drain))
                gpu = env.get("KB_GPU", "CPU")
                lim = (c.get("resources") or {}).get("limits") or {}
                # AMD types (MI...) take the AMD device plugin's resource,
                # every other GPU NVIDIA's; a worker holds exactly one GPU.
                amd = gpu.upper().startswith("MI")
                res = "amd.com/gpu" if amd else "nvidia.com/gpu"
                other = "nvidia.com/gpu" if amd else "amd.com/gpu"
                ngpu, nother = int(lim.get(res, 0)), int(lim.get(other, 0))
                if gpu.upper() == "CPU":
                    ngpu, nother = ngpu + nother, 0
                if nother:
                    fail("%s: KB_GPU %s must not ask for %s" % (what, gpu, other))
                elif gpu.upper() == "CPU" and ngpu == 0 or gpu.upper() != "CPU" and ngpu == 1:
                    ok("%s: KB_GPU %s with %d GPU(s) (%s)" % (what, gpu, ngpu, res))
                else:
                    fail("%s: KB_GPU %s needs %s, has %s %d"
                         % (what, gpu, "no GPU" if gpu.upper() == "CPU" else "exactly one GPU",
                            res, ngpu))
                count = o["spec"].get("replicas", 1) if o["kind"] == "Deployment" else None
                gpus.setdefault(gpu, []).append((what, count))
            if c["name"] == "gateway":
                addr = env.get("KB_HTTP_ADDR", "127.0.0.1")
                if addr in ("0.0.0.0", "::"):
                    ok("%s: listens on %s" % (what, addr))
                else:
                    fail("%s: KB_HTTP_ADDR %s: the Service cannot reach it" % (what, addr))
                port = int(env.get("KB_HTTP_PORT", "8000"))
                cports = {p.get("containerPort") for p in c.get("ports") or []}
                if port in cports:
                    ok("%s: port %d declared" % (what, port))
                else:
                    fail("%s: KB_HTTP_PORT %d is not a containerPort %s" % (what, port, sorted(cports)))
                for probe in ("readinessProbe", "livenessProbe"):
                    path = ((c.get(probe) or {}).get("httpGet") or {}).get("path")
                    if path == "/health":
                        ok("%s: %s on /health" % (what, probe))
                    else:
                        fail("%s: %s should GET /health, has %r" % (what, probe, path))
                pre = ((c.get("lifecycle") or {}).get("preStop") or {}).get("exec", {}).get("command", [])
                sleep = int(pre[1]) if len(pre) == 2 and pre[0] == "sleep" else 0
                need = sleep + int(env.get("KB_DRAIN_S", "20"))
                if grace > need:
                    ok("%s: grace %ss > preStop + KB_DRAIN_S (%ss)" % (what, grace, need))
                else:
                    fail("%s: terminationGracePeriodSeconds %s must exceed preStop + KB_DRAIN_S (%s)"
                         % (what, grace, need))
            if spec.get("enableServiceLinks") is False:
                ok("%s: no service links" % what)
            else:
                fail("%s: enableServiceLinks must be false (service links inject *_PORT "
                     "variables that the services' strict config would read)" % what)
    return gpus


def topics_of(objs):
    return {o["spec"].get("topicName", o["metadata"]["name"]): o["spec"]
            for o in objs or [] if o.get("kind") == "KafkaTopic"}


def gateway_max_file(objs):
    for o in objs:
        if o.get("kind") == "ConfigMap" and o["metadata"]["name"].startswith("kb-gateway"):
            return int((o.get("data") or {}).get("KB_MAX_FILE_BYTES", 1048576))
    return 1048576


topics = topics_of(rendered.get("kafka"))
for entry, objs in rendered.items():
    if not objs or entry in ("kafka", "redis"):
        continue
    gpus = check_workloads(entry, objs)
    if not entry.startswith("overlays/"):
        continue
    # The topics k8s/kafka creates must serve this installation.
    need_bytes = 2 * gateway_max_file(objs) + (1 << 20)
    for name in ["kb.results", "kb.dlq"] + ["kb.submissions." + g for g in sorted(gpus)]:
        t = topics.get(name)
        if not t:
            fail("%s: no KafkaTopic %s in k8s/kafka" % (entry, name))
            continue
        ok("%s: topic %s exists" % (entry, name))
        mmb = int((t.get("config") or {}).get("max.message.bytes", 1048588))
        if mmb >= need_bytes:
            ok("%s: %s max.message.bytes %d" % (entry, name, mmb))
        else:
            fail("%s: %s max.message.bytes %d < %d (two files of KB_MAX_FILE_BYTES and the task)"
                 % (entry, name, mmb, need_bytes))
    for gpu, workloads in sorted(gpus.items()):
        t = topics.get("kb.submissions." + gpu)
        counts = [n for _, n in workloads]
        if not t or None in counts:
            continue  # DaemonSets: as many as nodes; nothing to compare
        if t["partitions"] >= sum(counts):
            ok("%s: kb.submissions.%s has %d partitions for %d workers"
               % (entry, gpu, t["partitions"], sum(counts)))
        else:
            fail("%s: kb.submissions.%s has %d partitions for %d workers (extra workers idle)"
                 % (entry, gpu, t["partitions"], sum(counts)))
    rankers = [o["spec"].get("replicas", 1) for o in objs
               if o.get("kind") == "Deployment" and o["metadata"]["name"] == "kb-ranker"]
    if rankers and topics.get("kb.results", {}).get("partitions", 0) < rankers[0]:
        fail("%s: kb.results has fewer partitions than rankers" % entry)
    # Boards whose device has no worker here wait forever: say so.
    served = set(gpus)
    probdir = os.path.join(os.path.dirname(scratch), "problems")
    for setfile in ("cpu.yaml", "pmpp.yaml", "pmpp_py.yaml"):
        p = os.path.join(probdir, setfile)
        if not os.path.exists(p):
            continue
        with open(p) as fh:
            wanted = {g for b in yaml.safe_load(fh) or [] for g in b.get("gpus") or []}
        missing = sorted(wanted - served)
        if missing:
            note("%s: problems/%s has boards for %s, which no worker here serves"
                 % (entry, setfile, ", ".join(missing)))

print("k8s/check.sh: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
PY
exit "$rc"
