#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks the built HIP expert kernels' device code for one AMD GPU arch.

    hip_isa.py BUILD_DIR ARCH [--llvm-bin DIR] [--table FILE]

For the layer's HIP instantiation objects of the 16-bit and e4m3 storage
types (BUILD_DIR/src/.../KokkosMoE_Layer_HIP_{bfloat16,float16,float8_e4m3}
.cpp.o), unbundles the ARCH device code object and, for each expert kernel
(GateUpKernel, DownKernel), reads from the code object's metadata the VGPR,
AGPR and SGPR counts, the spills and the private (scratch) segment, and from
its disassembly the MFMA instructions and the private-memory accesses among
them (from its first MFMA to its last: the multiply loop). Fails (exit 1)
when a kernel has no MFMA instruction, spills VGPRs (to scratch memory;
SGPRs spill into VGPR lanes, counted but allowed), or touches private
memory in that loop (the private segment outside it holds Kokkos' team
scratch allocator, whose address is taken); prints one line
per kernel with the occupancy its registers allow (waves per SIMD: 512
registers a lane on CDNA2/3, VGPRs and AGPRs from one file, in granules of
8; at most 8). The kernels' LDS is dynamic (Kokkos team scratch) and not in
the metadata. --table writes the lines as a Markdown table.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

STORAGE = ("bfloat16", "float16", "float8_e4m3")
KERNELS = {"12GateUpKernel": "gate_up", "10DownKernel": "down"}
SIZES = {"0": "large", "1": "medium", "2": "small"}


def tool(name, llvm_bin):
    dirs = [llvm_bin] if llvm_bin else []
    dirs += sorted(glob.glob("/usr/lib/llvm-*/bin"), reverse=True)
    dirs += ["/opt/rocm/llvm/bin", "/usr/lib/rocm/llvm/bin"]
    for d in dirs:
        p = os.path.join(d, name)
        if d and os.access(p, os.X_OK):
            return p
    p = shutil.which(name)
    if p:
        return p
    sys.exit(f"hip_isa: {name} not found (give --llvm-bin)")


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def device_object(obj, arch, objcopy, bundler, tmp):
    """The ARCH code object inside obj's .hip_fatbin section."""
    fatbin = os.path.join(tmp, "fatbin")
    run(objcopy, f"--dump-section=.hip_fatbin={fatbin}", obj, os.path.join(tmp, "host.o"))
    targets = run(bundler, "--list", "--type=o", f"--input={fatbin}").split()
    target = next((t for t in targets if t.endswith("-" + arch) or t.endswith("-" + arch + ":")
                   or re.search(r"--%s(:|$)" % re.escape(arch), t)), None)
    if target is None:
        sys.exit(f"hip_isa: {obj} holds no {arch} code (targets: {' '.join(targets)})")
    out = os.path.join(tmp, "device.o")
    run(bundler, "--unbundle", "--type=o", f"--input={fatbin}", f"--targets={target}",
        f"--output={out}")
    return out


def parse_kernels(notes):
    """A list of dicts, one per kernel of amdhsa.kernels (fields in any order)."""
    out, current = [], None
    in_kernels = False
    for line in notes.splitlines():
        if re.match(r"\s*amdhsa\.kernels:", line):
            in_kernels = True
            continue
        if in_kernels and re.match(r"\s*amdhsa\.\w+:", line):
            in_kernels = False
        if not in_kernels:
            continue
        m = re.match(r"(\s*)(- )?\.(\w+):\s*(.*)$", line)
        if not m:
            continue
        indent = len(m.group(1))
        if m.group(2) and indent <= 2:
            current = {}
            out.append(current)
        if current is not None and indent <= 4:
            current.setdefault(m.group(3), m.group(4).strip())
    return out


PRIVATE = re.compile(r"\b(scratch_(load|store)|buffer_(load|store))\w*")


