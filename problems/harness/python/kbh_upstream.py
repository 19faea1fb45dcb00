"""An upstream KernelBot Python problem as our problem.py (a sealed task).

The worker's loader (services/kb_seal.h) rewrites an upstream task whose
eval.py is a known standard version: eval.py is dropped, this harness's
files are added and this module becomes the task's problem.py. It imports
the task's own reference.py (generate_input, ref_kernel,
check_implementation) in the trusted parent, so upstream's reference and
check run here while only custom_kernel runs in the confined child.

What it reproduces of upstream's eval.py (problems/*/eval.py of
gpu-mode/reference-kernels, the versions kb_seal.c names):
 * case keys and values as that version parses them, by the rule the
   loader copies in beside this module as kbh_upstream_rules.py (KEY and
   WORD, regular expressions; BOOLS: "true"/"false" become booleans): an
   integer when the value reads as one, else the word; the keys are
   generate_input's parameters that KEY matches, those with defaults
   optional;
 * the case seed combined with POPCORN_SEED (our kbh_report does it with
   upstream's rule) and a fresh seed for every call after a case's first
   (upstream's leaderboard recheck), passed in place of the case's seed;
 * custom_kernel gets a copy of data it may write into (upstream's data
   often holds the output buffer: INPUTS_WRITABLE), and the check runs
   check_implementation on a pristine clone of the inputs, both of its
   return styles accepted: (ok, message), or a message that is empty
   (or an empty list) when the output is right.

generate_input hard-codes device="cuda" upstream; one that takes a device
parameter (our CPU fixtures) gets the harness's device, and tensors made
elsewhere are moved to it. data goes to custom_kernel as generate_input
made it (DATA_AS_IS): a bare tensor, tuples, lists and dicts of tensors
and plain constants, each tensor in its own layout where that layout is
dense (permuted views, as upstream's nvfp4 inputs); anything else (other
objects, slices) is our failure (110), named in the message.
"""
import inspect
import re

import torch

import kbh_slots
import kbh_upstream_rules as _rules
import reference as _ref

# Upstream tasks may write into data (the output buffer is part of it):
# the harness restages the inputs every call and checks on its own copy.
INPUTS_WRITABLE = True
# Their checks compare the result with ref_kernel's across dtypes
# (prefixsum_py's reference is float64, its submissions' float32): a
# result that ref_kernel's dtype holds exactly is taken, converted.
OUTPUTS_PROMOTE = True
# data is staged as generate_input made it (kbh_slots.flatten): upstream's
# eval.py passes it on as it is.
DATA_AS_IS = True

_HARNESS_KEYS = ("seed", "min_runs", "max_runs", "max_ms")
_VALUE = re.compile(r"\s*(?:(?P<int>[+-]?[0-9]+)|(?P<word>%s))\s*"
                    % _rules.WORD)


def _int_or_word(v):
    """The version's value rule (kbh_upstream_rules): an integer is an
    int, a word the string (with BOOLS, "true" and "false" booleans)."""
    m = _VALUE.fullmatch(v)
    if not m:
        raise ValueError("not an integer or a word")
    if m.group("int") is not None:
        return int(m.group("int"))
    w = m.group("word")
    if _rules.BOOLS and w in ("true", "false"):
        return w == "true"
    return w


def _params():
    sig = inspect.signature(_ref.generate_input)
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise RuntimeError("generate_input takes *args or **kwargs: "
                               "its case keys cannot be known")
    return sig.parameters


_PARAMS = _params()
_TAKES_SEED = "seed" in _PARAMS
_TAKES_DEVICE = "device" in _PARAMS
# A parameter whose name the version's case lines cannot spell is no key
# (a case naming it is refused, as upstream's eval.py refuses the line).
KEYS = {k: _int_or_word for k in _PARAMS
        if k not in _HARNESS_KEYS and k != "device" and
        re.fullmatch(_rules.KEY, k)}
KEYS_OPTIONAL = tuple(k for k in KEYS
                      if _PARAMS[k].default is not inspect.Parameter.empty)


def _clone(x):
    if isinstance(x, torch.Tensor):
        return x.clone()
    if isinstance(x, (tuple, list)):
        return type(x)(_clone(v) for v in x)
    if isinstance(x, dict):
        return {k: _clone(v) for k, v in x.items()}
    return x


def _to(x, device):
    """x with every tensor on device (layouts kept: .to() preserves a
    dense layout)."""
    if isinstance(x, torch.Tensor):
        return x if x.device.type == torch.device(device).type \
            else x.to(device)
    if type(x) in (tuple, list):
        return type(x)(_to(v, device) for v in x)
    if type(x) is dict:
        return {k: _to(v, device) for k, v in x.items()}
    return x


def _call_generate(case, seed, device):
    kw = dict(case)
    if _TAKES_SEED:
        kw["seed"] = seed
    if _TAKES_DEVICE:
        kw["device"] = str(device)
    # A reference that draws from the global generator gets fresh data too.
    torch.manual_seed(seed)
    return _to(_ref.generate_input(**kw), device)


def setup(case, device_kind):
    """One dry call of ref_kernel on the case's own input: the shapes and
    dtypes custom_kernel must return."""
    data = _call_generate(case, 0, device_kind)
    try:
        _, tensors, _ = kbh_slots.flatten(torch, data)
        for t in tensors:
            kbh_slots.layout(t)
    except ValueError as e:     # our failure (110), not a bad case (113)
        raise RuntimeError("generate_input's data cannot be staged by the "
                           "sealed harness: %s" % e)
    out = _ref.ref_kernel(_clone(data))
    outs = out if isinstance(out, (tuple, list)) else (out,)
    if not outs or not all(isinstance(t, torch.Tensor) for t in outs):
        raise RuntimeError("ref_kernel must return a tensor or a tuple of "
                           "tensors")
    return {"case": dict(case),
            "outputs": [(tuple(t.shape), t.dtype) for t in outs],
            "in_bytes": sum(t.numel() * t.element_size() for t in tensors)}


def generate(args, seed, device):
    return _call_generate(args["case"], seed, device)


def outputs(args):
    return list(args["outputs"])


def reference(args, inputs):
    # check_implementation runs ref_kernel, which may write into data (the
    # output buffer): it gets a clone, never the harness's pristine copy.
    return _clone(inputs)


def check(args, inputs, expected, output):
    r = _ref.check_implementation(expected, output)
    if isinstance(r, tuple):
        ok, msg = r
        return bool(ok), str(msg or "")
    if isinstance(r, list):
        r = " ".join(str(m) for m in r)
    return not r, str(r or "")


def cost(args):
    # A plain lower bound: every tensor of data is read or written at
    # least once (the output buffer, when data holds it, included); no
    # flops bound, since the adapter knows nothing of the arithmetic.
    return {"bytes": args["in_bytes"], "ops": "none", "min_work": 0.0}
