"""A stand-in for a tec build's runner (bench/gpu/test_fake_gpu.sh): the
outputs of tec's reference evaluator ($FAKE_TEC run --device ref) on the
runner's feeds, at the build's precision and sizes, and a fixed --bench line;
with --stage-clock FILE, the stage clock's JSON with the segments the
build's .cu lists (tec_clock_kernels, tec_clock_stages), 1 us each.

usage: fake-runner.py BUILD_DIR [--inputs DIR] [--params DIR] [--outputs DIR] [--bench N] [--stage-clock FILE]
"""
import json, os, pathlib, re, subprocess, sys, tempfile
import numpy as np

build = pathlib.Path(sys.argv[1])
args = dict(zip(sys.argv[2::2], sys.argv[3::2]))
header = next(p for p in build.glob("*.h"))
text = header.read_text()
model = re.search(r"C interface to the model (\w+)", text).group(1)
sections = {}
role = None
for line in text.splitlines():
    m = re.match(r"^ \*\s+(Inputs|Params|Outputs):", line)
    if m:
        role = m.group(1)
        continue
    m = re.match(r"^ \*\s+\[\d+\] (\S+) ", line)
    if m and role:
        sections.setdefault(role, []).append(m.group(1))
    elif not line.startswith(" *"):
        role = None
size_dir = build.parent.name
model_dir = build.parent.parent
src = pathlib.Path(os.environ["FAKE_SRC"])
precision = build.name.split("-", 1)[1] if "-" in build.name else "f32"
defines = []
env = build / "bench.env"
if env.exists():
    kv = dict(re.findall(r'^(\w+)="?([^"\n]*)"?$', env.read_text(), re.M))
    defines = kv["DEFINES"].split() + ["-D", f"B={kv['B']}", "-D", f"T={kv['T']}"]
else:
    defines = re.search(r"^# tiny:(.*)$", src.read_text(), re.M).group(1).split()
with tempfile.TemporaryDirectory() as tmp:
    for kind, names, d in (("inputs", sections["Inputs"], args["--inputs"]), ("params", sections["Params"], args["--params"])):
        np.savez(f"{tmp}/{kind}.npz", **{n: np.load(f"{d}/{n}.npy") for n in names})
    cmd = [os.environ["FAKE_TEC"], "run", "--device", "ref", "--precision", precision, "--model", model, *defines,
           "--inputs", f"{tmp}/inputs.npz", "--params", f"{tmp}/params.npz", "--outputs", f"{tmp}/out.npz",
           "--max-time", "0", str(src)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"fake runner: {' '.join(cmd)}: {r.stderr}")
    out = np.load(f"{tmp}/out.npz")
    os.makedirs(args.get("--outputs", "."), exist_ok=True)
    for n in out.files:
        np.save(f"{args.get('--outputs', '.')}/{n}.npy", out[n])
if "--bench" in args:
    print("bench: median 0.5000 ms, min 0.4000 ms, max 0.6000 ms over %s runs (3 warm-up)" % args["--bench"])
if "--stage-clock" in args:
    cu = next(p for p in build.glob("*.cu") if p.name != "main.cu").read_text()
    kernels, stages = (json.loads("[" + re.search(r"tec_clock_%s\[\] = \{(.*)\};" % what, cu).group(1) + "]")
                       for what in ("kernels", "stages"))
    segments = [{"kernel": k, "stages": s, "us": 1.0, "passes": 1} for k, s in zip(kernels, stages)]
    pathlib.Path(args["--stage-clock"]).write_text(json.dumps({"runs": 5, "total_us": float(len(segments)),
                                                               "segments": segments}))