def hot_loops(disassembly):
    """kernel symbol -> (v_mfma instructions, private-memory accesses from
    its first v_mfma to its last: spills in the multiply loop)."""
    bodies, name = {}, None
    for line in disassembly.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            name = m.group(1)
            bodies[name] = []
        elif name:
            bodies[name].append(line)
    out = {}
    for name, lines in bodies.items():
        at = [i for i, line in enumerate(lines) if re.search(r"\bv_mfma_", line)]
        spills = sum(1 for line in lines[at[0]:at[-1]] if PRIVATE.search(line)) if at else 0
        out[name] = (len(at), spills)
    return out


def occupancy(vgprs):
    granule = (vgprs + 7) // 8 * 8
    return min(8, 512 // max(granule, 8))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("arch")
    ap.add_argument("--llvm-bin")
    ap.add_argument("--table")
    args = ap.parse_args()
    bundler = tool("clang-offload-bundler", args.llvm_bin)
    objcopy = tool("llvm-objcopy", args.llvm_bin)
    readelf = tool("llvm-readelf", args.llvm_bin)
    objdump = tool("llvm-objdump", args.llvm_bin)
    cxxfilt = tool("llvm-cxxfilt", args.llvm_bin)
    rows, failures = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for storage in STORAGE:
            objs = glob.glob(os.path.join(args.build, "src", "**",
                                          f"KokkosMoE_Layer_HIP_{storage}.cpp.o"), recursive=True)
            if not objs:
                failures.append(f"no HIP object for {storage} under {args.build}")
                continue
            dev = device_object(objs[0], args.arch, objcopy, bundler, tmp)
            kernels = parse_kernels(run(readelf, "--notes", dev))
            loops = hot_loops(run(objdump, "-d", dev))
            found = 0
            for k in kernels:
                name = k.get("name", "")
                which = next((v for key, v in KERNELS.items() if key in name), None)
                if which is None:
                    continue
                size = re.search(r"(?:GateUp|Down)Kernel<[^<>]*?TileSize\)(\d)",
                                 run(cxxfilt, name))
                shape = SIZES.get(size.group(1), "?") if size else "?"
                found += 1
                symbol = k.get("symbol", name + ".kd").removesuffix(".kd")
                n_mfma, loop_spills = loops.get(symbol, loops.get(name, (0, 0)))
                vgpr = int(k.get("vgpr_count", 0))
                agpr = int(k.get("agpr_count", 0))
                sgpr = int(k.get("sgpr_count", 0))
                scratch = int(k.get("private_segment_fixed_size", 0))
                # SGPRs spill into VGPR lanes (v_writelane), VGPRs into
                # scratch memory: only the latter fails.
                spills = int(k.get("vgpr_spill_count", 0))
                sgpr_spills = int(k.get("sgpr_spill_count", 0))
                row = (storage, which, shape, vgpr, agpr, sgpr, sgpr_spills, spills, scratch,
                       n_mfma, loop_spills, occupancy(vgpr))
                rows.append(row)
                what = f"{storage} {which} ({shape})"
                if n_mfma == 0:
                    failures.append(f"{what}: no MFMA instruction")
                if spills or loop_spills:
                    failures.append(f"{what}: {spills} VGPRs spilled, {loop_spills} "
                                    "private-memory accesses among its MFMA instructions")
            if found == 0:
                failures.append(f"{storage}: no expert kernel in the {args.arch} code")
    header = ("storage", "kernel", "tiles", "VGPRs", "AGPRs", "SGPRs", "SGPR spills",
              "VGPR spills", "private B", "MFMA", "loop private", "waves/SIMD")
    print(f"{args.arch}:")
    print("  " + " ".join(f"{h:>10}" for h in header))
    for r in rows:
        print("  " + " ".join(f"{str(v):>10}" for v in r))
    if args.table:
        with open(args.table, "w") as f:
            f.write("| " + " | ".join(header) + " |\n")
            f.write("|" + "---|" * len(header) + "\n")
            for r in rows:
                f.write("| " + " | ".join(str(v) for v in r) + " |\n")
    for msg in failures:
        print(f"hip_isa {args.arch}: {msg}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
