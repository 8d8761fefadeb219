"""Counts the global load instructions of a cubin's SASS by width, two ways.

    python3 loadwidths.py MODEL.cu MODEL.cubin

tec's CUDA emitter writes the stages that several share (a transformer's
layers) once, as device functions (backend/internal/dedup), so a count of
the cubin's instructions counts a layer's weight streams once and the code
each layer keeps inline (its RoPE, the grid barrier's polls) once per
layer. The second count weighs each stage function's loads by the calls
the .cu makes of it: the loads of the stages as they run, one pass over
the kernels' code, as a build written all inline would count them. Both
are static (no GPU): the share of loads that move 16 bytes (LDG.128 and
LDGSTS.128) is issue 25's measure of a load path at the hardware's width.
nvdisasm (the CUDA toolkit's) must be on PATH.
"""

import collections
import re
import subprocess
import sys

# nvdisasm's label of a function: a kernel's symbol, or an internal
# function's, $kernel$function (not a block's .L_x_N).
FUNCTION = re.compile(r"^\s*([A-Za-z_$][\w$]*):\s*$")
# A global load: LDG or LDGSTS (cp.async) with its modifiers, not
# LDGDEPBAR (cp.async's commit, which moves nothing).
LOAD = re.compile(r"\b(LDGSTS|LDG)(\.[A-Z0-9_]+)*\b")
# A stage function's definition and its calls in the .cu.
DEFINITION = re.compile(r"__noinline__ void (s_\w+)\(")
CALL = re.compile(r"^\s*(s_\w+)\(")
# A kernel's name, on the line after its __global__ and launch bounds.
KERNEL = re.compile(r"^(k_\w+)\(")


def loads_by_function(sass):
    """Returns {(kernel symbol, function symbol or None): Counter of load
    opcodes} for nvdisasm -c output, where an internal function's code
    follows the label $kernel$function: each kernel that calls one has its
    own copy."""
    out = collections.defaultdict(collections.Counter)
    at = None
    for line in sass.splitlines():
        m = FUNCTION.match(line)
        if m:
            parts = m.group(1).split("$")
            at = (parts[1], parts[2]) if len(parts) == 3 else (parts[0], None)
            continue
        m = LOAD.search(line)
        if m and at:
            out[at][m.group(0)] += 1
    return out


def stage_name(symbol, names):
    """Returns the stage function of names that symbol mangles, or None: a
    static function's mangled name ends a nested name with its length and
    name (_ZN41_INTERNAL_..._cu_<hash>27s_bottleneck_conv_bn_relu_3EPK6__half)."""
    for name in names:
        if f"{len(name)}{name}E" in symbol:
            return name
    return None


def calls(cu):
    """Returns the stage functions of a .cu and {(kernel, function): calls}:
    the calls each kernel (k_NAME) makes of each."""
    names = set(DEFINITION.findall(cu))
    out = collections.Counter()
    kernel = None
    for line in cu.splitlines():
        m = KERNEL.match(line)
        if m:
            kernel = m.group(1)
            continue
        m = CALL.match(line)
        if m and m.group(1) in names:
            out[(kernel, m.group(1))] += 1
    return names, out


def wide(op):
    return ".128" in op


def count(cu, sass):
    """Returns (wide, total) over the cubin's instructions and (wide, total)
    with each kernel's copy of a stage function counted once per call the
    kernel makes of it."""
    names, ncalls = calls(cu)
    flat = [0, 0]
    weighted = [0, 0]
    for (kernel, fn), ops in loads_by_function(sass).items():
        weight = 1
        stage = stage_name(fn, names) if fn else None
        if stage:
            weight = sum(n for (k, f), n in ncalls.items() if f == stage and k and kernel.startswith(f"_Z{len(k)}{k}"))
        for op, n in ops.items():
            flat[1] += n
            weighted[1] += n * weight
            if wide(op):
                flat[0] += n
                weighted[0] += n * weight
    return tuple(flat), tuple(weighted)


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: loadwidths.py MODEL.cu MODEL.cubin")
    with open(argv[1]) as f:
        cu = f.read()
    sass = subprocess.run(["nvdisasm", "-c", argv[2]], check=True, capture_output=True, text=True).stdout
    (fw, ft), (ww, wt) = count(cu, sass)
    print(f"instructions in the cubin: {fw} of {ft} global loads move 16 bytes ({100 * fw / max(ft, 1):.1f} %)")
    print(f"stages as they run (a stage function's loads once per call): {ww} of {wt} ({100 * ww / max(wt, 1):.1f} %)")


if __name__ == "__main__":
    main(sys.argv)
